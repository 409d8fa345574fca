package invoke_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// complete prints a completion report to fd 3 using the real token.
const complete = `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok\\n"}}\n' "$RUKH_IPC_TOKEN" >&3`

// hostile are extension programs that break the rules, each with the
// outcome the core must commit.
var hostile = []struct {
	id, script      string
	structured      bool
	outcome, reason string
	exit            int
}{
	{"well-behaved", complete, false, invoke.Succeeded, "", 0},
	{"never-completes", `exit 0`, false, invoke.ExecutionFailed, invoke.ReasonProtocolError, 0},
	{"completes-twice", complete + "\n" + complete, false, invoke.ExecutionFailed, invoke.ReasonProtocolError, 0},
	{"wrong-token", `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"x"}}\n' "0000" >&3`, false, invoke.ExecutionFailed, invoke.ReasonProtocolError, 0},
	{"invalid-json", `echo '{"type":"complete",' >&3`, false, invoke.ExecutionFailed, invoke.ReasonProtocolError, 0},
	{"oversize-frame", `head -c 300000 /dev/zero | tr '\0' a >&3; echo >&3`, false, invoke.ExecutionFailed, invoke.ReasonProtocolError, 0},
	{"succeeds-then-exits-1", complete + "\nexit 1", false, invoke.ExecutionFailed, invoke.ReasonProtocolError, 1},
	{"violates-schema", `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"structured","data":{"n":"not a number"}}}\n' "$RUKH_IPC_TOKEN" >&3`, true, invoke.ExecutionFailed, invoke.ReasonResultInvalid, 0},
	{"result-200k", `{ printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"' "$RUKH_IPC_TOKEN"; head -c 204800 /dev/zero | tr '\0' a; printf '"}}\n'; } >&3`, false, invoke.ExecutionFailed, invoke.ReasonResultTooLarge, 0},
	{"floods-stderr", `head -c 50000000 /dev/zero >&2` + "\n" + complete, false, invoke.Succeeded, "", 0},
	{"command-fails", `printf '{"type":"complete","token":"%s","status":"command_failed"}\n' "$RUKH_IPC_TOKEN" >&3; exit 3`, false, invoke.CommandFailed, "", 3},
	{"ignores-sigterm", `trap '' TERM; echo $$ > "$PIDFILE"; while :; do sleep 1; done`, false, invoke.Cancelled, invoke.ReasonDeadline, 128 + int(syscall.SIGKILL)},
	{"sleeps-past-deadline", `exec sleep 30`, false, invoke.Cancelled, invoke.ReasonDeadline, 128 + int(syscall.SIGTERM)},
	{"grandchild-keeps-fds", `sh -c 'echo $$ > "$PIDFILE"; exec sleep 30' & ` + "\n" + complete, false, invoke.Succeeded, "", 0},
}

// setup installs one pinned release with every hostile command and a
// profile whose CLI task has a short deadline.
func setup(t *testing.T) (*invoke.Core, string) { return setupB(t) }

func setupB(t testing.TB) (*invoke.Core, string) {
	t.Helper()
	home := testhome.TempDir(t)
	rel := filepath.Join(home, "src")
	var cmds []string
	for _, h := range hostile {
		result := `{"kind":"text"}`
		if h.structured {
			result = `{"kind":"structured","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}`
		}
		cmds = append(cmds, fmt.Sprintf(`{"id":%q,"path":["h",%q],"summary":"hostile","execute":{"mapping":"managed","program":"bin/%s","result":%s},"effects":{"class":"none"}}`,
			h.id, h.id, h.id, result))
		write(t, filepath.Join(rel, "bin", h.id), "#!/bin/sh\n"+h.script+"\n", 0o755)
	}
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.hostile","version":"1.0.0","publisher":"test","commands":[`+strings.Join(cmds, ",")+`]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":1500,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	core := invoke.New(filepath.Join(home, "data"))
	core.Grace = 300 * time.Millisecond
	return core, home
}

func write(t testing.TB, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestHostileExtensions(t *testing.T) {
	core, home := setup(t)
	for _, h := range hostile {
		t.Run(h.id, func(t *testing.T) {
			target, _, err := core.Resolve([]string{"h", h.id})
			if err != nil {
				t.Fatal(err)
			}
			pidfile := filepath.Join(home, h.id+".pid")
			var stdout bytes.Buffer
			req := &invoke.Request{Transport: invoke.TransportCLI, Stdout: &stdout, Dir: home,
				Env: []string{"PATH=" + os.Getenv("PATH")}}
			// PIDFILE reaches the script through the allowlist's absence:
			// pass it in the program's own environment via TMPDIR instead.
			req.Env = append(req.Env, "TMPDIR="+home)
			out, err := core.Invoke(context.Background(), target, withPidfile(req, pidfile))
			if err != nil {
				t.Fatalf("recording the outcome: %v", err)
			}
			if out.Outcome != h.outcome || out.Reason != h.reason || out.ExitStatus != h.exit {
				t.Errorf("outcome %s/%s exit %d (%s), want %s/%s exit %d", out.Outcome, out.Reason, out.ExitStatus, out.Message, h.outcome, h.reason, h.exit)
			}
			assertGone(t, pidfile)
			assertOneOutcome(t, core, out)
		})
	}
}

// withPidfile has the script learn its pid file from TMPDIR (an allowed
// variable), since the host passes nothing else of the caller's.
func withPidfile(req *invoke.Request, pidfile string) *invoke.Request {
	for i, kv := range req.Env {
		if strings.HasPrefix(kv, "TMPDIR=") {
			req.Env[i] = "TMPDIR=" + filepath.Dir(pidfile)
		}
	}
	return req
}

// assertGone checks that a process a script recorded is not running.
func assertGone(t *testing.T, pidfile string) {
	t.Helper()
	data, err := os.ReadFile(pidfile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	if syscall.Kill(pid, 0) == nil {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(stat, []byte(") Z ")) {
			t.Errorf("process %d was left behind", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// assertOneOutcome checks the store holds the same single outcome.
func assertOneOutcome(t *testing.T, core *invoke.Core, out *invoke.Outcome) {
	t.Helper()
	rec, err := core.Invocation(out.InvocationID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != out.Outcome || rec.Reason != out.Reason {
		t.Errorf("store has %s/%s, the caller got %s/%s", rec.Outcome, rec.Reason, out.Outcome, out.Reason)
	}
	var _ = store.MaxFinishedInvocations
}

// Ctrl-C (the caller's context) stops the command's whole group and is
// recorded as interrupted.
func TestInterrupt(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "sleeps-past-deadline"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	out, err := core.Invoke(ctx, target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != invoke.Cancelled || out.Reason != invoke.ReasonInterrupted {
		t.Errorf("outcome %s/%s, want cancelled/interrupted", out.Outcome, out.Reason)
	}
	assertOneOutcome(t, core, out)
}

// A program deleted after install fails to spawn; nothing runs.
func TestProgramDeleted(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(target.Release.Dir, "bin")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bin, "well-behaved")); err != nil {
		t.Fatal(err)
	}
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != invoke.ExecutionFailed || out.Reason != invoke.ReasonSpawnFailed {
		t.Errorf("outcome %s/%s, want execution_failed/spawn_failed", out.Outcome, out.Reason)
	}
	assertOneOutcome(t, core, out)
}

// The task preset's allow rules decide access with the declared resource
// template filled from typed inputs.
func TestAccessRules(t *testing.T) {
	home := testhome.TempDir(t)
	rel := filepath.Join(home, "src")
	write(t, filepath.Join(rel, "bin", "ok"), "#!/bin/sh\n"+complete+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.access","version":"1.0.0","publisher":"test",
	  "commands":[{"id":"read","path":["acc"],"summary":"s","inputs":[{"id":"env","type":"string","required":true}],
	    "execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},
	    "access":[{"action":"deploy.read","resource":"env:{env}"}],"effects":{"class":"read"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["test.*/*"],"deadlineMs":5000,"maxConcurrent":1,"enforcement":"host",
		  "allow":[{"action":"deploy.read","resource":"env:stage"}]}}}`)); err != nil {
		t.Fatal(err)
	}
	core := invoke.New(filepath.Join(home, "data"))
	target, _, err := core.Resolve([]string{"acc"})
	if err != nil {
		t.Fatal(err)
	}
	for env, want := range map[string]string{"stage": invoke.Succeeded, "prod": invoke.Rejected} {
		out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home,
			Stdout: &bytes.Buffer{}, CLIInputs: map[string][]string{"env": {env}}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Outcome != want || (want == invoke.Rejected && out.Reason != invoke.ReasonDenied) {
			t.Errorf("env %s: %s/%s (%s), want %s", env, out.Outcome, out.Reason, out.Message, want)
		}
	}
}

// A full task is refused as busy at once — no hidden queue — and a slot
// held by a host process that died is freed (host_lost), never re-run.
func TestBusyAndHostLost(t *testing.T) {
	core, home := setup(t)
	a := admin.New(filepath.Join(home, "data"))
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":1500,"maxConcurrent":1,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	slow, _, err := core.Resolve([]string{"h", "sleeps-past-deadline"})
	if err != nil {
		t.Fatal(err)
	}
	fast, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *invoke.Outcome)
	go func() {
		out, _ := core.Invoke(context.Background(), slow, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
		done <- out
	}()
	// Wait until the slow one holds the slot.
	for i := 0; ; i++ {
		invs, err := core.Invocations(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(invs) > 0 && invs[0].Open() {
			break
		}
		if i > 500 {
			t.Fatal("the slow invocation never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := core.Invoke(context.Background(), fast, &invoke.Request{Transport: invoke.TransportCLI, Dir: home, Stdout: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonBusy {
		t.Errorf("second call: %s/%s, want rejected/busy", out.Outcome, out.Reason)
	}
	<-done

	// An open record whose host is gone frees its slot as host_lost.
	s, err := store.Open(filepath.Join(home, "data", "store.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lost := &store.Invocation{ID: strings.Repeat("ab", 16), Identity: "test.hostile/well-behaved", Digest: fast.Release.Digest,
		Revision: fast.Revision, Transport: "cli", Task: "owner", PID: 1 << 30, StartedAt: time.Now()}
	err = s.Update(func(tx *store.Tx) error {
		return tx.BeginInvocation(lost, 1, func(*store.Invocation) bool { return true }, time.Now())
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err = core.Invoke(context.Background(), fast, &invoke.Request{Transport: invoke.TransportCLI, Dir: home, Stdout: &bytes.Buffer{}})
	if err != nil || out.Outcome != invoke.Succeeded {
		t.Fatalf("after a lost host: %v %s/%s", err, out.Outcome, out.Reason)
	}
	rec, err := core.Invocation(lost.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != invoke.ExecutionFailed || rec.Reason != invoke.ReasonHostLost {
		t.Errorf("lost record: %s/%s, want execution_failed/host_lost", rec.Outcome, rec.Reason)
	}
}

// A revision published before approval under host was refused still
// reads, but a call it keeps for approval under a host task is refused
// (enforcement_unavailable) and nothing runs: a host command could
// approve its own call (issue 25).
func TestApprovalUnderHostIsRefused(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := profile.Parse([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":1500,"maxConcurrent":8,"enforcement":"host","requireApproval":["none"]}}}`))
	if err != nil {
		t.Fatalf("a stored revision with approval under host must read: %v", err)
	}
	target.Profile = old
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonEnforcementUnavailable || !strings.Contains(out.Message, "could approve its own call; nothing was run") {
		t.Errorf("outcome %s/%s %q; want rejected/enforcement_unavailable", out.Outcome, out.Reason, out.Message)
	}
	assertOneOutcome(t, core, out)
}
