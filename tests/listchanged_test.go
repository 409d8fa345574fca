package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An owner's change published by another process reaches every connected
// `rukh mcp` session as tools/list_changed, on both protocol versions
// (2026-07-28 through subscriptions/listen), in process and through
// rukhd: each client lists again and calls a name of the new list; under
// the dispatch projection too (docs/adr/0010-tools-list-changed.md).
func TestToolsListChangedAcrossProcesses(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		o := newOutlive(t) // any home will do: its commands are not run here but for ok
		h.serve(t, o.home)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
		defer cancel()

		type session struct {
			version string
			cs      *sdk.ClientSession
			changed chan struct{}
		}
		var sessions []*session
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			s := &session{version: version, changed: make(chan struct{}, 8)}
			cmd := exec.CommandContext(ctx, h.Rukh, "mcp")
			cmd.Env = o.env
			c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.changed <- struct{}{} },
			})
			cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			s.cs = cs
			sessions = append(sessions, s)
		}

		profile := func(projection string) string {
			return `{"endpointNamespace":"` + projection + `","cli":{"task":"owner"},"mcp":{"expose":["test.out/*"],"task":"agent","projection":"` + projection + `"},
			"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
			         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"}}}`
		}
		for _, projection := range []string{"tools", "dispatch"} {
			before := map[*session]map[string]string{}
			for _, s := range sessions {
				before[s] = toolNames(t, ctx, s.cs)
			}
			file := filepath.Join(o.dir, projection+".json")
			if err := os.WriteFile(file, []byte(profile(projection)), 0o644); err != nil {
				t.Fatal(err)
			}
			apply := exec.Command(h.Rukh, "profile", "apply", "-f", file)
			apply.Env = o.env
			if out, err := apply.CombinedOutput(); err != nil {
				t.Fatalf("profile apply: %v\n%s", err, out)
			}
			for _, s := range sessions {
				select {
				case <-s.changed:
				case <-ctx.Done():
					t.Fatalf("%s session: no tools/list_changed after the %s profile was applied", s.version, projection)
				}
				after := toolNames(t, ctx, s.cs)
				var name string
				for title, n := range after {
					if before[s][title] == n {
						t.Errorf("%s session: %q kept its name %s across the revision", s.version, title, n)
					}
					name = n
				}
				args := map[string]any{}
				if projection == "dispatch" {
					if len(after) != 1 {
						t.Fatalf("%s session: dispatch lists %v", s.version, after)
					}
					args = map[string]any{"ops": []any{map[string]any{"op": "test.out/escape"}}}
				} else {
					name = after["Escape"]
				}
				res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("%s session: calling %s of the new list: %v %+v", s.version, name, err, res)
				}
				if !strings.Contains(name, "__") {
					t.Errorf("%s session: odd name %q", s.version, name)
				}
			}
		}
	})
}
