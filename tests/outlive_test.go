package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// outlive is a home whose commands start a process that escapes
// everything a process group or session tracks: it calls setsid() and
// execs with an empty environment (no RUKH_INVOCATION_ID). `escape`
// returns at once; `hold` then waits. Each writes the escaped process's
// pid to DIR/NAME.pid (renamed into place when complete).
type outlive struct {
	dir, home string
	env       []string
}

func newOutlive(t *testing.T) *outlive {
	t.Helper()
	o := &outlive{dir: testhome.TempDir(t)}
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok"}}\n' "$RUKH_IPC_TOKEN" >&3`
	escape := func(name, then string) string {
		pid := filepath.Join(o.dir, name+".pid")
		return "#!/bin/sh\nsetsid env -i /bin/sleep 300 &\necho $! > " + pid + ".tmp && mv " + pid + ".tmp " + pid + "\n" + then + "\n"
	}
	rel := filepath.Join(o.dir, "src")
	testhome.WriteFiles(t, rel, map[string]string{
		"bin/escape": escape("escape", report),
		"bin/hold":   escape("hold", "sleep 120\n"+report),
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.out","version":"1.0.0","publisher":"test","commands":[
		{"id":"escape","path":["escape"],"summary":"Escape","execute":{"mapping":"managed","program":"bin/escape","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
		{"id":"hold","path":["hold"],"summary":"Hold","execute":{"mapping":"managed","program":"bin/hold","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
	})
	o.home = filepath.Join(o.dir, "home")
	a := testhome.InstallPinned(t, filepath.Join(o.home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.out/*"],"task":"agent"},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
	         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	o.env = append(os.Environ(), "RUKH_HOME="+o.home)
	return o
}

// mcp starts `rukh mcp` on the home with a go-sdk client, closed when t
// ends, and lists its tools by title.
func (o *outlive) mcp(t *testing.T, ctx context.Context, rukh string) (*exec.Cmd, *sdk.ClientSession, map[string]string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, rukh, "mcp")
	cmd.Env = o.env
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cmd, cs, toolNames(t, ctx, cs)
}

// escaped reads the pid the command named wrote, waiting for the file,
// and removes the file for the next call.
func (o *outlive) escaped(t *testing.T, name string) int {
	t.Helper()
	path := filepath.Join(o.dir, name+".pid")
	waitFile(t, path, "the "+name+" command's escaped process")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil {
		t.Fatalf("%s: %q", path, data)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// goneNow fails when pid still names a process: its call is over, and
// the helper that supervised it reaped all of it before it exited.
func goneNow(t *testing.T, pid int, what string) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("%s (pid %d) outlived its call (kill 0: %v)", what, pid, err)
	}
}

// Nothing a command starts outlives its call (docs/adr/0004-containment.md):
// a process that called setsid() and cleared its environment is gone when
// the call returns, at the CLI and over MCP, in process and through
// rukhd; and after kill -9 of the CLI or of `rukh mcp` mid-call it dies
// with the call, not at the next one.
func TestNothingOutlivesItsCall(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		o := newOutlive(t)
		h.serve(t, o.home)

		cli := exec.Command(h.Rukh, "escape")
		cli.Env = o.env
		if out, err := cli.CombinedOutput(); err != nil {
			t.Fatalf("rukh escape: %v\n%s", err, out)
		}
		goneNow(t, o.escaped(t, "escape"), "what `rukh escape` started")

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		mcp, cs, names := o.mcp(t, ctx, h.Rukh)
		if r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names["Escape"]}); err != nil || r.IsError {
			t.Fatalf("escape over MCP: %v %+v", err, r)
		}
		goneNow(t, o.escaped(t, "escape"), "what the MCP call of escape started")

		// kill -9 of the CLI mid-call: the thin client that runs the
		// command for rukhd, or the one-shot core in process.
		hold := exec.Command(h.Rukh, "hold")
		hold.Env = o.env
		if err := hold.Start(); err != nil {
			t.Fatal(err)
		}
		pid := o.escaped(t, "hold")
		hold.Process.Kill()
		hold.Wait()
		if err := testhome.ExitOf(pid, dtHangGuard); err != nil {
			t.Errorf("what `rukh hold` started (pid %d) outlived a kill -9 of rukh: %v", pid, err)
		}

		if h.Daemon {
			return // a kill -9 of the MCP host through rukhd: TestNothingOutlivesRukhd
		}
		go cs.CallTool(ctx, &sdk.CallToolParams{Name: names["Hold"]})
		pid = o.escaped(t, "hold")
		mcp.Process.Kill()
		if err := testhome.ExitOf(pid, dtHangGuard); err != nil {
			t.Errorf("what an MCP call started (pid %d) outlived a kill -9 of rukh mcp: %v", pid, err)
		}
	})
}

// After kill -9 of rukhd mid-call, what an agent's call started is gone
// at once, not at the next daemon start.
func TestNothingOutlivesRukhd(t *testing.T) {
	rukh, rukhd := hostBinaries(t)
	o := newOutlive(t)
	d, exited := startReadyDaemon(t, o.env, nil, rukhd)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	_, cs, names := o.mcp(t, ctx, rukh)
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names["Hold"]})
		called <- err
	}()
	pid := o.escaped(t, "hold")
	d.Process.Kill()
	<-exited
	if err := testhome.ExitOf(pid, dtHangGuard); err != nil {
		t.Errorf("what an MCP call started (pid %d) outlived a kill -9 of rukhd: %v", pid, err)
	}
	select {
	case <-called: // answered, whatever it says: TestDaemon holds the record
	case <-ctx.Done():
		t.Errorf("the call through the killed rukhd was never answered")
	}
}

// toolNames lists a session's tools by title.
func toolNames(t *testing.T, ctx context.Context, cs *sdk.ClientSession) map[string]string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, tool := range res.Tools {
		names[tool.Title] = tool.Name
	}
	return names
}
