package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

const reportText = `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"hi\\n"}}\n' "$RUKH_IPC_TOKEN" >&3`

// home installs one pinned release with n eligible commands (c0 echoes a
// structured result, the others a text one) and exposes the package.
func home(t *testing.T, n int, task string) (string, *admin.Admin) {
	t.Helper()
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "src")
	var cmds []string
	for i := range n {
		cmds = append(cmds, fmt.Sprintf(`{"id":"c%d","path":["t","c%d"],"summary":"Command %d",
			"inputs":[{"id":"count","type":"integer","minimum":1,"maximum":5,"default":1},{"id":"env","type":"string","enum":["stage","prod"],"default":"stage"}],
			"execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},
			"access":[{"action":"deploy.read","resource":"env:{env}"}],"effects":{"class":"read"}}`, i, i, i))
	}
	write(t, filepath.Join(rel, "bin", "ok"), "#!/bin/sh\n"+reportText+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.tools","version":"1.0.0","publisher":"test","commands":[`+strings.Join(cmds, ",")+`]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(dir, "data"), rel)
	apply(t, a, task, "team")
	return dir, a
}

func apply(t *testing.T, a *admin.Admin, commands, namespace string) {
	t.Helper()
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"` + namespace + `","cli":{"task":"owner"},"mcp":{"expose":["test.tools/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["` + commands + `"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host",
		                  "allow":[{"action":"deploy.read","resource":"env:stage"}]}}}`)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// connect serves dir's data over an in-memory transport to a go-sdk
// client, which speaks the 2026-07-28 protocol.
func connect(t *testing.T, dir string) *sdk.ClientSession {
	t.Helper()
	return connectWith(t, dir, nil, nil)
}

// connectWith is connect with the client's and its session's options.
func connectWith(t *testing.T, dir string, opts *sdk.ClientOptions, sessOpts *sdk.ClientSessionOptions) *sdk.ClientSession {
	t.Helper()
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	return connectTo(t, srv, nil, opts, sessOpts)
}

// connectTo connects a go-sdk client to a new session of srv over an
// in-memory transport, which wrap, when given, wraps on the client's side;
// both end when t does.
func connectTo(t *testing.T, srv *mcp.Server, wrap func(sdk.Transport) sdk.Transport, opts *sdk.ClientOptions, sessOpts *sdk.ClientSessionOptions) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	var transport sdk.Transport = ct
	if wrap != nil {
		transport = wrap(ct)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, transport, sessOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listAll(t *testing.T, cs *sdk.ClientSession) (names []string, pages int) {
	t.Helper()
	cursor := ""
	for {
		res, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if res.TTLMs != 0 || res.CacheScope != "private" {
			t.Errorf("ttlMs %d cacheScope %q", res.TTLMs, res.CacheScope)
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			return names, pages
		}
		cursor = res.NextCursor
	}
}

func envelopeOf(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &fromText); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromText, env) {
		t.Errorf("the text block %v differs from structuredContent %v", fromText, env)
	}
	return env
}

func TestListPagesAndCall(t *testing.T) {
	dir, _ := home(t, 40, "test.*/*")
	cs := connect(t, dir)
	names, pages := listAll(t, cs)
	if len(names) != 40 || pages != 2 {
		t.Fatalf("%d tools in %d pages, want 40 in 2", len(names), pages)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("not in name order: %s, %s", names[i-1], names[i])
		}
	}

	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[0], Arguments: map[string]any{"count": 2}})
	if err != nil {
		t.Fatal(err)
	}
	env := envelopeOf(t, res)
	if res.IsError || env["outcome"] != "succeeded" || env["commandResult"].(map[string]any)["text"] != "hi\n" {
		t.Errorf("call: isError %v envelope %v", res.IsError, env)
	}
}

func TestRefusalsAreResults(t *testing.T) {
	dir, _ := home(t, 1, "test.*/*")
	cs := connect(t, dir)
	names, _ := listAll(t, cs)
	for _, tc := range []struct {
		args   map[string]any
		reason string
		text   string
	}{
		{map[string]any{"count": 1.5}, "invalid_input", "not a whole number"},
		{map[string]any{"count": nil}, "invalid_input", "null"},
		{map[string]any{"colour": "red"}, "invalid_input", "colour"},
		{map[string]any{"env": "prod"}, "denied", "does not allow deploy.read"},
	} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[0], Arguments: tc.args})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		env := envelopeOf(t, res)
		if !res.IsError || env["outcome"] != "rejected" || env["reason"] != tc.reason {
			t.Errorf("%v: isError %v envelope %v, want rejected/%s", tc.args, res.IsError, env, tc.reason)
			continue
		}
		msg := res.Content[1].(*sdk.TextContent).Text
		if !strings.Contains(msg, tc.text) {
			t.Errorf("%v: message %q does not mention %q", tc.args, msg, tc.text)
		}
		if tc.reason == "invalid_input" && !strings.Contains(msg, `"additionalProperties":false`) {
			t.Errorf("%v: the message does not carry the input schema: %q", tc.args, msg)
		}
	}
}

// Unknown, obsolete and invisible names get one and the same error, and
// an old cursor is refused once the profile changed.
func TestStaleNamesAndCursors(t *testing.T) {
	dir, a := home(t, 40, "test.*/*")
	cs := connect(t, dir)
	names, _ := listAll(t, cs)
	first, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}

	apply(t, a, "test.*/*", "other") // a new revision: every name changes
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[0]})
	stale := fmt.Sprint(err)
	// It says what to do: the names it listed are another revision's.
	if want := `unknown tool "` + names[0] + `": tool names change with every change the owner makes to the profile or the installed releases; ` +
		`list the tools again (tools/list) and call a name from that list`; !strings.HasSuffix(stale, want) {
		t.Fatalf("a stale name: %v, want %q", err, want)
	}
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nosuch__tool"})
	if unknown := fmt.Sprint(err); strings.ReplaceAll(unknown, "nosuch__tool", names[0]) != stale {
		t.Errorf("unknown and stale names differ:\n%s\n%s", unknown, stale)
	}
	if _, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: first.NextCursor}); err == nil || !strings.Contains(err.Error(), "list the tools again") {
		t.Errorf("an old cursor: %v", err)
	}

	// Invisible to the bound task: the same answer as unknown.
	apply(t, a, "other.*/*", "other")
	now, _ := listAll(t, cs)
	if len(now) != 0 {
		t.Errorf("the agent task sees %d tools it may not run", len(now))
	}
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[1]})
	if invisible := fmt.Sprint(err); strings.ReplaceAll(invisible, names[1], names[0]) != stale {
		t.Errorf("invisible and stale names differ:\n%s\n%s", invisible, stale)
	}
}

// A client that cancels a call stops that invocation only; it is
// recorded as cancelled/client_cancelled.
func TestClientCancel(t *testing.T) {
	dir, _ := home(t, 1, "test.*/*")
	// Replace nothing: add a slow tool through a second release.
	rel := filepath.Join(dir, "slow")
	write(t, filepath.Join(rel, "bin", "slow"), "#!/bin/sh\nexec sleep 30\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.slow","version":"1.0.0","publisher":"test","commands":[
		{"id":"slow","path":["slow"],"summary":"Slow","execute":{"mapping":"managed","program":"bin/slow","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(dir, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":["test.slow/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, dir)
	names, _ := listAll(t, cs)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names[0]})
	if err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	host := local.New(filepath.Join(dir, "data"))
	for {
		invs, err := host.Core().Invocations(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(invs) == 1 && !invs[0].Open() {
			if invs[0].Outcome != "cancelled" || invs[0].Reason != "client_cancelled" {
				t.Errorf("recorded %s/%s, want cancelled/client_cancelled", invs[0].Outcome, invs[0].Reason)
			}
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatal("the cancelled invocation was never finalized")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// slowHome is a home whose agent task runs a slow tool with
// maxConcurrent 4.
func slowHome(t *testing.T) string {
	t.Helper()
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "slow")
	// Each run logs its start and end, so a test can tell how many ran at once.
	log := filepath.Join(dir, "runs.log")
	write(t, filepath.Join(rel, "bin", "slow"), "#!/bin/sh\necho + >> "+log+"\nsleep 1\necho - >> "+log+"\n"+reportText+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.slow","version":"1.0.0","publisher":"test","commands":[
		{"id":"slow","path":["slow"],"summary":"Slow","execute":{"mapping":"managed","program":"bin/slow","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(dir, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":["test.slow/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// 100 concurrent calls against maxConcurrent 4: at most 4 run, the rest
// are refused as busy at once — nothing queues.
func TestConcurrencyLimit(t *testing.T) {
	dir := slowHome(t)
	cs := connect(t, dir)
	names, _ := listAll(t, cs)
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[0]})
			key := "error"
			if err == nil {
				raw, _ := json.Marshal(res.StructuredContent)
				var env struct{ Outcome, Reason string }
				json.Unmarshal(raw, &env)
				key = env.Outcome + "/" + env.Reason
			}
			mu.Lock()
			counts[key]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts["succeeded/"] < 4 || counts["succeeded/"]+counts["rejected/busy"] != 100 {
		t.Errorf("outcomes %v: want every call to succeed or be refused as busy", counts)
	}
	if counts["rejected/busy"] == 0 {
		t.Errorf("outcomes %v: no call was refused, so nothing tested the limit", counts)
	}
	// Never more than 4 at once, counted from the runs themselves.
	data, err := os.ReadFile(filepath.Join(dir, "runs.log"))
	if err != nil {
		t.Fatal(err)
	}
	running, most := 0, 0
	for _, c := range strings.Fields(string(data)) {
		if c == "+" {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	if most > 4 {
		t.Errorf("%d invocations ran at once; the limit is 4", most)
	}
}

// A client that disconnects mid-call stops the command; its outcome is
// committed once.
func TestDisconnectMidCall(t *testing.T) {
	dir := slowHome(t)
	// Serve with Run over pipes, as `rukh mcp` serves stdio, so that
	// closing the client's pipe is EOF on the server's stdin.
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(context.Background(), &sdk.IOTransport{Reader: toServer, Writer: fromServer}) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&sdk.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := listAll(t, cs)
	go cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[0]})
	host := local.New(filepath.Join(dir, "data"))
	deadline := time.Now().Add(15 * time.Second)
	for {
		invs, _ := host.Core().Invocations(1)
		if len(invs) == 1 && invs[0].Open() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	fromClient.Close() // EOF on the server's stdin
	select {
	case <-ran:
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not end with its session")
	}
	for {
		invs, _ := host.Core().Invocations(1)
		if len(invs) == 1 && !invs[0].Open() {
			if invs[0].Outcome != "cancelled" || invs[0].Reason != "client_cancelled" {
				t.Errorf("recorded %s/%s, want cancelled/client_cancelled", invs[0].Outcome, invs[0].Reason)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the call was never finalized after the disconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Compact naming works end to end: every listed name fits 52 characters
// (64 with a client prefix like mcp__rukh__) and is callable.
func TestCompactNames(t *testing.T) {
	dir, a := home(t, 3, "test.*/*")
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":["test.tools/*"],"task":"agent","naming":"compact"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host","allow":[{"action":"deploy.read","resource":"env:stage"}]}}}`)); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, dir)
	names, _ := listAll(t, cs)
	if len(names) != 3 {
		t.Fatalf("%d tools", len(names))
	}
	for _, n := range names {
		if len(n) > 52 {
			t.Errorf("compact name %q is %d characters", n, len(n))
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: names[0]})
	if err != nil || res.IsError {
		t.Fatalf("calling a compact name: %v %v", err, res)
	}
}
