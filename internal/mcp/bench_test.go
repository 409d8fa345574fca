package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/daemon/client"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/thin"
)

// daemonHost serves dir's data with a rukhd and returns the ToolHost
// `rukh mcp` would use: it dials the daemon per operation.
func daemonHost(b *testing.B, dir string) seam.ToolHost { return daemonHostWith(b, dir, false) }

// daemonHostWith is daemonHost whose rukhd starts every command through
// the enforcement helper beside it when helper is set (none otherwise,
// as in this test binary's directory). rukhd runs as its own process, as
// it does for `rukh mcp`, with the timer slack an owner's rukhd has: in
// this process it would share the scheduler with the adapter and the
// client, and a call would cost it no process wake-ups (0.1 ms a call
// less, docs/benchmarks.md "Ninth pass").
func daemonHostWith(b *testing.B, dir string, helper bool) seam.ToolHost {
	b.Helper()
	p := paths.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}
	bin := testhome.TempDir(b)
	rukhd := filepath.Join(bin, "rukhd")
	build := exec.Command("go", "build", "-o", rukhd, "../../cmd/rukhd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and the .deb build it
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build rukhd: %v\n%s", err, out)
	}
	// The client says the daemon's build in its hello, as a rukh of the
	// same build would.
	version, err := exec.Command(rukhd, "version").Output()
	if err != nil {
		b.Fatalf("rukhd version: %v", err)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(string(version)), "rukhd ")
	if !ok {
		b.Fatalf("rukhd version printed %q", version)
	}
	if helper {
		if err := sandbox.Build(filepath.Join(bin, "rukh-sandbox")); err != nil {
			b.Fatal(err)
		}
	}
	log, err := os.Create(filepath.Join(bin, "rukhd.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(rukhd)
	cmd.Env = append(os.Environ(), "RUKH_HOME="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	// With a host's timer slack, as `rukh daemon start` and rukhd.service
	// start it (docs/adr/0021-host-timer-slack.md), and as BenchmarkCLI's
	// and BenchmarkHTTP's rukhd run.
	if err := spawn.WithHostTimerSlack(cmd.Start); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			b.Errorf("rukhd (pid %d) did not stop within 10 s of SIGTERM", cmd.Process.Pid)
		}
	})
	d := thin.Dialer{Socket: p.Socket("rukh"), Name: "rukh", Build: id}
	for deadline := time.Now().Add(10 * time.Second); ; {
		s, err := d.Dial(context.Background())
		if err == nil {
			s.Close()
			break
		}
		select {
		case <-exited:
			data, _ := os.ReadFile(log.Name())
			b.Fatalf("rukhd exited before it answered: %s", data)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(log.Name())
			b.Fatalf("rukhd did not answer at %s within 10 s (%v): %s", p.Socket("rukh"), err, data)
		}
	}
	return client.NewAuto(d, local.New(p.Data))
}

// benchHome installs n exposed, eligible commands (packages of 500) whose
// program reports success at once.
func benchHome(b *testing.B, n int) (string, string) {
	b.Helper()
	dir := testhome.TempDir(b)
	a := admin.New(filepath.Join(dir, "data"))
	var expose []string
	prog := ""
	for pkg := 0; pkg*500 < n; pkg++ {
		rel := filepath.Join(dir, fmt.Sprintf("p%d", pkg))
		var cmds []string
		for i := pkg * 500; i < min(n, (pkg+1)*500); i++ {
			cmds = append(cmds, fmt.Sprintf(`{"id":"c%d","path":["p%d","c%d"],"summary":"Command %d","description":"Does thing %d.",
				"inputs":[{"id":"count","type":"integer","minimum":1,"maximum":5,"default":1,"description":"How many"},{"id":"name","type":"string","maxLength":40}],
				"execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"structured","schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}},
				"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}`, i, pkg, i, i, i))
		}
		prog = filepath.Join(rel, "bin", "ok")
		writeB(b, prog, "#!/bin/sh\nprintf '{\"type\":\"complete\",\"token\":\"%s\",\"status\":\"succeeded\",\"commandResult\":{\"kind\":\"structured\",\"data\":{\"ok\":true}}}\\n' \"$RUKH_IPC_TOKEN\" >&3\n", 0o755)
		writeB(b, filepath.Join(rel, "rukh-extension.json"), fmt.Sprintf(`{"schema":"rukh.extension/2","package":"bench.p%d","version":"1.0.0","publisher":"bench","commands":[%s]}`, pkg, strings.Join(cmds, ",")), 0o644)
		testhome.InstallPinned(b, filepath.Join(dir, "data"), rel)
		expose = append(expose, fmt.Sprintf("%q", fmt.Sprintf("bench.p%d/*", pkg)))
	}
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"b","cli":{"task":"owner"},"mcp":{"expose":[` + strings.Join(expose, ",") + `],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
		b.Fatal(err)
	}
	return dir, prog
}

func writeB(b *testing.B, name, content string, mode os.FileMode) {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		b.Fatal(err)
	}
}

// agentSession is a client of rukh's MCP server on host, bound to the
// bench home's agent task.
func agentSession(b *testing.B, host seam.ToolHost) *sdk.ClientSession {
	return session(b, mcp.NewServer(mcp.Options{Host: host, Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "bench"}).Server)
}

// callB returns one call of tool name with args on cs, which must succeed.
func callB(cs *sdk.ClientSession, name string, args map[string]any) func(*testing.B) {
	return func(b *testing.B) {
		if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args}); err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}

func session(b *testing.B, srv *sdk.Server) *sdk.ClientSession {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func listAllB(b *testing.B, cs *sdk.ClientSession) int {
	n, cursor := 0, ""
	for {
		res, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			b.Fatal(err)
		}
		n += len(res.Tools)
		if res.NextCursor == "" {
			return n
		}
		cursor = res.NextCursor
	}
}

// BenchmarkList lists 2,000 exposed tools, every page, from rukh's
// projection (32 a page, computed per request from the cached revision)
// and from the go-sdk's own static registry holding the same tools.
func BenchmarkList(b *testing.B) {
	dir, _ := benchHome(b, 2000)
	host := local.New(filepath.Join(dir, "data"))
	rukh := agentSession(b, host)
	// The static registry holds exactly the tools rukh lists (names,
	// schemas and annotations: the same bytes), at its own page size
	// (1,000) and at rukh's (32, invariant I8): what the page size costs
	// the client, apart from anything rukh does.
	var tools []*sdk.Tool
	for cursor := ""; ; {
		res, err := rukh.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			b.Fatal(err)
		}
		tools = append(tools, res.Tools...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	staticServer := func(pageSize int) *sdk.ClientSession {
		static := sdk.NewServer(&sdk.Implementation{Name: "static", Version: "bench"}, &sdk.ServerOptions{PageSize: pageSize})
		for _, t := range tools {
			static.AddTool(t, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
		}
		return session(b, static)
	}
	sc, sc32 := staticServer(0), staticServer(local.PageTools)
	b.Run("rukh", func(b *testing.B) {
		for b.Loop() {
			if n := listAllB(b, rukh); n != 2000 {
				b.Fatalf("%d tools", n)
			}
		}
	})
	// The daemon holds the store once it runs, so it starts last.
	b.Run("rukh-daemon", func(b *testing.B) {
		proxied := agentSession(b, daemonHost(b, dir))
		listAllB(b, proxied) // warm: the daemon's first list builds its projection
		for b.Loop() {
			if n := listAllB(b, proxied); n != 2000 {
				b.Fatalf("%d tools", n)
			}
		}
	})
	// The target as a ratio of alternating pairs (each in turn first):
	// every listing through rukhd against one of F-list's.
	b.Run("rukh-daemon÷F-list", func(b *testing.B) {
		proxied := agentSession(b, daemonHost(b, dir))
		listAllB(b, proxied)
		testhome.PairRatio(b, func(b *testing.B) { listAllB(b, proxied) }, func(b *testing.B) { listAllB(b, sc32) })
	})
	b.Run("static-registry", func(b *testing.B) {
		for b.Loop() {
			if n := listAllB(b, sc); n != 2000 {
				b.Fatalf("%d tools", n)
			}
		}
	})
	b.Run("static-registry-32", func(b *testing.B) {
		for b.Loop() {
			if n := listAllB(b, sc32); n != 2000 {
				b.Fatalf("%d tools", n)
			}
		}
	})
}

// BenchmarkCall calls a trivial extension through rukh (admit, durable
// begin record, run, validate, durable outcome record) against F-mcp — a
// go-sdk static tool that commits a begin record durably in a bbolt file
// it holds open, fork/execs the same program with a prepared channel and
// commits the end record — and against that tool without the records and
// the fork/exec alone. The "+helper" rows start the command through
// rukh-sandbox, as an installed rukh does and F-call does.
func BenchmarkCall(b *testing.B) {
	dir, prog := benchHome(b, 10)
	host := local.New(filepath.Join(dir, "data"))
	rukh := agentSession(b, host)
	p, _, err := host.Projection(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	name := p.Tools[0].Name
	static := sdk.NewServer(&sdk.Implementation{Name: "static", Version: "bench"}, nil)
	static.AddTool(&sdk.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			line := testhome.ForkExec(b, prog, nil, nil)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: line}}}, nil
		})
	sc := session(b, static)
	// F-mcp: what any MCP host of a recorded call must do at least.
	db, err := bolt.Open(filepath.Join(dir, "floor.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	record := func(state string) error {
		return db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("invocations"))
			if err != nil {
				return err
			}
			return bk.Put([]byte("0123456789abcdef0123456789abcdef"), []byte(state))
		})
	}
	static.AddTool(&sdk.Tool{Name: "ok-recorded", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if err := record("running"); err != nil {
				return nil, err
			}
			line := testhome.ForkExec(b, prog, nil, nil)
			if err := record("succeeded"); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: line}}}, nil
		})
	// As the package installs it, rukh-sandbox supervises every command;
	// this test binary has none beside it, so the rows without "+helper"
	// run the program directly, as F-mcp does.
	helper := filepath.Join(testhome.TempDir(b), "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		b.Fatal(err)
	}
	static.AddTool(&sdk.Tool{Name: "ok-recorded-helper", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if err := record("running"); err != nil {
				return nil, err
			}
			line := testhome.ForkExecArgv(b, []string{helper, "host", "--", prog, prog}, nil, nil)
			if err := record("succeeded"); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: line}}}, nil
		})
	for _, mode := range []string{"rukh", "rukh-daemon", "rukh-daemon+helper"} { // the daemon holds the store once it runs: last
		b.Run(mode, func(b *testing.B) {
			cs := rukh
			switch mode {
			case "rukh-daemon":
				cs = agentSession(b, daemonHost(b, dir))
			case "rukh-daemon+helper":
				cs = agentSession(b, daemonHostWith(b, dir, true))
			}
			call := callB(cs, name, map[string]any{"count": 2})
			call(b) // the first call fills the host's caches: not the steady state
			for b.Loop() {
				call(b)
			}
		})
	}
	// The target as a ratio of alternating pairs (each in turn first),
	// both under the helper as installed: a call through rukhd against
	// one of F-mcp's.
	b.Run("rukh-daemon+helper÷F-mcp+helper", func(b *testing.B) {
		rukhCall := callB(agentSession(b, daemonHostWith(b, dir, true)), name, map[string]any{"count": 2})
		rukhCall(b) // the first call fills the host's caches
		testhome.PairRatio(b, rukhCall, callB(sc, "ok-recorded-helper", nil))
	})
	b.Run("static-tool-fork-exec+records", func(b *testing.B) { // F-mcp
		for b.Loop() {
			if res, err := sc.CallTool(context.Background(), &sdk.CallToolParams{Name: "ok-recorded"}); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("static-tool-fork-exec+records+helper", func(b *testing.B) { // F-mcp, the command supervised as F-call's
		for b.Loop() {
			if res, err := sc.CallTool(context.Background(), &sdk.CallToolParams{Name: "ok-recorded-helper"}); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("static-tool-fork-exec", func(b *testing.B) {
		for b.Loop() {
			if _, err := sc.CallTool(context.Background(), &sdk.CallToolParams{Name: "ok"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fork-exec", func(b *testing.B) {
		for b.Loop() {
			testhome.ForkExec(b, prog, nil, nil)
		}
	})
}
