package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// The owner's wrapper of a version 1 command (ADR 0012; issue 27 item 4):
// acme.legacy/run is a passthrough command, CLI only. The profile wraps it
// as owner/legacy-deploy with typed inputs and an argv template; the
// wrapper is a command of its own on both hosts: from the CLI, over MCP
// once exposed, recorded with the wrapped release. A value with shell
// metacharacters is one literal argument. A wrapper whose template names
// an undeclared input, whose package is not installed, or that wraps a
// version 2 command is refused in the apply, which changes nothing.
func TestOwnerWrappers(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		home := testhome.TempDir(t)
		env := append(os.Environ(), "RUKH_HOME="+home)
		run := func(args ...string) (string, int) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
			defer cancel()
			cmd := exec.CommandContext(ctx, h.Rukh, args...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatalf("rukh %s: %v", strings.Join(args, " "), err)
			}
			return string(out), cmd.ProcessState.ExitCode()
		}
		h.serve(t, home)
		for _, name := range []string{"legacy", "greet"} {
			dir, _ := filepath.Abs(filepath.Join("..", "examples", name))
			m, err := trust.BuildManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if out, code := run("ext", "install", dir, "--pin", m.Digest()); code != 0 {
				t.Fatalf("ext install %s: %d\n%s", name, code, out)
			}
		}
		apply := func(wrappers string) (string, int) {
			t.Helper()
			prof := filepath.Join(home, "profile.json")
			doc := `{"endpointNamespace": "team", "cli": {"task": "owner"},
			  "mcp": {"expose": ["owner/legacy-deploy"], "task": "agent"},
			  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 60000, "maxConcurrent": 8, "enforcement": "restricted"},
			            "agent": {"commands": ["owner/*"], "deadlineMs": 30000, "maxConcurrent": 4, "enforcement": "strict"}},
			  "wrappers": ` + wrappers + `}`
			if err := os.WriteFile(prof, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			return run("profile", "apply", "-f", prof)
		}
		wrapper := func(wraps, argv string) string {
			return `[{"id": "legacy-deploy", "path": ["legacy", "deploy"], "summary": "Deploy with the old tool",
			  "wraps": ` + wraps + `,
			  "inputs": [{"id": "env", "type": "string", "enum": ["stage", "prod"], "required": true},
			             {"id": "force", "type": "boolean", "default": false},
			             {"id": "note", "type": "string"}],
			  "argv": ` + argv + `,
			  "effects": {"class": "write"}, "machine": {"eligible": true, "requiredFeatures": ["command-result/1"]}}]`
		}
		legacy := `{"package": "acme.legacy", "command": "run"}`
		good := `["deploy", "--env", {"input": "env"}, {"input": "force", "ifTrue": "--force"}, {"input": "note"}]`

		// Refused, each in its apply, and nothing changes.
		for _, tc := range []struct{ wraps, argv, want string }{
			{legacy, `["deploy", {"input": "nosuch"}]`, `/wrappers/0 (owner/legacy-deploy): argv/1 names input "nosuch", which the wrapper does not declare`},
			{legacy, `["deploy", {"input": "force"}]`, `boolean input "force" needs "ifTrue"`},
			{`{"package": "acme.nosuch", "command": "run"}`, good, "package acme.nosuch is not installed and active"},
			{`{"package": "acme.greet", "command": "hello"}`, good, "acme.greet/hello is a version 2 command"},
			{`{"package": "acme.legacy", "command": "nosuch"}`, good, `has no command "nosuch"`},
		} {
			out, code := apply(wrapper(tc.wraps, tc.argv))
			if code == 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "nothing was changed") {
				t.Errorf("apply of a wrapper (%s, %s): exit %d\n%s\nwant an error saying %q", tc.wraps, tc.argv, code, out, tc.want)
			}
		}
		if out, _ := run("ext", "list"); strings.Contains(out, "owner") {
			t.Errorf("a refused wrapper left a release:\n%s", out)
		}

		if out, code := apply(wrapper(legacy, good)); code != 0 {
			t.Fatalf("profile apply with a wrapper: %d\n%s", code, out)
		}
		// From the CLI: each input one argument, the hostile note too.
		note := `; rm -rf ~ $(touch pwned) "x`
		out, code := run("legacy", "deploy", "--env", "stage", "--note", note)
		want := "legacy tool called with 4 argument(s):\n  deploy\n  --env\n  stage\n  " + note + "\n"
		if code != 0 || out != want {
			t.Errorf("rukh legacy deploy: exit %d\n%q\nwant\n%q", code, out, want)
		}
		if _, err := os.Stat(filepath.Join(home, "pwned")); err == nil {
			t.Error("a value was run by a shell")
		}
		if out, code := run("legacy", "deploy", "--env", "qa"); code != 2 || !strings.Contains(out, "stage") {
			t.Errorf("a value outside the enum: exit %d\n%s", code, out)
		}

		// Over MCP, exposed: the wrapper is a tool; the v1 command is not.
		cmd := exec.Command(h.Rukh, "mcp")
		cmd.Env = env
		ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
		defer cancel()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) != 1 || !strings.HasPrefix(tools.Tools[0].Name, "owner_legacy-deploy__") {
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			t.Fatalf("tools: %v; want the wrapper alone", names)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{"env": "prod", "force": true}})
		if err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError || !strings.Contains(text, "  prod\\n  --force\\n") && !strings.Contains(text, "  prod\n  --force\n") {
			t.Errorf("tools/call of the wrapper: error %v\n%s", res.IsError, text)
		}

		// The records name the wrapper and the wrapped release.
		out, _ = run("invocations", "list", "--json")
		var invs []struct {
			ID, Command, Outcome, Transport string
		}
		if err := json.Unmarshal([]byte(out), &invs); err != nil || len(invs) == 0 {
			t.Fatalf("invocations --json: %v\n%s", err, out)
		}
		last := invs[0]
		if last.Command != "owner/legacy-deploy" || last.Outcome != "succeeded" || last.Transport != "mcp" {
			t.Errorf("the last record: %+v", last)
		}
		out, _ = run("invocations", "show", last.ID)
		dir, _ := filepath.Abs(filepath.Join("..", "examples", "legacy"))
		m, _ := trust.BuildManifest(dir)
		if !strings.Contains(out, "wraps:") || !strings.Contains(out, "acme.legacy/run "+m.Digest()) {
			t.Errorf("invocations show of a wrapper's call names no wrapped release:\n%s", out)
		}
	})
}
