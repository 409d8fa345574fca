package tests

import (
	"encoding/json"
	"fmt"
	"github.com/rukh-cli/rukh/internal/testhome"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Daemons started at the same instant for one home: exactly one serves;
// every other exits 75 saying a daemon answers (or does not answer yet)
// and removes nothing, so the one that serves keeps its socket.
func TestDaemonsStartedAtOnce(t *testing.T) {
	rukh, rukhd := hostBinaries(t)
	dir := testhome.TempDir(t)
	env := append(os.Environ(), "RUKH_HOME="+filepath.Join(dir, "home"))
	run := func(args ...string) ([]byte, error) {
		c := exec.Command(rukh, args...)
		c.Env = env
		return c.CombinedOutput()
	}
	for round := range 3 {
		type proc struct {
			cmd    *exec.Cmd
			exited chan struct{}
		}
		procs := make([]proc, 4)
		ready := newReadiness(t) // the one that serves notifies READY=1
		for i := range procs {
			cmd := exec.Command(rukhd)
			cmd.Env = append(env[:len(env):len(env)], ready.env())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			p := proc{cmd, make(chan struct{})}
			go func() { cmd.Wait(); close(p.exited) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-p.exited })
			procs[i] = p
		}
		// The one that serves answers status with its own pid.
		ready.wait(t, fmt.Sprintf("round %d: one of the daemons", round), nil)
		var st struct{ PID int }
		out, err := run("daemon", "status", "--json")
		if err == nil {
			err = json.Unmarshal(out, &st)
		}
		if err != nil {
			t.Fatalf("round %d: no daemon answered `rukh daemon status`: %v: %s", round, err, out)
		}
		var serving *proc
		for i := range procs {
			if procs[i].cmd.Process.Pid == st.PID {
				serving = &procs[i]
			}
		}
		if serving == nil {
			t.Fatalf("round %d: status names pid %d, which is none of the daemons started", round, st.PID)
		}
		// Every other one gives up (75) while it serves: one that were
		// still starting when it stopped would rightly take its place.
		for _, p := range procs {
			if p.cmd == serving.cmd {
				continue
			}
			select {
			case <-p.exited:
				if code := p.cmd.ProcessState.ExitCode(); code != 75 {
					t.Errorf("round %d: a second daemon exited %d, want 75", round, code)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: a second daemon (pid %d) still runs 30 s after pid %d began serving", round, p.cmd.Process.Pid, st.PID)
			}
		}
		if out, err := run("daemon", "stop"); err != nil {
			t.Fatalf("round %d: daemon stop: %v: %s", round, err, out)
		}
		select {
		case <-serving.exited:
			if code := serving.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("round %d: the serving daemon exited %d", round, code)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the serving daemon still runs 30 s after `daemon stop` returned", round)
		}
		// Nothing is left holding the store.
		if out, err := run("ext", "list"); err != nil || strings.Contains(string(out), "locked") {
			t.Fatalf("round %d: after stop: %v: %s", round, err, out)
		}
	}
}

// `rukh daemon start` writes the daemon's log only into a private runtime
// dir of this user's, and never through a link planted there: before, it
// created the dir and opened rukhd.log following symlinks, appending to a
// file of the planter's choosing.
func TestDaemonLogIsNeverFollowed(t *testing.T) {
	rukh, _ := hostBinaries(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	runtime := filepath.Join(home, "run")
	if err := os.MkdirAll(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("untouched\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(runtime, "rukhd.log")); err != nil {
		t.Fatal(err)
	}
	run := func() (string, int) {
		cmd := exec.Command(rukh, "daemon", "start")
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		out, _ := cmd.CombinedOutput()
		t.Cleanup(func() {
			stop := exec.Command(rukh, "daemon", "stop")
			stop.Env = cmd.Env
			stop.Run()
		})
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run()
	if code != 75 || !strings.Contains(out, "rukhd.log is a symbolic link; remove it") {
		t.Errorf("daemon start with a planted link: exit %d: %s", code, out)
	}
	if data, _ := os.ReadFile(victim); string(data) != "untouched\n" {
		t.Errorf("the link's target was written: %q", data)
	}
	os.Remove(filepath.Join(runtime, "rukhd.log"))
	if err := os.Chmod(runtime, 0o777); err != nil {
		t.Fatal(err)
	}
	out, code = run()
	if code != 75 || !strings.Contains(out, "may be written by others") {
		t.Errorf("daemon start with a runtime dir open to others: exit %d: %s", code, out)
	}
	if _, err := os.Lstat(filepath.Join(runtime, "rukhd.log")); err == nil {
		t.Errorf("a log was created in a runtime dir open to others")
	}
}

// rukhd keeps serving when connections exhaust its descriptors: with a
// descriptor limit of 64, 200 idle connections (none says hello) meet the
// connection limit or a failed accept; those past the limit are told busy
// (exit 75 for a client), accepts that fail are retried after a pause, and
// once the idle connections go the daemon answers as before — before, the
// first accept error ended Serve and the daemon exited, interrupting what
// it ran.
func TestDaemonSurvivesDescriptorExhaustion(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Fatalf("prlimit (util-linux) is needed: %v", err)
	}
	rukh, rukhd := hostBinaries(t)
	home := filepath.Join(t.TempDir(), "home")
	env := append(os.Environ(), "RUKH_HOME="+home)
	d, exited := startReadyDaemon(t, env, nil, "prlimit", "--nofile=64", rukhd)
	status := func() (string, int) {
		c := exec.Command(rukh, "daemon", "status")
		c.Env = env
		out, _ := c.CombinedOutput()
		return string(out), c.ProcessState.ExitCode()
	}
	if out, code := status(); code != 0 || !strings.Contains(out, "rukhd is running") {
		t.Fatalf("rukhd notified READY=1 but daemon status says: exit %d: %s", code, out)
	}
	sock := filepath.Join(home, "run", "rukhd.sock")
	var idle []net.Conn
	for range 200 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			break // the backlog is full: the daemon is not accepting fast enough, which is fine
		}
		idle = append(idle, c)
	}
	out, code := status()
	if code != 0 && (code != 75 || !strings.Contains(out, "its limit; retry")) {
		t.Errorf("daemon status with %d idle connections: exit %d: %s", len(idle), code, out)
	}
	// Each idle connection ends its side and waits until the daemon ends
	// its own (it reads the end once it accepted the connection, or tells
	// it busy): then the daemon holds none of them, and has freed their
	// slots (before it closes a connection).
	for _, c := range idle {
		c.(*net.UnixConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(dtHangGuard))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("an idle connection did not end within %s of its end: %v", dtHangGuard, err)
		}
		c.Close()
	}
	select {
	case <-exited:
		t.Fatalf("rukhd exited (%v) under descriptor exhaustion", d.ProcessState)
	default:
	}
	if out, code := status(); code != 0 || !strings.Contains(out, "rukhd is running") {
		t.Fatalf("rukhd does not answer once the idle connections are gone: exit %d: %s", code, out)
	}
	stop := exec.Command(rukh, "daemon", "stop")
	stop.Env = env
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("daemon stop: %v: %s", err, out)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("rukhd still runs 30 s after daemon stop")
	}
}

// A flood of bad connections is logged at a bounded rate — ten, then
// one a minute with how many were left out — not a line each (before: one
// WARN per connection, 23,844 lines in one run).
func TestDaemonWarningsAreRateLimited(t *testing.T) {
	_, rukhd := hostBinaries(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	logPath := filepath.Join(dir, "rukhd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d, exited := startReadyDaemon(t, append(os.Environ(), "RUKH_HOME="+home), logf, rukhd)
	sock := filepath.Join(home, "run", "rukhd.sock")
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("rukhd notified READY=1 but does not listen: %v", err)
	}
	for i := range 300 {
		if i > 0 {
			if c, err = net.Dial("unix", sock); err != nil {
				t.Fatal(err)
			}
		}
		c.Write([]byte{0, 0, 0, 3, 0xff, 0xff, 0xff}) // not CBOR
		io.Copy(io.Discard, c)                        // its refusal, then EOF
		c.Close()
	}
	d.Process.Signal(syscall.SIGTERM)
	<-exited
	data, _ := os.ReadFile(logPath)
	if n := strings.Count(string(data), "level=WARN"); n < 1 || n > 11 {
		t.Errorf("%d warnings for 300 bad connections, want 1 to 11:\n%s", n, data)
	}
}

// Frames being read share one budget (64 MiB): 200 connections that each
// send 1 MiB of a 4 MiB frame and stall cannot make the daemon hold 200
// MiB — past the budget they are refused — and it answers throughout
// (before, each held what it announced, with no bound across connections:
// 500 such connections made rukhd 2,044 MiB resident).
func TestDaemonFrameBudget(t *testing.T) {
	_, rukhd := hostBinaries(t)
	home := filepath.Join(t.TempDir(), "home")
	env := append(os.Environ(), "RUKH_HOME="+home)
	d, _ := startReadyDaemon(t, env, nil, rukhd)
	// rss reads the daemon's resident memory from the kernel: while the
	// budget is spent the daemon refuses new frames, status's too.
	rss := func() int64 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var n int64
				fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), &n)
				return n << 10
			}
		}
		t.Fatalf("no VmRSS in /proc/%d/status", d.Process.Pid)
		return 0
	}
	before := rss()
	sock := filepath.Join(home, "run", "rukhd.sock")
	chunk := make([]byte, 1<<20)
	var wg sync.WaitGroup
	for range 200 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			c.Write([]byte{0x00, 0x40, 0x00, 0x00}) // 4 MiB announced
			c.Write(chunk)                          // 1 MiB sent, or refused past the budget
		}()
	}
	wg.Wait()
	if after := rss(); after-before > 160<<20 {
		t.Errorf("200 connections sending 1 MiB each of a 4 MiB frame grew rukhd from %d to %d MiB resident", before>>20, after>>20)
	}
}

// A call that runs in-process when rukhd starts finishes and is recorded
// at once: the daemon holds the store from then on, so the call's host
// saves its outcome aside and has the daemon commit it (wire settle).
// Before, its host waited for a lock the daemon never releases (10 s),
// retried (15 s more), and left its record open with a warning.
func TestCallInFlightWhenDaemonStarts(t *testing.T) {
	rukh, rukhd := hostBinaries(t)
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "rel")
	testhome.WriteFiles(t, rel, map[string]string{
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"t.gate","version":"1.0.0","publisher":"t","commands":[
		 {"id":"gate","path":["gate"],"summary":"Wait for a file","execute":{"mapping":"passthrough","program":"bin/gate"},"effects":{"class":"none"}}]}`,
		"bin/gate": "#!/bin/sh\n: > \"$1.started\"\nwhile [ ! -e \"$1\" ]; do sleep 0.01; done\necho through\n",
	})
	home := filepath.Join(dir, "home")
	testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	env := append(os.Environ(), "RUKH_HOME="+home)
	gate := filepath.Join(dir, "gate")

	client := exec.Command(rukh, "gate", gate)
	client.Env = env
	var stdout, stderr strings.Builder
	client.Stdout, client.Stderr = &stdout, &stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { client.Wait(); close(exited) }()
	t.Cleanup(func() { client.Process.Kill(); <-exited })
	waitFile(t, gate+".started", "the in-process call's start")

	startReadyDaemon(t, env, nil, rukhd)
	st := exec.Command(rukh, "daemon", "status")
	st.Env = env
	if out, err := st.CombinedOutput(); err != nil {
		t.Fatalf("rukhd notified READY=1 but daemon status failed: %v: %s", err, out)
	}

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the in-process call did not end within 60 s of its gate opening")
	}
	if code := client.ProcessState.ExitCode(); code != 0 || stdout.String() != "through\n" || stderr.String() != "" {
		t.Errorf("the in-process call: exit %d, stdout %q, stderr %q; want 0, its output and no warning", code, stdout.String(), stderr.String())
	}
	list := exec.Command(rukh, "invocations", "list", "--json", "-n", "1")
	list.Env = env
	out, err := list.Output()
	var recs []struct {
		Command, Outcome string
	}
	if err != nil || json.Unmarshal(out, &recs) != nil || len(recs) != 1 || recs[0].Command != "t.gate/gate" || recs[0].Outcome != "succeeded" {
		t.Errorf("the record of the call, through the daemon: %s (%v); want succeeded, recorded before the client exited", out, err)
	}
	if left, _ := filepath.Glob(filepath.Join(home, "data", "pending-outcomes", "*.json")); len(left) != 0 {
		t.Errorf("outcomes left saved aside: %v", left)
	}
	stop := exec.Command(rukh, "daemon", "stop")
	stop.Env = env
	if out, err := stop.CombinedOutput(); err != nil {
		t.Errorf("daemon stop: %v: %s", err, out)
	}
}

// With RUKH_DAEMON=auto (the owner's opt-in), the first command line
// starts rukhd and runs through it; without it, none is ever started.
func TestDaemonStartedOnFirstUse(t *testing.T) {
	rukh, _ := hostBinaries(t)
	home := filepath.Join(t.TempDir(), "home")
	env := append(os.Environ(), "RUKH_HOME="+home)
	run := func(extra string, args ...string) (string, int) {
		c := exec.Command(rukh, args...)
		c.Env = env
		if extra != "" {
			c.Env = append(c.Env, extra)
		}
		out, _ := c.CombinedOutput()
		return string(out), c.ProcessState.ExitCode()
	}
	if out, code := run("", "ext", "list"); code != 0 {
		t.Fatalf("ext list: %d %s", code, out)
	}
	if out, code := run("", "daemon", "status"); code != 69 {
		t.Fatalf("without the opt-in a daemon was started: %d %s", code, out)
	}
	t.Cleanup(func() { run("", "daemon", "stop") })
	if out, code := run("RUKH_DAEMON=auto", "ext", "list"); code != 0 || !strings.Contains(out, "no releases installed") {
		t.Fatalf("ext list with RUKH_DAEMON=auto: %d %s", code, out)
	}
	out, code := run("", "doctor")
	if code != 0 || !strings.Contains(out, "host:    daemon") {
		t.Errorf("after the first use with the opt-in, doctor says (exit %d):\n%s", code, out)
	}
}

// startProcess starts the command args with env (its output to out, or
// nowhere) and kills it when the test ends; the channel is closed once it
// has exited.
// startReadyDaemon starts a daemon as startProcess does and waits until it
// notifies READY=1 (readiness).
func startReadyDaemon(t *testing.T, env []string, out io.Writer, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	r := newReadiness(t)
	cmd, exited := startProcess(t, append(env[:len(env):len(env)], r.env()), out, args...)
	r.wait(t, strings.Join(args, " "), exited)
	return cmd, exited
}

func startProcess(t *testing.T, env []string, out io.Writer, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, exited
}
