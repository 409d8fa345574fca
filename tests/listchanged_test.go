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

	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
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

// A session started before rukhd and one started after it are told alike
// of a revision the daemon publishes, and both call the new names.
func TestToolsListChangedAcrossDaemonStart(t *testing.T) {
	rukh, rukhd := hostBinaries(t)
	o := newOutlive(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	connect := func() (*sdk.ClientSession, <-chan struct{}) {
		changed := make(chan struct{}, 8)
		cmd := exec.CommandContext(ctx, rukh, "mcp")
		cmd.Env = o.env
		c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		})
		cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, changed
	}
	before, beforeChanged := connect()
	old := toolNames(t, ctx, before)["Escape"]
	startReadyDaemon(t, o.env, nil, rukhd)
	after, afterChanged := connect()

	file := filepath.Join(o.dir, "renamed.json")
	os.WriteFile(file, []byte(`{"endpointNamespace":"renamed","cli":{"task":"owner"},"mcp":{"expose":["test.out/*"],"task":"agent"},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
	         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"}}}`), 0o644)
	apply := exec.Command(rukh, "profile", "apply", "-f", file)
	apply.Env = o.env
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("profile apply: %v\n%s", err, out)
	}
	for what, s := range map[string]struct {
		cs      *sdk.ClientSession
		changed <-chan struct{}
	}{"started before rukhd": {before, beforeChanged}, "started after rukhd": {after, afterChanged}} {
		select {
		case <-s.changed:
		case <-ctx.Done():
			t.Fatalf("the session %s was not told of the revision rukhd published", what)
		}
		name := toolNames(t, ctx, s.cs)["Escape"]
		if name == old || name == "" {
			t.Errorf("the session %s lists %q, the name before the revision was %q", what, name, old)
		}
		if res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name}); err != nil || res.IsError {
			t.Errorf("the session %s: calling %s: %v %+v", what, name, err, res)
		}
	}

	// An install publishes a revision too (a new release, through rukhd),
	// and so does the apply that exposes its command.
	rel := filepath.Join(o.dir, "src2")
	testhome.WriteFiles(t, rel, map[string]string{
		"bin/fresh": "#!/bin/sh\n" + `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"fresh"}}\n' "$RUKH_IPC_TOKEN" >&3` + "\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.fresh","version":"1.0.0","publisher":"test","commands":[
		{"id":"fresh","path":["fresh"],"summary":"Fresh","execute":{"mapping":"managed","program":"bin/fresh","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
	})
	m, err := trust.BuildManifest(rel)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, []byte(strings.Replace(string(mustRead(t, file)), `"expose":["test.out/*"]`, `"expose":["test.out/*","test.fresh/*"]`, 1)), 0o644)
	for _, args := range [][]string{{"ext", "install", rel, "--pin", m.Digest()}, {"profile", "apply", "-f", file}} {
		cmd := exec.Command(rukh, args...)
		cmd.Env = o.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for what, s := range map[string]struct {
		cs      *sdk.ClientSession
		changed <-chan struct{}
	}{"started before rukhd": {before, beforeChanged}, "started after rukhd": {after, afterChanged}} {
		// One notification or two (the install's and the apply's may
		// come as one); then the list has the new command.
		var name string
		for name == "" {
			select {
			case <-s.changed:
			case <-ctx.Done():
				t.Fatalf("the session %s was not told of the install", what)
			}
			name = toolNames(t, ctx, s.cs)["Fresh"]
		}
		if res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: name}); err != nil || res.IsError {
			t.Errorf("the session %s: calling the installed %s: %v %+v", what, name, err, res)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
