package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/internal/testpty"
)

// These tests replay, against a real rukhd over its real socket, what a
// same-uid client that forges the wire messages can send (issue 25,
// part 3): the daemon takes no pid number, no exit and no identity on its
// word.

// fcConnectEnv makes this test binary, started by the dead-connector
// test, connect the socket it got as fd 3 to the daemon socket named,
// say hello, read the answer and exit.
const (
	fcConnectEnv = "RUKH_FORGED_CONNECT"
	fcBuildEnv   = "RUKH_FORGED_BUILD"
)

func init() {
	if sock := os.Getenv(fcConnectEnv); sock != "" {
		os.Exit(fcConnectAndExit(sock, os.Getenv(fcBuildEnv)))
	}
}

func fcConnectAndExit(sock, build string) int {
	if err := syscall.Connect(3, &syscall.SockaddrUnix{Name: sock}); err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	f := os.NewFile(3, "connection")
	f.SetDeadline(time.Now().Add(dtHangGuard))
	if err := wire.Write(f, &wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: build, Name: "rukh"}}); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		return 1
	}
	if m, err := wire.Read(f); err != nil || m.Hello == nil {
		fmt.Fprintln(os.Stderr, "the daemon's hello:", m, err)
		return 1
	}
	return 0
}

// fcProfile: the CLI's task runs calls for 1 s, one at a time; task
// "gated" keeps destructive calls for the owner's approval (restricted:
// profiles refuse requireApproval under host).
const fcProfile = `{"endpointNamespace":"t","cli":{"task":"%s"},"mcp":{"expose":[],"task":"owner"},
	"tasks":{"short":{"commands":["*/*"],"deadlineMs":1000,"maxConcurrent":1,"enforcement":"host"},
	         "owner":{"commands":["*/*"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"host"},
	         "gated":{"commands":["*/*"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"restricted","requireApproval":["destructive"]}}}`

// fcNewHome is a home whose CLI task is task, served by a rukhd this test
// started (with rukh-sandbox beside it). Its release has `quick` (reports
// success) and `drop` (destructive), whose runs are counted.
func fcNewHome(t *testing.T, b *dtBins, task string) *dtHome {
	dir := testhome.TempDir(t)
	h := &dtHome{t: t, b: b, dir: dir, home: filepath.Join(dir, "home"), rukh: b.rukh}
	h.env = append(os.Environ(), "RUKH_HOME="+h.home)
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok"}}\n' "$RUKH_IPC_TOKEN" >&3` + "\n"
	rel := filepath.Join(dir, "src")
	testhome.WriteFiles(t, rel, map[string]string{
		"bin/quick": "#!/bin/sh\necho run >> " + dir + "/quick.runs\n" + report,
		"bin/drop":  "#!/bin/sh\necho run >> " + dir + "/drop.runs\n" + report,
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.forged","version":"1.0.0","publisher":"test","commands":[
			{"id":"quick","path":["quick"],"summary":"Quick","execute":{"mapping":"managed","program":"bin/quick","result":{"kind":"text"}},"effects":{"class":"none"}},
			{"id":"drop","path":["drop"],"summary":"Drop","execute":{"mapping":"managed","program":"bin/drop","result":{"kind":"text"}},"effects":{"class":"destructive"}}]}`,
	})
	a := testhome.InstallPinned(t, filepath.Join(h.home, "data"), rel)
	testhome.Apply(t, a, fmt.Sprintf(fcProfile, task))
	h.startDaemon(b.rukhd, b.build)
	return h
}

// fcConn is a raw client connection that says what a test makes it say.
type fcConn struct {
	t *testing.T
	f *os.File
	c *wire.Conn
}

func fcDial(t *testing.T, h *dtHome) *fcConn {
	t.Helper()
	f, err := wire.Dial(h.sock())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fc := &fcConn{t: t, f: f, c: wire.NewConn(f)}
	fc.send(&wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: h.b.build, Name: "rukh"}})
	if m, _ := fc.next("the daemon's hello"); m.Hello == nil {
		t.Fatalf("the daemon answered hello with %+v", m)
	}
	return fc
}

func (fc *fcConn) send(m *wire.Msg, files ...*os.File) {
	fc.t.Helper()
	if err := fc.c.Send(m, files...); err != nil {
		fc.t.Fatalf("send %+v: %v", m, err)
	}
}

// next reads the daemon's next frame, waiting at most dtHangGuard.
func (fc *fcConn) next(what string) (*wire.Msg, []*os.File) {
	fc.t.Helper()
	fc.f.SetReadDeadline(time.Now().Add(dtHangGuard))
	m, files, err := fc.c.Receive()
	if err != nil {
		fc.t.Fatalf("waiting for %s: %v", what, err)
	}
	fc.t.Cleanup(func() {
		for _, f := range files {
			f.Close()
		}
	})
	return m, files
}

// exec sends a command line with /dev/null as its streams.
func (fc *fcConn) exec(h *dtHome, args ...string) {
	fc.t.Helper()
	var std []*os.File
	for range 3 {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			fc.t.Fatal(err)
		}
		defer null.Close()
		std = append(std, null)
	}
	fc.send(&wire.Msg{Exec: &wire.Exec{Args: args, Dir: h.dir, Env: h.env}}, std...)
}

// spawn reads until the daemon asks this client to start the command,
// and returns the invocation id (the command's RUKH_INVOCATION_ID: the
// daemon says Started only once the begin record is durable, which may
// be after the Spawn, while the helper waits at its gate), the Spawn and
// its descriptors.
func (fc *fcConn) spawn() (string, *wire.Spawn, []*os.File) {
	fc.t.Helper()
	for {
		m, files := fc.next("the daemon's spawn")
		switch {
		case m.Spawn != nil:
			for _, kv := range m.Spawn.Env {
				if id, ok := strings.CutPrefix(kv, "RUKH_INVOCATION_ID="); ok {
					return id, m.Spawn, files
				}
			}
			fc.t.Fatalf("a spawn without RUKH_INVOCATION_ID: %q", m.Spawn.Env)
		case m.Exit != nil:
			fc.t.Fatalf("the command line ended (exit %d) before the daemon asked to start its command", m.Exit.Status)
		}
	}
}

// exit reads until the command line's exit status, which must come
// within bound.
func (fc *fcConn) exit(bound time.Duration, what string) int {
	fc.t.Helper()
	fc.f.SetReadDeadline(time.Now().Add(bound))
	for {
		m, files, err := fc.c.Receive()
		if err != nil {
			fc.t.Fatalf("waiting %s for the exit status of %s: %v", bound, what, err)
		}
		for _, f := range files {
			f.Close()
		}
		if m.Exit != nil {
			return m.Exit.Status
		}
	}
}

// forgeReport writes a valid completion report on the channel the daemon
// gave with sp: what the command would have said, with nothing run.
func forgeReport(t *testing.T, sp *wire.Spawn, files []*os.File) {
	t.Helper()
	token := ""
	for _, kv := range sp.Env {
		if v, ok := strings.CutPrefix(kv, "RUKH_IPC_TOKEN="); ok {
			token = v
		}
	}
	if token == "" || len(files) < 4 {
		t.Fatalf("spawn without a channel: %d descriptors, token %q", len(files), token)
	}
	report := `{"type":"complete","token":"` + token + `","status":"succeeded","commandResult":{"kind":"text","text":"forged"}}` + "\n"
	files[3].SetWriteDeadline(time.Now().Add(dtHangGuard))
	if _, err := files[3].WriteString(report); err != nil {
		t.Fatalf("writing the forged report: %v", err)
	}
}

// record is the invocation record id.
func fcRecord(h *dtHome, id string) dtRecord {
	h.t.Helper()
	var r dtRecord
	if err := json.Unmarshal([]byte(h.must("invocations", "show", id, "--json")), &r); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// fcUnrelated starts a `sleep` that is not this test's child (a shell
// with job control started it in a group of its own and exited), and
// returns its pid and a pidfd; the cleanup kills it.
func fcUnrelated(t *testing.T) (int, *os.File) {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -m; sleep 300 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("sh printed %q", out)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
		pidfd.Close()
	})
	if st := fcState(pid); st == 0 {
		t.Fatalf("sleep (pid %d) is gone at once", pid)
	}
	return pid, pidfd
}

// fcChild starts a child of this test — the forged client's own, so the
// daemon may accept it — in a group of its own, ignoring SIGTERM, SIGINT
// and SIGUSR1 (the helper's kill), so that only a SIGKILL ends it. It is
// not reaped until the cleanup, which kills its group.
func fcChild(t *testing.T) (*exec.Cmd, *os.File) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap "" TERM INT USR1; sleep 300; :`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		pidfd.Close()
	})
	return cmd, pidfd
}

// fcState is the state letter of process pid (0 when gone; 'Z' exited).
func fcState(pid int) byte {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || len(data) < i+3 {
		return 0
	}
	return data[i+2]
}

// fcUntouched fails the test unless process pid still runs, neither
// stopped nor killed.
func fcUntouched(t *testing.T, pid int, what string) {
	t.Helper()
	if st := fcState(pid); st != 'S' && st != 'R' {
		t.Errorf("%s (pid %d) was signalled: its state is %q", what, pid, st)
	}
}

// fcExited waits until pidfd's process has exited.
func fcExited(t *testing.T, pidfd *os.File, what string) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(pidfd.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(dtHangGuard/time.Millisecond))
	if err != nil || n == 0 {
		t.Fatalf("%s is still running after %s (%v)", what, dtHangGuard, err)
	}
}

// TestForgedClient replays each forgery of issue 25, part 3, as a raw
// client of a real rukhd; each subtest has its own home and daemon.
func TestForgedClient(t *testing.T) {
	b := dtBuild(t)
	if err := sandbox.Build(filepath.Join(b.dir, "rukh-sandbox")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *dtBins)
	}{
		{"SpawnedNamesAnUnrelatedProcess", testForgedUnrelated},
		{"SpawnedWithPidZero", testForgedPidZero},
		{"SpawnedWithPidOne", testForgedPidOne},
		{"SpawnedWithoutAPidfd", testForgedNoPidfd},
		{"SpawnedBeforeSpawn", testForgedEarly},
		{"SpawnedTwice", testForgedTwice},
		{"ExitedWhileRunning", testForgedExitedWhileRunning},
		{"NeverExited", testForgedNeverExited},
		{"GoneBeforeSpawned", testForgedGoneBeforeSpawned},
		{"DeadConnectorApproves", testForgedDeadConnector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.f(t, b)
		})
	}
}

// fcRefused checks that call id was recorded as never started
// (execution_failed/spawn_failed) with exit 70.
func fcRefused(t *testing.T, h *dtHome, id string, status int) {
	t.Helper()
	if status != 70 {
		t.Errorf("the command line exited %d, want 70 (the call could not start)", status)
	}
	if r := fcRecord(h, id); r.Outcome != "execution_failed" || r.Reason != "spawn_failed" {
		t.Errorf("the call is recorded %s/%s (%s), want execution_failed/spawn_failed", r.Outcome, r.Reason, r.Detail)
	}
}

// A Spawned whose pidfd names a process that is not the client's child
// (a forged report on the channel and an Exited 0 with it) is refused:
// the call never started, and the process gets no signal — not the
// helper's kill (SIGUSR1) the old daemon sent it at the end.
func testForgedUnrelated(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	pid, pidfd := fcUnrelated(t)
	fc := fcDial(t, h)
	fc.exec(h, "quick")
	id, sp, files := fc.spawn()
	forgeReport(t, sp, files)
	fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: pid}}, pidfd)
	fc.c.Send(&wire.Msg{Exited: &wire.Exited{Status: 0}}) // the daemon may have ended the line already
	fcRefused(t, h, id, fc.exit(dtHangGuard, "a call whose spawned named an unrelated process"))
	fcUntouched(t, pid, "the unrelated sleep")
	if n := h.runs("quick"); n != 0 {
		t.Errorf("the command ran %d times", n)
	}
}

// Pid 0 (the old daemon's kill(-0): its own group) with a pidfd that
// names another process: the claim and the pidfd disagree; refused,
// nothing signalled.
func testForgedPidZero(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	pid, pidfd := fcUnrelated(t)
	fc := fcDial(t, h)
	fc.exec(h, "quick")
	id, sp, _ := fc.spawn()
	fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: 0}}, pidfd)
	fc.c.Send(&wire.Msg{Exited: &wire.Exited{Status: 0}})
	fcRefused(t, h, id, fc.exit(dtHangGuard, "a call spawned as pid 0"))
	fcUntouched(t, pid, "the process the pidfd named")
}

// Pid 1 (the old daemon's kill(-1): every process of the user), with the
// pidfd of an unrelated process and with a pidfd of pid 1 itself:
// refused, nothing signalled; the daemon still serves.
func testForgedPidOne(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	pid, pidfd := fcUnrelated(t)
	fd, err := unix.PidfdOpen(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	init := os.NewFile(uintptr(fd), "pidfd of pid 1")
	defer init.Close()
	for _, named := range []*os.File{pidfd, init} {
		fc := fcDial(t, h)
		fc.exec(h, "quick")
		id, sp, _ := fc.spawn()
		fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: 1}}, named)
		fc.c.Send(&wire.Msg{Exited: &wire.Exited{Status: 0}})
		fcRefused(t, h, id, fc.exit(dtHangGuard, "a call spawned as pid 1 ("+named.Name()+")"))
	}
	fcUntouched(t, pid, "the unrelated sleep")
	if out := h.must("quick"); !strings.Contains(out, "ok") {
		t.Errorf("after the forgeries rukh quick printed %q", out)
	}
}

// A Spawned with a descriptor that is not a pidfd (/dev/null), and one
// with none at all: refused, recorded as never started.
func testForgedNoPidfd(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, files := range [][]*os.File{{null}, nil} {
		fc := fcDial(t, h)
		fc.exec(h, "quick")
		id, sp, chfiles := fc.spawn()
		forgeReport(t, sp, chfiles)
		self, _ := os.FindProcess(os.Getpid())
		fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: self.Pid}}, files...)
		fc.c.Send(&wire.Msg{Exited: &wire.Exited{Status: 0}})
		fcRefused(t, h, id, fc.exit(dtHangGuard, fmt.Sprintf("a call spawned with %d descriptors", len(files))))
	}
}

// A Spawned sent before the daemon asked for one (right after the
// command line) is out of order: the call fails before anything starts,
// and the client's process named by it is not signalled. The daemon
// may have sent its Spawn before it read the early frame; that frame
// lacks the Spawn's ticket, so it is told apart all the same (TestRoute
// makes the crossing itself).
func testForgedEarly(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	child, pidfd := fcChild(t)
	fc := fcDial(t, h)
	fc.exec(h, "quick")
	fc.send(&wire.Msg{Spawned: &wire.Spawned{PID: child.Process.Pid}}, pidfd)
	id := ""
	status := -2
	for status == -2 {
		m, files := fc.next("the end of a call whose spawned came first")
		switch {
		case m.Started != nil:
			id = m.Started.InvocationID
		case m.Spawn != nil:
			// The daemon asked before it read the early frame (they
			// crossed). An Exited 0 would end the call as a success
			// if it had taken that frame for the answer; it must not.
			for _, f := range files {
				f.Close()
			}
			fc.c.Send(&wire.Msg{Exited: &wire.Exited{Status: 0}})
		case m.Exit != nil:
			status = m.Exit.Status
		}
	}
	fcRefused(t, h, id, status)
	fcUntouched(t, child.Process.Pid, "the client's child named by the early spawned")
}

// A second Spawned is a protocol fault: the command the first named is
// killed and the call fails, whatever report and Exited follow.
func testForgedTwice(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	child, pidfd := fcChild(t)
	fc := fcDial(t, h)
	fc.exec(h, "quick")
	id, sp, files := fc.spawn()
	forgeReport(t, sp, files)
	fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: child.Process.Pid}}, pidfd)
	fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: child.Process.Pid}}, pidfd)
	fc.c.Send(&wire.Msg{Exited: &wire.Exited{Status: 0}})
	status := fc.exit(dtHangGuard, "a call spawned twice")
	if r := fcRecord(h, id); r.Outcome != "execution_failed" {
		t.Errorf("spawned twice: recorded %s/%s (%s), exit %d; want execution_failed", r.Outcome, r.Reason, r.Detail, status)
	}
	fcExited(t, pidfd, "the command of a call spawned twice")
}

// A forged report and an Exited 0 for the client's own child while it
// still runs: the daemon believes the kernel, not the client — the call
// is killed and recorded execution_failed, never succeeded.
func testForgedExitedWhileRunning(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	child, pidfd := fcChild(t)
	fc := fcDial(t, h)
	fc.exec(h, "drop")
	id, sp, files := fc.spawn()
	forgeReport(t, sp, files)
	fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: child.Process.Pid}}, pidfd)
	fc.send(&wire.Msg{Exited: &wire.Exited{Status: 0}})
	status := fc.exit(dtHangGuard, "a call whose client said it exited while it ran")
	if r := fcRecord(h, id); r.Outcome != "execution_failed" || status == 0 {
		t.Errorf("an Exited 0 while the command ran: recorded %s/%s (%s), exit %d; want execution_failed", r.Outcome, r.Reason, r.Detail, status)
	}
	fcExited(t, pidfd, "the command the client said had exited")
	if n := h.runs("drop"); n != 0 {
		t.Errorf("the destructive command ran %d times", n)
	}
}

// A client that goes away once the daemon asked it to start the command
// and before it said it did: what a Ctrl-C does to the thin client
// before it catches its signals. The call is recorded cancelled/
// interrupted, not as a command that could not start, and nothing ran.
func testForgedGoneBeforeSpawned(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "owner")
	fc := fcDial(t, h)
	fc.exec(h, "drop")
	id, _, files := fc.spawn()
	for _, f := range files {
		f.Close()
	}
	fc.f.Close()
	out := h.must("invocations", "wait", id, "--timeout", "30s", "--json")
	if r := fcRecord(h, id); r.Outcome != "cancelled" || r.Reason != "interrupted" {
		t.Errorf("recorded %s/%s (%s), want cancelled/interrupted; wait printed %s", r.Outcome, r.Reason, r.Detail, out)
	}
	if n := h.runs("drop"); n != 0 {
		t.Errorf("the destructive command ran %d times", n)
	}
}

// A client that never sends Exited and keeps the channel and the
// helper's report pipe open, for a command that ignores SIGTERM and the
// helper's kill: the daemon ends the call itself, bounded — the deadline
// (1 s), the grace, its own SIGKILL through the pidfd, a bound for an
// Exited that never comes — records it cancelled/deadline and frees its
// slot: the next call of the task (one at a time) runs.
func testForgedNeverExited(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "short")
	child, pidfd := fcChild(t)
	fc := fcDial(t, h)
	fc.exec(h, "quick")
	id, sp, files := fc.spawn() // kept open: the channel and the report pipe
	_ = files
	fc.send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: child.Process.Pid}}, pidfd)
	const bound = 20 * time.Second // 1 s deadline + 2 s grace + 2×3 s kill bounds + 2 s for Exited, and slack
	start := time.Now()
	status := fc.exit(bound, "a call whose client never says its command exited")
	t.Logf("the call ended after %s", time.Since(start).Round(time.Millisecond))
	if r := fcRecord(h, id); r.Outcome != "cancelled" || r.Reason != "deadline" || status != 124 {
		t.Errorf("recorded %s/%s (%s), exit %d; want cancelled/deadline, 124", r.Outcome, r.Reason, r.Detail, status)
	}
	fcExited(t, pidfd, "the command the daemon killed at the deadline")
	if out, errOut, code := h.run("quick"); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("the next call of the task: exit %d, %q %q; want it admitted and run", code, out, errOut)
	}
}

// The dead connector: a child connects, says hello and exits, and is
// reaped; its parent sends `exec approve ID` on that connection with a
// terminal as fds 0–2 and "yes" typed. The peer the daemon named at
// accept is gone: refused with 77, nothing approved.
func testForgedDeadConnector(t *testing.T, b *dtBins) {
	h := fcNewHome(t, b, "gated")
	if _, errOut, code := h.run("drop"); code != 77 || !strings.Contains(errOut, "approve") {
		t.Fatalf("rukh drop under a gated task: exit %d, %q; want 77 asking for an approval", code, errOut)
	}
	id := fcPendingApproval(t, h)

	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := os.NewFile(uintptr(fd), "forged connection")
	t.Cleanup(func() { conn.Close() })
	connector := exec.Command(os.Args[0], "-test.run=^$")
	connector.Env = append(os.Environ(), fcConnectEnv+"="+h.sock(), fcBuildEnv+"="+b.build)
	connector.ExtraFiles = []*os.File{conn}
	if out, err := connector.CombinedOutput(); err != nil { // reaped
		t.Fatalf("the connector: %v\n%s", err, out)
	}

	master, slave := testpty.Open(t)
	defer master.Close()
	if _, err := master.WriteString("yes\n"); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, master)
	fc := &fcConn{t: t, f: conn, c: wire.NewConn(conn)}
	fc.send(&wire.Msg{Exec: &wire.Exec{Args: []string{"approve", id}, Dir: h.dir, Env: h.env}}, slave, slave, slave)
	slave.Close()
	if status := fc.exit(dtHangGuard, "approve sent on a dead connector's connection"); status != 77 {
		t.Errorf("approve on a dead connector's connection: exit %d, want 77", status)
	}
	if got := fcPendingApproval(t, h); got != id {
		t.Errorf("the approval asked for is %s, want %s still pending", got, id)
	}
}

// fcPendingApproval is the one approval waiting for an answer.
func fcPendingApproval(t *testing.T, h *dtHome) string {
	t.Helper()
	var as []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	out := h.must("approve", "--list", "--all", "--json")
	if err := json.Unmarshal([]byte(out), &as); err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 {
		t.Fatalf("approvals: %s; want one", out)
	}
	if as[0].Status != "pending" {
		t.Errorf("approval %s is %s, want pending (nothing approved)", as[0].ID, as[0].Status)
	}
	return as[0].ID
}
