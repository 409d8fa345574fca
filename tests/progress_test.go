package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// greetRelease is the path of examples/greet, whose program needs
// python3: without it the test is skipped, except in CI.
func greetRelease(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("examples/greet needs python3 (%v): .ci/run installs it", err)
		}
		t.Skipf("examples/greet needs python3: %v", err)
	}
	rel, err := filepath.Abs(filepath.Join("..", "examples", "greet"))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestGreetProgressOverMCP is the progress example of docs/extensions.md
// end to end: the real examples/greet release, installed pinned and
// exposed by a profile, called as an MCP tool through a real
// `rukh mcp` process by the go-sdk client with a progress token. The
// greet program sends one progress frame per greeting before its report;
// each must arrive as exactly one notifications/progress with the call's
// token, progress = done, total = times and message "greeting", and the
// result must be the greeting text. Through rukhd too (forEachHost): the
// daemon sends each frame back as a Progress event.
func TestGreetProgressOverMCP(t *testing.T) {
	rel := greetRelease(t)
	forEachHost(t, func(t *testing.T, h *testHost) {
		dir := testhome.TempDir(t)
		home := filepath.Join(dir, "home")
		a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
		testhome.Apply(t, a, `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["acme.greet/*"],"task":"agent"},
			"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"},
			         "agent":{"commands":["acme.*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"}}}`)
		h.serve(t, home)

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		notes := make(chan *sdk.ProgressNotificationParams, 64)
		client := sdk.NewClient(&sdk.Implementation{Name: "progress-test", Version: "1"}, &sdk.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				notes <- req.Params
			},
		})
		cmd := exec.Command(h.Rukh, "mcp", "--log-file", filepath.Join(dir, "mcp.log"))
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()

		listing, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var tool string
		for _, tl := range listing.Tools {
			if matches(tl.Name, "acme.greet/hello") {
				if tool != "" {
					t.Fatalf("two tools for acme.greet/hello: %s and %s", tool, tl.Name)
				}
				tool = tl.Name
			}
		}
		if tool == "" {
			t.Fatalf("no tool for acme.greet/hello in %d tools", len(listing.Tools))
		}

		// Each call's notifications were written before its response, and the
		// client handles notifications in order, so once the second call's
		// notification has arrived, any stray one of the first would have too.
		for _, tc := range []struct {
			token     string
			arguments map[string]any
			text      string
			times     int
		}{
			{"greet-ada", map[string]any{"name": "Ada", "times": 3}, "hello, Ada\nhello, Ada\nhello, Ada\n", 3},
			{"greet-shout", map[string]any{"name": "Grace", "shout": true}, "HELLO, GRACE!\n", 1},
		} {
			params := &sdk.CallToolParams{Name: tool, Arguments: tc.arguments}
			params.SetProgressToken(tc.token)
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatalf("%s: %v", tc.token, err)
			}
			checkGreetResult(t, tc.token, res, tc.text)
			for i := 1; i <= tc.times; i++ {
				var n *sdk.ProgressNotificationParams
				select {
				case n = <-notes:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: %d of %d progress notifications arrived", tc.token, i-1, tc.times)
				}
				if n.ProgressToken != tc.token || n.Progress != float64(i) || n.Total != float64(tc.times) || n.Message != "greeting" {
					got, _ := json.Marshal(n)
					t.Fatalf("%s: notification %d is %s; want token %q, progress %d, total %d, message \"greeting\"",
						tc.token, i, got, tc.token, i, tc.times)
				}
			}
		}
		select {
		case n := <-notes:
			got, _ := json.Marshal(n)
			t.Fatalf("a progress notification more than the greetings: %s", got)
		case <-time.After(300 * time.Millisecond):
		}
	})
}

// checkGreetResult requires a succeeded envelope whose text result is
// text, the same in structuredContent and the first content block.
func checkGreetResult(t *testing.T, call string, res *sdk.CallToolResult, text string) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		InvocationID  string          `json:"invocationId"`
		Outcome       string          `json:"outcome"`
		Reason        string          `json:"reason"`
		CommandResult json.RawMessage `json:"commandResult"`
		Effects       json.RawMessage `json:"effects"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", call, raw, err)
	}
	want, _ := json.Marshal(map[string]string{"kind": "text", "text": text})
	if res.IsError || env.Outcome != "succeeded" || env.Reason != "" || env.Effects != nil ||
		string(env.CommandResult) != string(want) || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(env.InvocationID) {
		t.Fatalf("%s: isError %v, structuredContent %s; want succeeded with commandResult %s", call, res.IsError, raw, want)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", call)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	var block any
	if !ok || json.Unmarshal([]byte(tc.Text), &block) != nil || !reflect.DeepEqual(block, res.StructuredContent) {
		t.Fatalf("%s: the first content block is not the envelope: %#v", call, res.Content[0])
	}
}

// matches reports whether name is the tool name of identity: tool names
// begin with the identity's slug ('.' and '/' as '_'), as in tests/mcpdemo.
func matches(name, identity string) bool {
	slug := []byte(identity)
	for i, c := range slug {
		if c == '.' || c == '/' {
			slug[i] = '_'
		}
	}
	return len(name) > len(slug) && name[:len(slug)] == string(slug)
}

// TestGreetDocIsTheExample keeps the sh example of docs/extensions.md
// the real program: the block after "In POSIX sh, with python3" must be
// examples/greet/bin/greet byte for byte.
func TestGreetDocIsTheExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "extensions.md"))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile(filepath.Join("..", "examples", "greet", "bin", "greet"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## In POSIX sh, with python3\n")
	if !ok {
		t.Fatal(`docs/extensions.md has no section "In POSIX sh, with python3"`)
	}
	_, block, ok := strings.Cut(section, "\n```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```\n")
	}
	if !ok {
		t.Fatal("the section has no sh block")
	}
	if block+"\n" != string(prog) {
		t.Fatalf("the sh block of docs/extensions.md is not examples/greet/bin/greet:\n%s", block)
	}
}
