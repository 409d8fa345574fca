package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon"
	"github.com/rukh-cli/rukh/internal/daemon/client"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/thin"
)

// waitEnv is one home served by one ToolHost: local.Host in this
// process, or a rukhd (daemon.Server, in this process) reached through
// client.Auto, exactly as `rukh mcp` reaches it.
type waitEnv struct {
	t     *testing.T
	dir   string
	data  string
	paths paths.Paths
	host  seam.ToolHost
	held  *local.Host // the Local that runs detached calls: this one, or the daemon's
	tools map[string]string
	stop  func() // the host goes away: what it runs is stopped and recorded
}

func newWaitEnv(t *testing.T, withDaemon bool) *waitEnv {
	t.Helper()
	dir, p := newWaitHome(t)
	w := &waitEnv{t: t, dir: dir, data: p.Data, paths: p, tools: map[string]string{}}
	if !withDaemon {
		l := local.New(p.Data)
		w.host, w.held = l, l
		w.stop = func() { l.StopDetached(); l.WaitDetached() }
	} else {
		ln, _, err := daemon.Listen(context.Background(), "rukh", p)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := daemon.New("rukh", p, nil)
		if err != nil {
			ln.Close()
			t.Fatal(err)
		}
		srv.Run = app.Runner(app.Rukh)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), ln) }()
		stopped := false
		w.stop = func() {
			if stopped {
				return
			}
			stopped = true
			srv.Stop()
			if err := <-done; err != nil {
				t.Error(err)
			}
			srv.Close()
		}
		t.Cleanup(w.stop)
		w.host = autoHost(p)
		w.held = srv.Host
	}
	w.listTools()
	return w
}

// autoHost is the ToolHost of `rukh mcp` for the home at p.
func autoHost(p paths.Paths) *client.Auto {
	return autoHostOf(p, buildid.ID())
}

// autoHostOf is autoHost for a daemon of the given build.
func autoHostOf(p paths.Paths, build string) *client.Auto {
	return client.NewAuto(thin.Dialer{Socket: p.Socket("rukh"), Name: "rukh", Build: build}, local.New(p.Data))
}

func (w *waitEnv) listTools() {
	t := w.t
	t.Helper()
	page, err := w.host.ListTools(context.Background(), &wire.ListTools{Task: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range page.Tools {
		for _, c := range []string{"gate", "hang"} {
			if strings.Contains(tool.Name, c) {
				w.tools[c] = tool.Name
			}
		}
	}
	if len(w.tools) != 2 {
		t.Fatalf("tools %v", w.tools)
	}
}

// waitProfile is the profile of a wait home, with the MCP projection as
// its one verb.
const waitProfile = `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.wait/*"],"task":"agent","projection":%q},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
	         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":1,"enforcement":"host"},
	         "short":{"commands":["test.*/*"],"deadlineMs":200,"maxConcurrent":4,"enforcement":"host"},
	         "other":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":4,"enforcement":"host"}}}`

// newWaitHome prepares a home with the test.wait release: gate runs
// until DIR/open exists, hang until DIR/never does.
func newWaitHome(t *testing.T) (string, paths.Paths) {
	t.Helper()
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "src")
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"opened"}}\n' "$RUKH_IPC_TOKEN" >&3`
	testhome.WriteFiles(t, rel, map[string]string{
		// gate runs until DIR/open exists; hang until DIR/never does.
		"bin/gate": "#!/bin/sh\nwhile [ ! -e " + dir + "/open ]; do sleep 0.01; done\n" + report + "\n",
		"bin/hang": "#!/bin/sh\nwhile [ ! -e " + dir + "/never ]; do sleep 0.01; done\n" + report + "\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.wait","version":"1.0.0","publisher":"test","commands":[
			{"id":"gate","path":["gate"],"summary":"Gate","execute":{"mapping":"managed","program":"bin/gate","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
			{"id":"hang","path":["hang"],"summary":"Hang","execute":{"mapping":"managed","program":"bin/hang","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
	})
	home := filepath.Join(dir, "home")
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	testhome.Apply(t, a, fmt.Sprintf(waitProfile, "tools"))
	p, err := homePaths(home)
	if err != nil {
		t.Fatal(err)
	}
	return dir, p
}

func (w *waitEnv) call(task, cmd, args string, detach bool) *wire.CallResult {
	w.t.Helper()
	res, err := w.host.CallTool(context.Background(), &wire.CallTool{Task: task, Name: w.tools[cmd], Arguments: []byte(args), Detach: detach}, seam.CallOptions{})
	if err != nil {
		w.t.Fatalf("call %s: %v", cmd, err)
	}
	return res
}

func (w *waitEnv) wait(task string, ids []string, timeout time.Duration) *wire.WaitResult {
	w.t.Helper()
	res, err := w.host.WaitInvocations(context.Background(), task, ids, timeout)
	if err != nil {
		w.t.Fatalf("wait %v: %v", ids, err)
	}
	return res
}

// TestDetachAndWait drives the seam as the dispatch projection does,
// through both hosts: a detached call answers once admitted, its run
// holds its task's slot and keeps its deadline, a wait sees it pending
// and then terminal with its outcome, other tasks cannot see it, bad
// requests are refused as a whole, and a host that goes away stops and
// records what it runs.
func TestDetachAndWait(t *testing.T) {
	for _, mode := range []string{"local", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			w := newWaitEnv(t, mode == "daemon")
			ctx := context.Background()

			res := w.call("agent", "gate", `{}`, true)
			if !res.Detached || res.Outcome != "" || len(res.InvocationID) != 32 {
				t.Fatalf("detached call: %+v", res)
			}
			id := res.InvocationID
			if n := w.held.DetachedRunning(); n != 1 {
				t.Errorf("the host runs %d detached runs, want 1", n)
			}

			// Pending: the window closes, which is not an error.
			got := w.wait("agent", []string{id}, 0)
			want := &wire.WaitResult{
				Entries:  []wire.WaitEntry{{ID: id, InvocationID: id, Command: "test.wait/gate", Status: wire.WaitPending}},
				TimedOut: true, Terminal: []string{}, Pending: []string{id}, Stopped: []string{}, Unknown: []string{},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("wait:\n got %+v\nwant %+v", got, want)
			}

			// The run holds the task's one slot, detached or not.
			if res := w.call("agent", "gate", `{}`, false); res.Outcome != invoke.Rejected || res.Reason != invoke.ReasonBusy {
				t.Errorf("a second call while the detached run holds the slot: %+v", res)
			}
			if res := w.call("agent", "gate", `{}`, true); res.Detached || res.Outcome != invoke.Rejected || res.Reason != invoke.ReasonBusy {
				t.Errorf("a second detached call while the slot is held: %+v", res)
			}

			// Unknown ids are per-id errors; the others are still observed.
			// Another task's record answers exactly like one that does not
			// exist.
			got = w.wait("agent", []string{"ffffffffffffffffffffffffffffffff", id, "not an id"}, 0)
			if got.Entries[0].Status != wire.WaitUnknown || got.Entries[0].Error != "no invocation ffffffffffffffffffffffffffffffff" ||
				got.Entries[1].Status != wire.WaitPending || got.Entries[2].Status != wire.WaitUnknown || !strings.Contains(got.Entries[2].Error, "is not an invocation id") ||
				!reflect.DeepEqual(got.Unknown, []string{"ffffffffffffffffffffffffffffffff", "not an id"}) || !reflect.DeepEqual(got.Pending, []string{id}) {
				t.Errorf("unknown ids: %+v", got)
			}
			got = w.wait("other", []string{id}, time.Minute)
			if e := got.Entries[0]; e.Status != wire.WaitUnknown || e.Error != "no invocation "+id || e.Command != "" || got.TimedOut {
				t.Errorf("another task's invocation: %+v", got)
			}

			// Requests out of bounds are refused as a whole.
			for _, bad := range []struct {
				task    string
				ids     []string
				timeout time.Duration
				code    string
			}{
				{"agent", []string{id, strings.ToUpper(id)}, 0, wire.CodeInvalidArgument},
				{"agent", []string{id}, invoke.MaxWaitTimeout + time.Second, wire.CodeInvalidArgument},
				{"agent", []string{id}, -time.Second, wire.CodeInvalidArgument},
				{"agent", nil, 0, wire.CodeInvalidArgument},
				{"agent", make([]string, wire.MaxWaitIDs+1), 0, wire.CodeInvalidArgument},
				{"nope", []string{id}, 0, wire.CodeTaskUndefined},
				{"", []string{id}, 0, wire.CodeTaskUndefined},
			} {
				_, err := w.host.WaitInvocations(ctx, bad.task, bad.ids, bad.timeout)
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != bad.code {
					t.Errorf("wait %q %d ids %s: %v, want %s", bad.task, len(bad.ids), bad.timeout, err, bad.code)
				}
			}

			// It ends: the wait returns with its outcome, and the slot is free.
			if err := os.WriteFile(filepath.Join(w.dir, "open"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			got = w.wait("agent", []string{id}, invoke.MaxWaitTimeout)
			if e := got.Entries[0]; !got.AllTerminal || got.TimedOut || e.Status != wire.WaitTerminal || !e.Terminal || e.Outcome != invoke.Succeeded {
				t.Errorf("after it ended: %+v", got)
			}
			data, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{`"entries":[{"id":"`, `"invocationId":`, `"command":"test.wait/gate"`, `"status":"terminal"`, `"terminal":true`,
				`"outcome":"succeeded"`, `"reason":""`, `"error":""`, `"allTerminal":true`, `"timedOut":false`, `"pending":[]`, `"stopped":[]`, `"unknown":[]`, `"timeoutMs":600000`} {
				if !strings.Contains(string(data), key) {
					t.Errorf("the JSON lacks %s: %s", key, data)
				}
			}
			if res := w.call("agent", "gate", `{}`, false); res.Outcome != invoke.Succeeded {
				t.Errorf("a call after the detached run ended: %+v", res)
			}

			// A refusal is answered with its outcome, not detached.
			if res := w.call("agent", "gate", `{"x":1}`, true); res.Detached || res.Outcome != invoke.Rejected || res.Reason != invoke.ReasonInvalidInput || len(res.InputSchema) == 0 {
				t.Errorf("an invalid detached call: %+v", res)
			}

			// The task's deadline applies to a detached run from its start.
			res = w.call("short", "hang", `{}`, true)
			got = w.wait("short", []string{res.InvocationID}, invoke.MaxWaitTimeout)
			if e := got.Entries[0]; e.Outcome != invoke.Cancelled || e.Reason != invoke.ReasonDeadline {
				t.Errorf("a detached run past its deadline: %+v", got)
			}

			// The host goes away mid-run: the run is stopped and recorded
			// cancelled/interrupted, never left open.
			res = w.call("agent", "hang", `{}`, true)
			if !res.Detached {
				t.Fatalf("detached call: %+v", res)
			}
			w.stop()
			after := local.New(w.data)
			inv, err := after.Core().Invocation(res.InvocationID)
			if err != nil {
				t.Fatal(err)
			}
			if inv.Outcome != invoke.Cancelled || inv.Reason != invoke.ReasonInterrupted {
				t.Errorf("a detached run of a host that stopped: %s/%s", inv.Outcome, inv.Reason)
			}
			if got := w.held.DetachedRunning(); got != 0 {
				t.Errorf("%d detached runs left", got)
			}
			if mode == "local" {
				// A host that stopped takes no new detached run.
				_, err := w.host.CallTool(ctx, &wire.CallTool{Task: "agent", Name: w.tools["gate"], Arguments: []byte(`{}`), Detach: true}, seam.CallOptions{})
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != wire.CodeShuttingDown {
					t.Errorf("a detached call after the host stopped: %v", err)
				}
			}
		})
	}
}

// TestDetachedHostKilled kills a real rukhd outright (SIGKILL) while it
// runs a detached call: the command dies with it, a wait then sees the
// record stopped (open, its host gone) and changes nothing, and the next
// admission records it execution_failed/host_lost — never nothing.
func TestDetachedHostKilled(t *testing.T) {
	_, rukhd := hostBinaries(t)
	dir, p := newWaitHome(t)
	cmd := exec.Command(rukhd)
	cmd.Env = append(os.Environ(), "RUKH_HOME="+filepath.Dir(p.Data))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	h := autoHostOf(p, hostBuild(t))
	var dialErr error
	for i := 0; ; i++ { // until it answers
		s, err := h.Dialer.Dial(context.Background())
		if err == nil {
			s.Close()
			break
		}
		dialErr = err
		select {
		case <-exited:
			t.Fatalf("rukhd exited before it answered: %v", cmd.ProcessState)
		case <-time.After(10 * time.Millisecond):
		}
		if i == 3000 {
			t.Fatalf("rukhd did not answer a client of its build %q within 30 s: %v", hostBuild(t), dialErr)
		}
	}
	w := &waitEnv{t: t, dir: dir, data: p.Data, host: h, tools: map[string]string{}}
	w.listTools()
	res := w.call("agent", "hang", `{}`, true)
	if !res.Detached {
		t.Fatalf("detached call: %+v", res)
	}
	id := res.InvocationID
	if got := w.wait("agent", []string{id}, 0); !reflect.DeepEqual(got.Pending, []string{id}) {
		t.Fatalf("before the kill: %+v", got)
	}

	cmd.Process.Kill()
	<-exited
	// No daemon now: the same host observes in-process.
	got := w.wait("agent", []string{id}, invoke.MaxWaitTimeout)
	if e := got.Entries[0]; e.Status != wire.WaitStopped || e.Terminal || got.TimedOut || got.AllTerminal || !reflect.DeepEqual(got.Stopped, []string{id}) {
		t.Fatalf("after the kill: %+v", got)
	}
	// The record is untouched, and its host was the daemon.
	if inv, err := local.New(p.Data).Core().Invocation(id); err != nil || !inv.Open() || inv.PID != cmd.Process.Pid {
		t.Fatalf("the record after the kill and a wait: %+v, %v", inv, err)
	}
	// The next admission, of any call, records it.
	if err := os.WriteFile(filepath.Join(dir, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := w.call("other", "gate", `{}`, false); res.Outcome != invoke.Succeeded {
		t.Fatalf("a call after the kill: %+v", res)
	}
	got = w.wait("agent", []string{id}, 0)
	if e := got.Entries[0]; !got.AllTerminal || e.Outcome != invoke.ExecutionFailed || e.Reason != invoke.ReasonHostLost {
		t.Errorf("after the next admission: %+v", got)
	}
}

// TestMCPDetachedEndsWithHost: a run detached by a `rukh mcp` process
// that runs it in-process ends with that process — whether its client
// closes stdin or it gets SIGTERM — and is recorded cancelled/interrupted.
func TestMCPDetachedEndsWithHost(t *testing.T) {
	rukh, _ := hostBinaries(t)
	for _, how := range []string{"stdin-closed", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			_, p := newWaitHome(t)
			testhome.Apply(t, admin.New(p.Data), fmt.Sprintf(waitProfile, "dispatch"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.Command(rukh, "mcp")
			cmd.Env = append(os.Environ(), "RUKH_HOME="+filepath.Dir(p.Data))
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 {
				t.Fatalf("tools: %v, %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tools.Tools[0].Name,
				Arguments: json.RawMessage(`{"ops":[{"op":"test.wait/hang","args":{},"detach":true}]}`)})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			var ans struct {
				Results []struct {
					OK           bool   `json:"ok"`
					Detached     bool   `json:"detached"`
					InvocationID string `json:"invocationId"`
				} `json:"results"`
			}
			if err := json.Unmarshal(raw, &ans); err != nil || len(ans.Results) != 1 || !ans.Results[0].Detached || len(ans.Results[0].InvocationID) != 32 {
				t.Fatalf("detached op: %s (%v)", raw, err)
			}
			if how == "sigterm" {
				cmd.Process.Signal(syscall.SIGTERM)
			}
			cs.Close() // closes stdin and waits for the process to exit
			inv, err := local.New(p.Data).Core().Invocation(ans.Results[0].InvocationID)
			if err != nil {
				t.Fatal(err)
			}
			if inv.Outcome != invoke.Cancelled || inv.Reason != invoke.ReasonInterrupted {
				t.Errorf("the detached run of a rukh mcp that ended: %s/%s", inv.Outcome, inv.Reason)
			}
		})
	}
}

// TestAutoRequestBehindHello: `rukh mcp` sends each request right behind
// its hello (thin.Dialer.Request). A daemon of another build refuses the
// hello, and the request that followed it is neither run nor recorded:
// the caller gets build_mismatch. The same call by a client of the
// daemon's build runs and is recorded once.
func TestAutoRequestBehindHello(t *testing.T) {
	w := newWaitEnv(t, true)
	records := func() int {
		t.Helper()
		var n int
		if err := w.held.Core().Store.View(func(tx *store.Tx) error {
			invs, err := tx.Invocations(100)
			n = len(invs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := os.WriteFile(filepath.Join(w.dir, "open"), nil, 0o600); err != nil { // gate answers at once
		t.Fatal(err)
	}
	other := autoHostOf(w.paths, "another-build")
	_, err := other.CallTool(context.Background(), &wire.CallTool{Task: "agent", Name: w.tools["gate"], Arguments: []byte(`{}`)}, seam.CallOptions{})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeBuildMismatch {
		t.Fatalf("a client of another build: %v, want %s", err, wire.CodeBuildMismatch)
	}
	if n := records(); n != 0 {
		t.Fatalf("%d invocations recorded after a refused hello, want 0", n)
	}
	if res := w.call("agent", "gate", `{}`, false); res.Outcome != invoke.Succeeded {
		t.Fatalf("the daemon's own build: %+v", res)
	}
	if n := records(); n != 1 {
		t.Fatalf("%d invocations recorded after one call, want 1", n)
	}
}
