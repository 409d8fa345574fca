package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/thin"
)

// The stamps the daemon tests link into their binaries: every binary of
// the shared set is build B; one extra rukhd is build A.
const (
	dtStampVar = "github.com/rukh-cli/rukh/internal/buildid.stamp"
	dtStampA   = "daemon-test-A"
	dtStampB   = "daemon-test-B"
)

// dtHangGuard bounds every wait of these tests: far longer than anything
// should take, so only a hang trips it.
const dtHangGuard = 60 * time.Second

// dtPeekEnv makes this test binary, started as another user by the
// OtherUser test, connect to the socket it names, print the first frame
// the daemon sends ("CODE: MESSAGE") and exit, before any test runs.
const dtPeekEnv = "RUKH_DAEMON_TEST_PEEK"

// dtReaperEnv makes this test binary a child subreaper that never reaps
// an orphan — a container's init at its laziest — and run
// `$dtReaperEnv daemon start` and then `… daemon stop` under it, printing
// each exit status.
const dtReaperEnv = "RUKH_DAEMON_TEST_REAPER"

func init() {
	if sock := os.Getenv(dtPeekEnv); sock != "" {
		os.Exit(dtPeek(sock))
	}
	if rukh := os.Getenv(dtReaperEnv); rukh != "" {
		os.Exit(dtLazyReaper(rukh))
	}
}

func dtLazyReaper(rukh string) int {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Println("prctl:", errno)
		return 1
	}
	for _, args := range [][]string{{"daemon", "start"}, {"daemon", "stop"}} {
		cmd := exec.Command(rukh, args...)
		cmd.Stderr = os.Stdout
		cmd.Run() // waits for rukh's pid only: the orphaned rukhd stays a zombie once it exits
		fmt.Printf("%s: exit %d\n", strings.Join(args, " "), cmd.ProcessState.ExitCode())
	}
	return 0
}

func dtPeek(sock string) int {
	c, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	m, err := wire.Read(c)
	switch {
	case err != nil:
		fmt.Println("read:", err)
		return 1
	case m.Error == nil:
		fmt.Println("not an error frame")
		return 1
	}
	fmt.Printf("%s: %s\n", m.Error.Code, m.Error.Message)
	return 0
}

// dtBins are the binaries every daemon test runs, built once.
type dtBins struct {
	dir    string // rukh and rukhd of build B
	rukh   string
	rukhd  string
	build  string // build B's id
	rukhdA string // rukhd of build A, in a directory of its own
	buildA string
}

// TestDaemon runs real rukhd processes — started by hand, by
// `rukh daemon start` and by systemd-socket-activate — against real rukh
// clients, each subtest with its own RUKH_HOME, and checks exit statuses,
// messages, invocation records and which process ran each command (an
// extension that reports its $PPID).
func TestDaemon(t *testing.T) {
	b := dtBuild(t)
	for _, tc := range []struct {
		name string
		f    func(*testing.T, *dtBins)
	}{
		{"SocketActivation", testDaemonSocketActivation},
		{"OtherUser", testDaemonOtherUser},
		{"KilledMidCall", testDaemonKilledMidCall},
		{"ClientKilledMidCall", testDaemonClientKilledMidCall},
		{"RestartUnderMCP", testDaemonRestartUnderMCP},
		{"BuildMismatch", testDaemonBuildMismatch},
		{"ReplacedBinary", testDaemonReplacedBinary},
		{"DrainHandsOver", testDaemonDrainHandsOver},
		{"Hung", testDaemonHung},
		{"BadFrames", testDaemonBadFrames},
		{"Doctor", testDaemonDoctor},
		{"StopUnreaped", testDaemonStopUnreaped},
		{"SymlinkedHome", testDaemonSymlinkedHome},
		{"JournalGap", testDaemonJournalGap},
		{"Processors", testDaemonProcessors},
		{"TimerSlack", testDaemonTimerSlack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.f(t, b)
		})
	}
}

func dtBuild(t *testing.T) *dtBins {
	dir := testhome.TempDir(t)
	b := &dtBins{dir: filepath.Join(dir, "bin"), rukhdA: filepath.Join(dir, "a", "rukhd")}
	b.rukh, b.rukhd = filepath.Join(b.dir, "rukh"), filepath.Join(b.dir, "rukhd")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, bld := range []struct{ out, pkg, stamp string }{
		{b.rukh, "../cmd/rukh", dtStampB}, {b.rukhd, "../cmd/rukhd", dtStampB}, {b.rukhdA, "../cmd/rukhd", dtStampA},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", "build", "-ldflags", "-X "+dtStampVar+"="+bld.stamp, "-o", bld.out, bld.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("go build %s: %v\n%s", bld.pkg, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.build = dtVersion(t, b.rukhd)
	b.buildA = dtVersion(t, b.rukhdA)
	if !strings.HasSuffix(b.build, "/"+dtStampB) || !strings.HasSuffix(b.buildA, "/"+dtStampA) {
		t.Fatalf("build ids %q and %q do not carry the linked stamps", b.build, b.buildA)
	}
	return b
}

// dtVersion is the build id `rukhd version` prints.
func dtVersion(t *testing.T, rukhd string) string {
	t.Helper()
	out, err := exec.Command(rukhd, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", rukhd, err)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "rukhd ")
	if !ok {
		t.Fatalf("%s version printed %q", rukhd, out)
	}
	return id
}

// dtNeed skips a test that needs something this machine lacks, but fails
// it under CI, which provides everything (.ci/run).
func dtNeed(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format+" (CI must provide it: see .ci/run)", args...)
	}
	t.Skipf(format, args...)
}

// dtHome is one test's RUKH_HOME with the test release installed: `ppid`
// reports its parent's pid as its text result and appends it to
// ppid.runs; `slow` appends to slow.runs, writes "PID INVOCATION-ID
// TIMER-SLACK" to slow.pid and sleeps.
type dtHome struct {
	t    *testing.T
	b    *dtBins
	dir  string // the test's directory; the extension writes here
	home string
	rukh string
	env  []string
}

func dtNewHome(t *testing.T, b *dtBins) *dtHome {
	dir := testhome.TempDir(t)
	h := &dtHome{t: t, b: b, dir: dir, home: filepath.Join(dir, "home"), rukh: b.rukh}
	h.env = append(os.Environ(), "RUKH_HOME="+h.home)
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"%s"}}\n' "$RUKH_IPC_TOKEN" `
	rel := filepath.Join(dir, "src")
	testhome.WriteFiles(t, rel, map[string]string{
		"bin/ppid": "#!/bin/sh\necho $PPID >> " + dir + "/ppid.runs\n" + report + `"$PPID" >&3` + "\n",
		"bin/slow": "#!/bin/sh\necho run >> " + dir + "/slow.runs\necho $$ $RUKH_INVOCATION_ID $(cat /proc/self/timerslack_ns) > " + dir + "/slow.tmp\nmv " + dir + "/slow.tmp " + dir + "/slow.pid\nsleep 120\n" + report + "done >&3\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.daemon","version":"1.0.0","publisher":"test","commands":[
			{"id":"ppid","path":["ppid"],"summary":"Ppid","execute":{"mapping":"managed","program":"bin/ppid","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
			{"id":"slow","path":["slow"],"summary":"Slow","execute":{"mapping":"managed","program":"bin/slow","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
	})
	a := testhome.InstallPinned(t, filepath.Join(h.home, "data"), rel)
	testhome.Apply(t, a, `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.daemon/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"}}}`)
	return h
}

// slowStarted waits until `rukh slow` has started and returns the pid
// of its shell and its invocation id.
func (h *dtHome) slowStarted() (pid int, id string) {
	h.t.Helper()
	name := filepath.Join(h.dir, "slow.pid") // renamed into place when whole
	waitFile(h.t, name, "the slow command's pid file")
	data, err := os.ReadFile(name)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(data), &pid, &id); err != nil {
		h.t.Fatalf("slow.pid: %q: %v", data, err)
	}
	return pid, id
}

// startSlow starts `rukh slow` in the background, its output discarded.
func (h *dtHome) startSlow() *exec.Cmd {
	h.t.Helper()
	os.Remove(filepath.Join(h.dir, "slow.pid")) // slowStarted waits for the new one
	client := exec.Command(h.rukh, "slow")
	client.Env = h.env
	client.Stdout, client.Stderr = io.Discard, io.Discard
	if err := client.Start(); err != nil {
		h.t.Fatal(err)
	}
	return client
}

func (h *dtHome) sock() string { return filepath.Join(h.home, "run", "rukhd.sock") }

// run runs rukh ARGS and returns its stdout, stderr and exit status.
func (h *dtHome) run(args ...string) (string, string, int) {
	h.t.Helper()
	return h.runAs(nil, args...)
}

// runAs runs rukh ARGS behind the wrapper argv prefix (e.g. setpriv …).
func (h *dtHome) runAs(prefix []string, args ...string) (string, string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	argv := append(append(append([]string{}, prefix...), h.rukh), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // output a stray grandchild holds does not hold us
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		h.t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	if ctx.Err() != nil {
		h.t.Fatalf("%s hung (killed after %s)", strings.Join(argv, " "), dtHangGuard)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// must runs rukh ARGS, requires exit status 0 and returns stdout.
func (h *dtHome) must(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("rukh %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// ppid runs `rukh ppid` and returns the pid of the host that ran the
// command, and that of the client.
//
// The command itself is always the client's child (a CLI command runs in
// the caller's job; through rukhd the client starts it, ADR 0008), which
// ppid requires; the host is the process its record names.
func (h *dtHome) ppid() (host, client int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.rukh, "ppid")
	cmd.Env = h.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("rukh ppid: %v\n%s", err, stderr.String())
	}
	parent, err := strconv.Atoi(string(out))
	if err != nil {
		h.t.Fatalf("rukh ppid printed %q: %v", out, err)
	}
	if parent != cmd.Process.Pid {
		h.t.Errorf("the command ran under pid %d, not its client %d", parent, cmd.Process.Pid)
	}
	var recs []struct {
		Command string `json:"command"`
		HostPID int    `json:"hostPid"`
	}
	if err := json.Unmarshal([]byte(h.must("invocations", "list", "--json", "-n", "1")), &recs); err != nil || len(recs) != 1 || recs[0].Command != "test.daemon/ppid" {
		h.t.Fatalf("the record of rukh ppid: %+v, %v", recs, err)
	}
	return recs[0].HostPID, cmd.Process.Pid
}

// runs reads how many times the extension command name ran.
func (h *dtHome) runs(name string) int {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.dir, name+".runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

type dtStatus struct {
	PID         int    `json:"pid"`
	Build       string `json:"build"`
	Socket      string `json:"socket"`
	Activated   bool   `json:"activated"`
	InFlight    int    `json:"inFlight"`
	Connections int    `json:"connections"`
	Pending     int    `json:"pendingOutcomes"`
	WriteError  string `json:"storeWriteError"`
	Draining    bool   `json:"draining"`
}

func (h *dtHome) status() dtStatus {
	h.t.Helper()
	var st dtStatus
	if err := json.Unmarshal([]byte(h.must("daemon", "status", "--json")), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

type dtRecord struct {
	ID         string `json:"id"`
	Command    string `json:"command"`
	Transport  string `json:"transport"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason"`
	ExitStatus int    `json:"exitStatus"`
	Detail     string `json:"detail"`
}

// invocations lists every kept record, newest first.
func (h *dtHome) invocations() []dtRecord {
	h.t.Helper()
	var recs []dtRecord
	if err := json.Unmarshal([]byte(h.must("invocations", "list", "--json", "-n", "0")), &recs); err != nil {
		h.t.Fatal(err)
	}
	return recs
}

type dtDoctor struct {
	Host         string `json:"host"`
	HostReason   string `json:"hostReason"`
	Processors   int    `json:"processors"`
	TimerSlackNs int64  `json:"timerSlackNs"`
	Socket       string `json:"socket"`
	StoreOK      bool   `json:"storeOk"`
	Pending      int    `json:"pendingOutcomes"`
}

func (h *dtHome) doctor() dtDoctor {
	h.t.Helper()
	var d dtDoctor
	if err := json.Unmarshal([]byte(h.must("doctor", "--json")), &d); err != nil {
		h.t.Fatal(err)
	}
	if !d.StoreOK || d.Socket != h.sock() {
		h.t.Errorf("doctor: %+v", d)
	}
	return d
}

// stopByCLI registers a cleanup that stops whatever daemon serves the
// home with `rukh daemon stop` (for daemons `rukh daemon start` started).
func (h *dtHome) stopByCLI() {
	h.t.Cleanup(func() {
		if _, errOut, code := h.run("daemon", "stop"); code != 0 {
			h.t.Errorf("rukh daemon stop: exit %d: %s", code, errOut)
		}
	})
}

// dtProc is a rukhd (or its activator) this test started and reaps.
type dtProc struct {
	cmd    *exec.Cmd
	log    string
	done   chan struct{}
	status int
	ready  *readiness // where the daemon notifies READY=1
}

// startProc starts argv as this home's daemon with env (the home's when
// nil), its output in a log file, and reaps it as soon as it exits.
func (h *dtHome) startProc(env []string, argv ...string) *dtProc {
	h.t.Helper()
	log, err := os.CreateTemp(h.dir, "rukhd-*.log")
	if err != nil {
		h.t.Fatal(err)
	}
	defer log.Close()
	d := &dtProc{cmd: exec.Command(argv[0], argv[1:]...), log: log.Name(), done: make(chan struct{}), ready: newReadiness(h.t)}
	if env == nil {
		env = h.env
	}
	d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = append(env[:len(env):len(env)], d.ready.env()), log, log
	if err := d.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		d.cmd.Wait()
		d.status = d.cmd.ProcessState.ExitCode()
		close(d.done)
	}()
	h.t.Cleanup(func() {
		select {
		case <-d.done:
			return
		default:
		}
		d.cmd.Process.Signal(syscall.SIGCONT)
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(dtHangGuard):
			d.cmd.Process.Kill()
			<-d.done
			h.t.Errorf("rukhd (pid %d) did not stop on SIGTERM", d.cmd.Process.Pid)
		}
	})
	return d
}

// startDaemon starts rukhd by hand and waits until it answers.
func (h *dtHome) startDaemon(rukhd, build string) *dtProc {
	h.t.Helper()
	d := h.startProc(nil, rukhd)
	h.waitAnswers(d, build)
	return d
}

// waitAnswers waits until a daemon of build answers hello on the socket.
func (h *dtHome) waitAnswers(d *dtProc, build string) {
	h.t.Helper()
	d.ready.wait(h.t, "rukhd (log "+d.log+")", d.done)
	dl := thin.Dialer{Socket: h.sock(), Name: "rukh", Build: build}
	s, err := dl.Dial(context.Background())
	if err != nil {
		h.t.Fatalf("rukhd notified READY=1 but does not answer: %v\n%s", err, d.logText())
	}
	s.Close()
}

// wait waits for the process to exit and returns its exit status.
func (d *dtProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-d.done:
		return d.status
	case <-time.After(dtHangGuard):
		t.Fatalf("rukhd (pid %d) did not exit:\n%s", d.cmd.Process.Pid, d.logText())
		return -1
	}
}

func (d *dtProc) logText() string {
	data, _ := os.ReadFile(d.log)
	return string(data)
}

// dtGone reports whether process pid has ended: it no longer exists or is a
// zombie nobody has reaped yet.
func dtGone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || len(data) < i+3 || data[i+2] == 'Z' || data[i+2] == 'X'
}

// dtWaitGone waits until process pid has ended.
func dtWaitGone(t *testing.T, pid int, what string) {
	t.Helper()
	if err := testhome.ExitOf(pid, dtHangGuard); err != nil {
		t.Fatalf("%s (pid %d) is still running: %v", what, pid, err)
	}
}

// dtMarked returns the live processes whose environment carries
// RUKH_INVOCATION_ID=id.
func dtMarked(id string) []int {
	marker := []byte("RUKH_INVOCATION_ID=" + id + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(append(env, 0), marker) && !dtGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// 1. systemd-socket-activate holds the socket and starts rukhd on the
// first connection, as systemd's rukhd.socket does. The activator passes
// rukhd only TERM, PATH, USER, HOME and what -E names, as systemd passes
// a unit only its own environment: a rukhd that resolves other files than
// the client (no RUKH_HOME) refuses the command line instead of running
// it on another store; one given RUKH_HOME says it was activated, and a
// `rukh CMD` runs as its child.
func testDaemonSocketActivation(t *testing.T, b *dtBins) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		dtNeed(t, "socket activation needs systemd-socket-activate (Debian's systemd package): %v", err)
	}
	h := dtNewHome(t, b)
	if err := os.Mkdir(filepath.Join(h.home, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	activated := func(env []string, args ...string) *dtProc {
		t.Helper()
		os.Remove(h.sock()) // the last activator's
		sa := h.startProc(env, append([]string{activate, "-l", h.sock()}, args...)...)
		waitFileFor(t, h.sock(), "systemd-socket-activate's socket", func() bool {
			select {
			case <-sa.done:
				t.Fatalf("systemd-socket-activate exited %d:\n%s", sa.status, sa.logText())
			default:
			}
			_, err := os.Lstat(h.sock())
			return err == nil
		})
		return sa
	}

	// Without RUKH_HOME: rukhd's files are under HOME, not the client's.
	other := filepath.Join(h.dir, "other")
	sa := activated(append(os.Environ(), "HOME="+other), b.rukhd)
	out, errOut, code := h.run("ppid")
	want := fmt.Sprintf("rukh: rukhd (pid %d) serves data %s, config %s, runtime %s, but this rukh's environment names data %s, config %s, runtime %s; start rukhd with the same RUKH_HOME or XDG_* variables, or run `rukh daemon stop`\n",
		sa.cmd.Process.Pid, other+"/.local/share/rukh", other+"/.config/rukh", other+"/.local/share/rukh/run",
		h.home+"/data", h.home+"/config", h.home+"/run")
	if code != 75 || out != "" || errOut != want {
		t.Errorf("rukh ppid with a daemon of other files: exit %d, stdout %q, stderr %q; want 75 and %q", code, out, errOut, want)
	}
	if n := h.runs("ppid"); n != 0 {
		t.Errorf("the command ran %d times", n)
	}
	if _, errOut, code := h.run("daemon", "stop"); code != 0 || errOut != fmt.Sprintf("rukhd stopped (pid %d)\n", sa.cmd.Process.Pid) {
		t.Errorf("rukh daemon stop: exit %d: %q", code, errOut)
	}
	if code := sa.wait(t); code != 0 {
		t.Errorf("the activated rukhd exited %d on stop:\n%s", code, sa.logText())
	}

	sa = activated(nil, "-E", "RUKH_HOME="+h.home, b.rukhd)
	st := h.status() // the first connection starts rukhd in the activator's process
	// systemd-socket-activate made the socket 0644; the daemon it became
	// keeps it to its user.
	if fi, err := os.Stat(h.sock()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the activated socket: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if st.PID != sa.cmd.Process.Pid || !st.Activated || st.Socket != h.sock() || st.Build != b.build {
		t.Errorf("daemon status %+v; want pid %d (the activator's, exec'd into rukhd), activated, socket %s, build %s",
			st, sa.cmd.Process.Pid, h.sock(), b.build)
	}
	if parent, _ := h.ppid(); parent != st.PID {
		t.Errorf("`rukh ppid` ran as a child of pid %d, want the activated daemon's %d", parent, st.PID)
	}
	if recs := h.invocations(); len(recs) != 1 || recs[0].Outcome != "succeeded" || recs[0].Transport != "cli" {
		t.Errorf("records: %+v", recs)
	}
	if _, errOut, code := h.run("daemon", "stop"); code != 0 || errOut != fmt.Sprintf("rukhd stopped (pid %d)\n", st.PID) {
		t.Errorf("rukh daemon stop: exit %d: %q", code, errOut)
	}
	if code := sa.wait(t); code != 0 {
		t.Errorf("the activated rukhd exited %d on stop:\n%s", code, sa.logText())
	}

	// `daemon restart` of a socket-activated daemon leaves a working
	// daemon: here the activator is gone with the daemon it became, so
	// restart starts one by hand.
	sa = activated(nil, "-E", "RUKH_HOME="+h.home, b.rukhd)
	st = h.status()
	if _, errOut, code := h.run("daemon", "restart"); code != 0 || !strings.Contains(errOut, fmt.Sprintf("rukhd stopped (pid %d)\n", st.PID)) || !strings.Contains(errOut, "rukhd started: pid ") {
		t.Errorf("rukh daemon restart of a socket-activated daemon: exit %d: %q", code, errOut)
	}
	sa.wait(t)
	if after := h.status(); after.PID == st.PID || after.Build != b.build {
		t.Errorf("after restart: %+v; want a new daemon of build %s", after, b.build)
	}
	if host, _ := h.ppid(); host == st.PID {
		t.Errorf("after restart the old daemon %d ran the command", st.PID)
	}
	h.stopByCLI()
}

// 2. A client of another uid is refused at every layer — its own check
// of the socket's owner, its check of the daemon's uid, and the daemon's
// SO_PEERCRED check — and nothing runs; the daemon goes on serving its
// owner.
func testDaemonOtherUser(t *testing.T, b *dtBins) {
	if os.Getuid() != 0 {
		dtNeed(t, "running a client as another uid needs root (uid %d here)", os.Getuid())
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		dtNeed(t, "running a client as another uid needs setpriv (util-linux): %v", err)
	}
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhd, b.build)
	pid := d.cmd.Process.Pid

	// Let uid 65534 reach the binaries and the socket: every directory on
	// the way traversable, the socket writable.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	peekBin := filepath.Join(b.dir, "peek-"+filepath.Base(h.dir))
	dtCopy(t, self, peekBin)
	for _, dir := range []string{filepath.Dir(filepath.Dir(b.dir)), filepath.Dir(b.dir), b.dir, filepath.Dir(h.dir), h.dir, h.home, filepath.Join(h.home, "run")} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(h.sock(), 0o666); err != nil {
		t.Fatal(err)
	}
	nobody := []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}

	// The socket is root's: the client refuses it before connecting.
	out, errOut, code := h.runAs(nobody, "ppid")
	if want := fmt.Sprintf("rukh: rukhd at %s: dial: the socket belongs to uid 0, not to you; remove it\n", h.sock()); code != 75 || out != "" || errOut != want {
		t.Errorf("another uid's client: exit %d, stdout %q, stderr %q; want 75 and %q", code, out, errOut, want)
	}
	// A socket made to look like its own: the client refuses the daemon's uid.
	if err := os.Lchown(h.sock(), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = h.runAs(nobody, "ppid")
	if want := fmt.Sprintf("rukh: rukhd at %s: dial: the daemon runs as uid 0, not as you\n", h.sock()); code != 75 || out != "" || errOut != want {
		t.Errorf("another uid's client: exit %d, stdout %q, stderr %q; want 75 and %q", code, out, errOut, want)
	}
	// A raw connection: the daemon itself refuses it.
	cmd := exec.Command(setpriv, append(nobody[1:], peekBin)...)
	cmd.Env = append(os.Environ(), dtPeekEnv+"="+h.sock())
	got, err := cmd.CombinedOutput()
	if want := "bad_request: this daemon serves uid 0 only\n"; err != nil || string(got) != want {
		t.Errorf("a raw connection of uid 65534 got %q (%v), want %q", got, err, want)
	}
	if err := os.Lchown(h.sock(), 0, 0); err != nil {
		t.Fatal(err)
	}

	if n := h.runs("ppid"); n != 0 {
		t.Fatalf("the refused clients ran the command %d times", n)
	}
	if parent, _ := h.ppid(); parent != pid {
		t.Errorf("the owner's command ran under pid %d, want the daemon %d", parent, pid)
	}
	if n := h.runs("ppid"); n != 1 {
		t.Errorf("the command ran %d times, want once (the owner's)", n)
	}
	if st := h.status(); st.PID != pid {
		t.Errorf("the daemon is pid %d, want %d", st.PID, pid)
	}
	if recs := h.invocations(); len(recs) != 1 || recs[0].Outcome != "succeeded" {
		t.Errorf("records: %+v", recs)
	}
	// The daemon logs each refusal as it serves the connection, which
	// the client that hung up first does not wait for.
	refusals := func() int {
		return strings.Count(d.logText(), `level=WARN msg="refused a connection from another user" uid=65534`)
	}
	waitFileFor(t, d.log, "two refusals in the daemon's log", func() bool { return refusals() >= 2 })
	if refusals() != 2 {
		t.Fatalf("the daemon's log does not show two refusals of uid 65534:\n%s", d.logText())
	}
}

// 3. kill -9 of rukhd while it runs a command: the client exits 75 naming
// the invocation, the command's process dies with its host (Pdeathsig),
// and the next daemon records the invocation execution_failed/host_lost
// and kills what the command left behind, without running it again.
func testDaemonKilledMidCall(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhd, b.build)

	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	client := exec.CommandContext(ctx, h.rukh, "slow")
	client.Env = h.env
	clientOut, err := os.Create(filepath.Join(h.dir, "client.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer clientOut.Close()
	client.Stdout, client.Stderr = clientOut, clientOut // files: the orphaned sleep may hold them
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	shPID, id := h.slowStarted()
	t.Cleanup(func() { syscall.Kill(-shPID, syscall.SIGKILL) }) // its group, should anything be left
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.wait(t)
	err = client.Wait()
	out, _ := os.ReadFile(clientOut.Name())
	prefix := fmt.Sprintf("rukh: rukhd at %s: call: the daemon went away: ", h.sock())
	suffix := fmt.Sprintf("EOF (invocation %s was running; its outcome is recorded when the daemon restarts)\n", id)
	if code := client.ProcessState.ExitCode(); code != 75 || !strings.HasPrefix(string(out), prefix) || !strings.HasSuffix(string(out), suffix) {
		t.Errorf("the client: exit %d (%v), output %q; want 75 and %q…%q", code, err, out, prefix, suffix)
	}
	dtWaitGone(t, shPID, "the slow command")

	if _, errOut, code := h.run("daemon", "start"); code != 0 || !strings.HasPrefix(errOut, "rukhd started: pid ") {
		t.Fatalf("rukh daemon start: exit %d: %s", code, errOut)
	}
	h.stopByCLI()
	recs := h.invocations()
	if len(recs) != 1 || recs[0].ID != id || recs[0].Command != "test.daemon/slow" || recs[0].Transport != "cli" ||
		recs[0].Outcome != "execution_failed" || recs[0].Reason != "host_lost" {
		t.Errorf("records after the restart: %+v; want %s execution_failed/host_lost", recs, id)
	}
	if pids := dtMarked(id); len(pids) != 0 {
		t.Errorf("processes of the lost invocation still run: %v", pids)
	}
	if n := h.runs("slow"); n != 1 {
		t.Errorf("the slow command ran %d times, want once (nothing replayed)", n)
	}
}

// 3b. kill -9 of the client while its command runs. The daemon had the
// client start the command (ADR 0008), so the command dies with the
// client (Pdeathsig); the daemon sees the client go, stops waiting and
// records the invocation cancelled/interrupted at once — its slot is free,
// nothing is re-run, and the daemon serves on.
func testDaemonClientKilledMidCall(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhd, b.build)
	client := h.startSlow()
	exited := make(chan struct{})
	go func() { client.Wait(); close(exited) }()
	t.Cleanup(func() { client.Process.Kill(); <-exited })
	var ppid int
	shPID, id := h.slowStarted()
	t.Cleanup(func() { syscall.Kill(-shPID, syscall.SIGKILL) })
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", shPID)); err == nil {
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		ppid, _ = strconv.Atoi(fields[1])
	}
	if ppid != client.Process.Pid {
		t.Errorf("the command runs under pid %d, want the client %d (the daemon is %d)", ppid, client.Process.Pid, d.cmd.Process.Pid)
	}
	client.Process.Signal(syscall.SIGKILL)
	<-exited
	dtWaitGone(t, shPID, "the slow command")
	if out, errOut, code := h.run("invocations", "wait", id, "--timeout", "60s"); code != 0 {
		t.Fatalf("the invocation was not finalized after its client's death: exit %d: %s%s", code, out, errOut)
	}
	recs := h.invocations()
	if recs[0].ID != id || recs[0].Outcome != "cancelled" || recs[0].Reason != "interrupted" {
		t.Errorf("the record: %+v; want %s cancelled/interrupted", recs[0], id)
	}
	if n := h.runs("slow"); n != 1 {
		t.Errorf("the slow command ran %d times, want once", n)
	}
	if _, errOut, code := h.run("daemon", "stop"); code != 0 {
		t.Errorf("rukh daemon stop: exit %d: %s", code, errOut)
	}
	if code := d.wait(t); code != 0 {
		t.Errorf("the daemon exited %d:\n%s", code, d.logText())
	}
}

// 4. `rukh mcp` keeps serving while the daemon restarts and stops under
// it: the first call runs in the first daemon, the second in the
// restarted one, the third in rukh mcp itself; all are recorded via mcp.
func testDaemonRestartUnderMCP(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	if _, errOut, code := h.run("daemon", "start"); code != 0 {
		t.Fatalf("rukh daemon start: exit %d: %s", code, errOut)
	}
	h.stopByCLI()
	first := h.status()

	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	cmd := exec.Command(h.rukh, "mcp", "--log-file", filepath.Join(h.dir, "mcp.log"))
	cmd.Env = h.env
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "daemon-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listing, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// rukh mcp keeps the connection of its reads for the next one.
	if n := h.status().Connections; n != 1 {
		t.Errorf("rukhd counts %d connections once rukh mcp has listed its tools; want the one it keeps", n)
	}
	var tool string
	for _, tl := range listing.Tools {
		if tl.Title == "Ppid" {
			tool = tl.Name
		}
	}
	if tool == "" {
		t.Fatalf("no tool for test.daemon/ppid among %d", len(listing.Tools))
	}
	var ids []string
	call := func(what string, wantParent int) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var env struct {
			InvocationID  string `json:"invocationId"`
			Outcome       string `json:"outcome"`
			CommandResult struct {
				Text string `json:"text"`
			} `json:"commandResult"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || res.IsError || env.Outcome != "succeeded" {
			t.Fatalf("%s: %s (%v)", what, raw, err)
		}
		if env.CommandResult.Text != strconv.Itoa(wantParent) {
			t.Errorf("%s: the command ran under pid %s, want %d", what, env.CommandResult.Text, wantParent)
		}
		ids = append(ids, env.InvocationID)
	}
	call("with the daemon", first.PID)

	if _, errOut, code := h.run("daemon", "restart"); code != 0 {
		t.Fatalf("rukh daemon restart: exit %d: %s", code, errOut)
	}
	second := h.status()
	if second.PID == first.PID {
		t.Fatalf("the restarted daemon has the old pid %d", first.PID)
	}
	call("after a restart", second.PID)
	// rukh mcp kept the connection of its first listing; the daemon that
	// served it is gone, and the listing goes to the one that runs now.
	list := func(what string) {
		t.Helper()
		again, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list %s: %v", what, err)
		}
		if len(again.Tools) != len(listing.Tools) {
			t.Fatalf("tools/list %s: %d tools, want %d", what, len(again.Tools), len(listing.Tools))
		}
	}
	list("after a restart")

	if _, errOut, code := h.run("daemon", "stop"); code != 0 || errOut != fmt.Sprintf("rukhd stopped (pid %d)\n", second.PID) {
		t.Fatalf("rukh daemon stop: exit %d: %q", code, errOut)
	}
	list("once the daemon stopped")
	call("without a daemon", cmd.Process.Pid)

	// A daemon killed (-9) while rukh mcp keeps a connection to it: the
	// next listing finds it closed and runs in-process.
	d := h.startDaemon(b.rukhd, b.build)
	list("with a daemon started again")
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.wait(t)
	list("once the daemon was killed")

	recs := h.invocations()
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	for i, r := range recs {
		if want := ids[len(ids)-1-i]; r.ID != want || r.Transport != "mcp" || r.Outcome != "succeeded" || r.Command != "test.daemon/ppid" {
			t.Errorf("record %d: %+v; want %s, succeeded via mcp", i, r, want)
		}
	}
}

// 5a. A rukh of build B meets a rukhd of build A: exit 75 naming both
// builds and `rukh daemon restart`, nothing runs; version, help and
// doctor still answer (doctor says why it would run in-process); and
// `rukh daemon restart` does what the message says: it replaces the
// daemon with one of build B.
func testDaemonBuildMismatch(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhdA, b.buildA)

	out, errOut, code := h.run("ppid")
	msg := fmt.Sprintf("rukhd runs build %s but this rukh is build %s; run `rukh daemon restart` to serve this build, or use the matching binary", b.buildA, b.build)
	if code != 75 || out != "" || errOut != "rukh: "+msg+"\n" {
		t.Errorf("rukh ppid against another build: exit %d, stdout %q, stderr %q; want 75 and %q", code, out, errOut, msg)
	}
	if n := h.runs("ppid"); n != 0 {
		t.Errorf("the command ran %d times against a daemon of another build", n)
	}
	// version, help and doctor still answer, from the client's own core:
	// doctor says why it would run in-process and does not wait for the
	// store the other daemon holds.
	if out, errOut, code := h.run("version"); code != 0 || !strings.Contains(out, "build: "+b.build) {
		t.Errorf("rukh version against another build: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, help := range []string{"--help", "help"} {
		if out, errOut, code := h.run(help); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("rukh %s against another build: exit %d, stdout %q, stderr %q", help, code, out, errOut)
		}
	}
	out, errOut, code = h.run("doctor", "--json")
	var rep struct {
		Host       string `json:"host"`
		HostReason string `json:"hostReason"`
		StoreOK    bool   `json:"storeOk"`
		StoreError string `json:"storeError"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 75 || rep.Host != "in-process" ||
		rep.HostReason != "the daemon refuses this client: "+msg || rep.StoreOK || !strings.Contains(rep.StoreError, "not checked: the daemon of another build holds it") {
		t.Errorf("rukh doctor against another build: exit %d, stdout %q, stderr %q (%v)", code, out, errOut, err)
	}

	// The daemon commands reach it all the same.
	if st := h.status(); st.PID != d.cmd.Process.Pid || st.Build != b.buildA {
		t.Errorf("rukh daemon status: %+v; want pid %d, build %s", st, d.cmd.Process.Pid, b.buildA)
	}
	if _, errOut, code := h.run("daemon", "start"); code != 75 || errOut != fmt.Sprintf("rukh: rukhd is already running (pid %d) but is build %s, not this rukh's %s; `rukh daemon restart` replaces it\n",
		d.cmd.Process.Pid, b.buildA, b.build) {
		t.Errorf("rukh daemon start: exit %d: %q", code, errOut)
	}
	if _, errOut, code := h.run("daemon", "restart"); code != 0 {
		t.Fatalf("rukh daemon restart, as the message says: exit %d: %s", code, errOut)
	}
	h.stopByCLI()
	if code := d.wait(t); code != 0 {
		t.Errorf("the daemon of build A exited %d:\n%s", code, d.logText())
	}
	st := h.status()
	if st.Build != b.build {
		t.Errorf("the restarted daemon is build %s, want %s", st.Build, b.build)
	}
	if parent, _ := h.ppid(); parent != st.PID {
		t.Errorf("after the restart the command ran under pid %d, want the new daemon %d", parent, st.PID)
	}
}

// dtUpgradable returns a home whose rukh and rukhd are copies of their
// own, with that rukhd serving it, and a function that upgrades the
// rukhd on disk as a package does (a new file renamed over it).
func dtUpgradable(t *testing.T, b *dtBins) (*dtHome, *dtProc, func()) {
	h := dtNewHome(t, b)
	bin := filepath.Join(h.dir, "bin")
	h.rukh = filepath.Join(bin, "rukh")
	dtCopy(t, b.rukh, h.rukh)
	dtCopy(t, b.rukhd, filepath.Join(bin, "rukhd"))
	d := h.startDaemon(filepath.Join(bin, "rukhd"), b.build)
	return h, d, func() {
		t.Helper()
		dtCopy(t, b.rukhd, filepath.Join(bin, "rukhd.new"))
		if err := os.Rename(filepath.Join(bin, "rukhd.new"), filepath.Join(bin, "rukhd")); err != nil {
			t.Fatal(err)
		}
	}
}

// 5b. The daemon's executable is replaced on disk (a new file renamed
// over it, as a package upgrade does): the next `rukh CMD` runs
// in-process while the old daemon drains, and the old daemon exits 0.
func testDaemonReplacedBinary(t *testing.T, b *dtBins) {
	h, d, upgrade := dtUpgradable(t, b)
	pid := d.cmd.Process.Pid
	if parent, _ := h.ppid(); parent != pid {
		t.Fatalf("the command ran under pid %d, want the daemon %d", parent, pid)
	}

	upgrade()
	if parent, client := h.ppid(); parent != client {
		t.Errorf("after the upgrade the command ran under pid %d, want the client %d (in-process)", parent, client)
	}
	if code := d.wait(t); code != 0 {
		t.Errorf("the stale daemon exited %d:\n%s", code, d.logText())
	}
	if !strings.Contains(d.logText(), "the executable changed; draining and exiting") {
		t.Errorf("the stale daemon's log:\n%s", d.logText())
	}
	if _, errOut, code := h.run("daemon", "status"); code != 69 || !strings.Contains(errOut, "rukhd is not running") {
		t.Errorf("rukh daemon status after the drain: exit %d: %s", code, errOut)
	}
	recs := h.invocations()
	if len(recs) != 2 || recs[0].Outcome != "succeeded" || recs[1].Outcome != "succeeded" {
		t.Errorf("records: %+v", recs)
	}
}

// 5c. An upgrade while the old daemon still runs a call (issue 18, item
// 13). Before, the old daemon kept the store's lock through its drain:
// the next `rukh CMD` went in-process, waited 10 s for the lock and
// exited 75; and the daemon closed its socket, so under systemd the
// connections queued behind it timed out as "hung". Now the draining
// daemon releases the store at once and keeps answering its socket: the
// new call runs in-process beside the old one, `daemon status` still
// reaches the old daemon and shows its call, and once that call ends
// (and is recorded, succeeded) the old daemon exits 0.
func testDaemonDrainHandsOver(t *testing.T, b *dtBins) {
	h, d, upgrade := dtUpgradable(t, b)
	pid := d.cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	slow := exec.CommandContext(ctx, h.rukh, "slow")
	slow.Env = h.env
	var slowOut bytes.Buffer // its stderr gets the shell's "Killed" below
	slow.Stdout, slow.Stderr = &slowOut, io.Discard
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan error, 1)
	go func() { slowDone <- slow.Wait() }()
	t.Cleanup(func() { slow.Process.Kill(); <-slowDone })
	shPID, slowID := h.slowStarted()
	t.Cleanup(func() { syscall.Kill(-shPID, syscall.SIGKILL) })

	upgrade()
	// h.ppid fails the test on any exit but 0 (before: 75 after 10 s).
	if parent, client := h.ppid(); parent != client {
		t.Errorf("during the drain the command ran under pid %d, want the client %d (in-process)", parent, client)
	}
	if st := h.status(); st.PID != pid || st.InFlight != 1 || !st.Draining {
		t.Errorf("daemon status during the drain: %+v; want the old daemon %d draining, with its 1 call", st, pid)
	}
	if _, errOut, code := h.run("daemon", "start"); code != 75 || !strings.Contains(errOut, fmt.Sprintf("rukhd (pid %d) is draining: it exits once its 1 running invocations end", pid)) {
		t.Errorf("rukh daemon start during the drain: exit %d, %q; want 75, saying a daemon drains", code, errOut)
	}
	select {
	case <-d.done:
		t.Fatalf("the old daemon exited %d before its call ended:\n%s", d.status, d.logText())
	default:
	}

	// End the call: its sleep is killed, so the script reports success.
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", shPID, shPID))
	if err != nil || len(strings.Fields(string(children))) != 1 {
		t.Fatalf("the slow command's children: %q, %v; want its sleep", children, err)
	}
	sleepPID, _ := strconv.Atoi(strings.Fields(string(children))[0])
	if err := syscall.Kill(sleepPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-slowDone; err != nil || slowOut.String() != "done" {
		t.Errorf("rukh slow: %v, output %q; want exit 0 and %q", err, slowOut.String(), "done")
	}
	slowDone <- nil // for the cleanup
	if code := d.wait(t); code != 0 {
		t.Errorf("the drained daemon exited %d:\n%s", code, d.logText())
	}
	recs := h.invocations()
	if len(recs) != 2 || recs[1].ID != slowID || recs[1].Outcome != "succeeded" || recs[0].Outcome != "succeeded" {
		t.Errorf("records: %+v; want the slow call %s and the in-process one, both succeeded", recs, slowID)
	}
}

// 6. A stopped (hung) daemon: `rukh CMD` gives up after the hello bound
// with exit 75 and says so; nothing runs; once the daemon continues it
// serves again.
func testDaemonHung(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhd, b.build)
	pid := d.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := h.run("ppid")
	syscall.Kill(pid, syscall.SIGCONT)
	want := fmt.Sprintf("rukh: rukhd at %s: hello: no answer within %s; the daemon is hung: see `rukh daemon status`, or kill it\n", h.sock(), thin.HelloTimeout)
	if code != 75 || out != "" || errOut != want {
		t.Errorf("rukh ppid with a stopped daemon: exit %d, stdout %q, stderr %q; want 75 and %q", code, out, errOut, want)
	}
	if n := h.runs("ppid"); n != 0 {
		t.Errorf("the command ran %d times", n)
	}
	if parent, _ := h.ppid(); parent != pid {
		t.Errorf("after SIGCONT the command ran under pid %d, want the daemon %d", parent, pid)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(t); code != 0 {
		t.Errorf("rukhd exited %d on SIGTERM:\n%s", code, d.logText())
	}
}

// 7. Malformed frames on the socket, before and after a valid hello: the
// daemon answers each with a bad_request error frame and closes that
// connection, and goes on serving.
func testDaemonBadFrames(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhd, b.build)
	pid := d.cmd.Process.Pid

	frame := func(body ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	text := func(s string) []byte { return append([]byte{0x60 + byte(len(s))}, s...) } // a short CBOR text string
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	// {"status":[[[…0…]]]}: a member the codec decodes, which bounds the
	// nesting (one decoded by hand, as hello is, reads no deeper than its
	// own members and refuses the array at once).
	deep := cat([]byte{0xa1}, text("status"), bytes.Repeat([]byte{0x81}, 100), []byte{0x00})
	cases := []struct {
		name      string
		data      []byte
		halfClose bool // the frame is cut short: the client stops writing
		want      string
	}{
		{"an oversized length prefix", []byte{0xff, 0xff, 0xff, 0xff}, false, "4294967295 bytes announced, more than 4194304"},
		{"a deep nesting", frame(deep...), false, "exceeded max nested level"},
		{"a duplicate key", frame(cat([]byte{0xa2}, text("hello"), []byte{0xa0}, text("hello"), []byte{0xa0})...), false, "duplicate map key"},
		{"a truncated frame", cat([]byte{0, 0, 0, 100, 0xa1}, text("hello")), true, "truncated"},
		{"an unknown member", frame(cat([]byte{0xa1}, text("nope"), []byte{0xa0})...), false, "unknown field"},
		{"two members", frame(cat([]byte{0xa2}, text("hello"), []byte{0xa0}, text("status"), []byte{0xa0})...), false, "2 members set, want exactly one"},
	}
	exchange := func(what string, hello bool, data []byte, halfClose bool, want string) {
		t.Helper()
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: h.sock(), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(dtHangGuard))
		if hello {
			if err := wire.Write(c, &wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: b.build, Name: "rukh"}}); err != nil {
				t.Fatal(err)
			}
			if m, err := wire.Read(c); err != nil || m.Hello == nil || m.Hello.PID != pid {
				t.Fatalf("%s: hello answered with %+v, %v", what, m, err)
			}
		}
		if _, err := c.Write(data); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if halfClose {
			c.CloseWrite()
		}
		m, err := wire.Read(c)
		if err != nil || m.Error == nil || m.Error.Code != wire.CodeBadRequest || !strings.Contains(m.Error.Message, want) {
			t.Errorf("%s: the daemon answered %+v (%v); want a bad_request error saying %q", what, m, err, want)
			return
		}
		if _, err := wire.Read(c); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after the error the connection gave %v, want EOF (closed)", what, err)
		}
	}
	for _, tc := range cases {
		exchange(tc.name+" instead of hello", false, tc.data, tc.halfClose, tc.want)
		exchange(tc.name+" as the request", true, tc.data, tc.halfClose, tc.want)
	}
	noFiles, _ := wire.Encode(nil, &wire.Msg{Exec: &wire.Exec{Args: []string{"ppid"}, Dir: "/"}})
	exchange("an exec without descriptors", true, noFiles, false, "0 descriptors with exec (its stdin, stdout and stderr); it takes 3")
	hello, _ := wire.Encode(nil, &wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: b.build, Name: "rukh"}})
	exchange("a second hello", true, hello, false, "not a request")
	status, _ := wire.Encode(nil, &wire.Msg{Status: &wire.Status{}})
	exchange("a request instead of hello", false, status, false, "the first frame must be hello")

	if n := h.runs("ppid"); n != 0 {
		t.Errorf("the command ran %d times", n)
	}
	if parent, _ := h.ppid(); parent != pid {
		t.Errorf("after the bad frames the command ran under pid %d, want the daemon %d", parent, pid)
	}
	if st := h.status(); st.PID != pid || st.InFlight != 0 {
		t.Errorf("daemon status after the bad frames: %+v", st)
	}
}

// 8. rukh doctor says which host serves calls, and why.
func testDaemonDoctor(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	if doc := h.doctor(); doc.Host != "in-process" || doc.HostReason != "no daemon answers at "+h.sock() {
		t.Errorf("doctor without a daemon: %+v", doc)
	}
	d := h.startDaemon(b.rukhd, b.build)
	if doc, want := h.doctor(), fmt.Sprintf("daemon: rukhd pid %d at %s", d.cmd.Process.Pid, h.sock()); doc.Host != "daemon" || doc.HostReason != want {
		t.Errorf("doctor with a daemon: %+v; want host daemon (%s)", doc, want)
	}
	// An outcome saved aside (the store could not take it) is counted by
	// both until a call commits it.
	pending := filepath.Join(h.home, "data", invoke.PendingDir)
	if err := os.MkdirAll(pending, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pending, "0123456789abcdef0123456789abcdef.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := h.status(); st.Pending != 1 || st.WriteError != "" {
		t.Errorf("daemon status with an outcome saved aside: %+v; want 1 pending and no write error", st)
	}
	if doc := h.doctor(); doc.Pending != 1 {
		t.Errorf("doctor with an outcome saved aside: %+v; want 1 pending", doc)
	}
	if out := h.must("daemon", "status"); !strings.Contains(out, "pending:     1 outcomes saved aside wait for the store to take them") {
		t.Errorf("daemon status does not say an outcome waits:\n%s", out)
	}
	if err := os.RemoveAll(pending); err != nil {
		t.Fatal(err)
	}
	// Calls through rukhd keep one reserve, named for the daemon, from
	// one call to the next (invoke.Core.KeepReserves); the daemon gives
	// it back, free, as it stops.
	reserves := func() (free, daemon []string) {
		t.Helper()
		ents, err := os.ReadDir(pending)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			switch {
			case strings.HasPrefix(e.Name(), ".free-reserve-"):
				free = append(free, e.Name())
			case strings.HasPrefix(e.Name(), fmt.Sprintf(".reserve-%d.", d.cmd.Process.Pid)):
				daemon = append(daemon, e.Name())
			}
		}
		return free, daemon
	}
	for range 3 {
		h.ppid()
	}
	if free, kept := reserves(); len(free) != 0 || len(kept) != 1 {
		t.Errorf("after three calls through rukhd PendingDir holds free reserves %q and the daemon's %q; want none free and one kept", free, kept)
	}
	if _, errOut, code := h.run("daemon", "stop"); code != 0 {
		t.Fatalf("rukh daemon stop: exit %d: %s", code, errOut)
	}
	d.wait(t)
	if free, kept := reserves(); len(free) != 1 || len(kept) != 0 {
		t.Errorf("after the daemon stopped PendingDir holds free reserves %q and the daemon's %q; want one free and none kept", free, kept)
	}
	if doc := h.doctor(); doc.Host != "in-process" || doc.HostReason != "no daemon answers at "+h.sock() {
		t.Errorf("doctor after the daemon stopped: %+v", doc)
	}
}

// 9. `rukh daemon stop` where nothing reaps the stopped daemon (a
// container whose init does not): the daemon is a zombie once it has
// exited, which is stopped — its lock is free — so stop succeeds.
func testDaemonStopUnreaped(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(h.env, dtReaperEnv+"="+h.rukh)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var pid int
	if _, err := fmt.Sscanf(string(out), "rukhd started: pid %d,", &pid); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if want := fmt.Sprintf("daemon start: exit 0\nrukhd stopped (pid %d)\ndaemon stop: exit 0\n", pid); !strings.HasSuffix(string(out), want) {
		t.Errorf("under a subreaper that does not reap:\n%s\nwant it to end with\n%s", out, want)
	}
}

// 10. A daemon whose RUKH_HOME is a symlink to the client's serves it:
// the same files, spelled differently.
func testDaemonSymlinkedHome(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	link := filepath.Join(h.dir, "link")
	if err := os.Symlink(h.home, link); err != nil {
		t.Fatal(err)
	}
	d := h.startProc(append(os.Environ(), "RUKH_HOME="+link), b.rukhd)
	h.waitAnswers(d, b.build)
	if parent, _ := h.ppid(); parent != d.cmd.Process.Pid {
		t.Errorf("the command ran under pid %d, want the daemon %d", parent, d.cmd.Process.Pid)
	}
}

func dtCopy(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	// cp writes it, not this process: a file this process had open for
	// writing could still be open in a child another goroutine is forking
	// at that moment (until that child execs), and exec of the copy would
	// then fail with ETXTBSY ("text file busy").
	if out, err := exec.Command("cp", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v\n%s", from, to, err, out)
	}
	if err := os.Chmod(to, 0o755); err != nil {
		t.Fatal(err)
	}
}

// 13. rukhd is killed -9 with calls' records in its journal, and a block
// of the journal is lost (an entry in the middle zeroed): the next rukhd
// keeps a copy of the journal, applies every whole entry (the records
// are those an undamaged copy of the files gives, but the one call whose
// begin record was lost), logs the copy, and doctor names it.
func testDaemonJournalGap(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	d := h.startDaemon(b.rukhd, b.build)
	for range 6 {
		h.ppid()
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.wait(t)

	data := filepath.Join(h.home, "data")
	journal := filepath.Join(data, "store.db.journal")
	raw, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	// The entries written under the header's salt (bytes 40–48), each
	// its length (4 bytes), a CRC (4), the salt (8) and its record.
	var entries []int
	for off := 64; off+16 <= len(raw) && bytes.Equal(raw[off+8:off+16], raw[40:48]); off += 16 + int(binary.BigEndian.Uint32(raw[off:])) {
		entries = append(entries, off)
	}
	if len(entries) < 6 {
		t.Fatalf("rukhd left %d entries in its journal, want a call's two records each", len(entries))
	}

	// What the undamaged files give, read without a daemon.
	whole := &dtHome{t: t, b: b, dir: h.dir, home: filepath.Join(h.dir, "whole"), rukh: h.rukh}
	whole.env = append(os.Environ(), "RUKH_HOME="+whole.home)
	for _, name := range []string{"store.db", "store.db.journal"} {
		src, err := os.ReadFile(filepath.Join(data, name))
		if err != nil {
			t.Fatal(err)
		}
		testhome.WriteFiles(t, filepath.Join(whole.home, "data"), map[string]string{name: string(src)})
	}
	want := whole.invocations()

	clear(raw[entries[2]:entries[3]])
	if err := os.WriteFile(journal, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	d = h.startDaemon(b.rukhd, b.build)
	got := h.invocations()
	if len(got) != len(want)-1 {
		t.Fatalf("%d records after the gap, want %d (all but one): %+v", len(got), len(want)-1, got)
	}
	t.Logf("%d journal entries; %d records from the undamaged files, %d after the gap", len(entries), len(want), len(got))
	byID := map[string]dtRecord{}
	for _, r := range got {
		byID[r.ID] = r
	}
	for _, r := range want {
		if g, ok := byID[r.ID]; ok && g != r {
			t.Errorf("record %s is %+v after the gap, %+v without it", r.ID, g, r)
		}
	}
	if log := d.logText(); !strings.Contains(log, "a journal was set aside beside the store") || !strings.Contains(log, "store.db.journal.aside") {
		t.Errorf("rukhd's log does not name the journal it kept aside:\n%s", log)
	}
	out := h.must("doctor")
	if !strings.Contains(out, "journal: "+journal+".aside was set aside") {
		t.Errorf("doctor does not name the journal kept aside:\n%s", out)
	}
	kept, err := os.ReadFile(journal + ".aside")
	if err != nil || !bytes.Equal(kept, raw) {
		t.Errorf("the copy kept aside is not the damaged journal (%v)", err)
	}
}

// testDaemonTimerSlack: a host of calls runs with a timer slack of 1 ms
// and starts its commands with Linux's default, 50 µs
// (internal/run/spawn/slack.go): the core the thin client execs when no
// daemon runs, and rukhd, which the core's `daemon start` starts (here
// run directly, with this test's slack, as RUKH_DAEMON=auto runs it). A
// command of a call through rukhd is the thin client's child and has the
// caller's slack. `doctor` reports the slack of the host it runs in;
// each command reports its own (another process's slack is readable
// only with CAP_SYS_NICE).
func testDaemonTimerSlack(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	runtime.LockOSThread() // the slack of this thread, from which the clients are forked
	own := spawn.ThreadTimerSlack().Nanoseconds()
	runtime.UnlockOSThread()
	host, command := spawn.HostTimerSlack.Nanoseconds(), spawn.DefaultTimerSlack.Nanoseconds()
	// slowSlack runs `rukh slow` until its command has said its slack,
	// then ends it.
	slowSlack := func() int64 {
		t.Helper()
		client := h.startSlow()
		pid, _ := h.slowStarted()
		syscall.Kill(-pid, syscall.SIGKILL) // its group: the shell and its sleep
		client.Wait()
		var slack int64
		var id string
		if _, err := fmt.Sscan(string(mustRead(t, filepath.Join(h.dir, "slow.pid"))), &pid, &id, &slack); err != nil {
			t.Fatalf("slow.pid: %v", err)
		}
		return slack
	}

	if got := h.doctor().TimerSlackNs; got != host {
		t.Errorf("doctor without a daemon, in the core the thin client execs, says a timer slack of %d ns, want %d", got, host)
	}
	if got := slowSlack(); got != command {
		t.Errorf("a command without a daemon runs with a timer slack of %d ns, want %d", got, command)
	}

	start := exec.Command(b.rukhd, thin.CoreFlag, "daemon", "start")
	start.Env = h.env
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("rukhd --cli daemon start: %v: %s", err, out)
	}
	t.Cleanup(func() { h.run("daemon", "stop") })
	if got := h.doctor().TimerSlackNs; got != host {
		t.Errorf("doctor in rukhd says a timer slack of %d ns, want %d", got, host)
	}
	if got := slowSlack(); got != own {
		t.Errorf("a command through rukhd runs with a timer slack of %d ns, want its caller's, %d", got, own)
	}
}

// testDaemonProcessors: rukhd runs its goroutines on one processor from
// its start, on all it is given as soon as a request overlaps another,
// and on one again once 16 in a row came alone (internal/daemon/procs.go);
// GOMAXPROCS in its environment fixes the count. `doctor`, which runs in
// rukhd and is a request like any other, says how many. On a machine of
// one processor the count is one throughout.
func testDaemonProcessors(t *testing.T, b *dtBins) {
	h := dtNewHome(t, b)
	h.env = slices.DeleteFunc(h.env, func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
	first := h.startDaemon(b.rukhd, b.build)
	h.must("ppid")
	if got := h.doctor().Processors; got != 1 {
		t.Errorf("a fresh rukhd runs on %d processors, want 1", got)
	}
	// A call beside a running one.
	client := h.startSlow()
	shPID, _ := h.slowStarted()
	t.Cleanup(func() {
		syscall.Kill(-shPID, syscall.SIGKILL)
		client.Process.Kill()
		client.Wait()
	})
	h.must("ppid")
	all := runtime.NumCPU()
	if got := h.doctor().Processors; got < min(all, 2) || got > all {
		t.Errorf("with two calls at once rukhd runs on %d processors, want all it is given (this machine has %d)", got, all)
	}
	client.Process.Kill()
	client.Wait()
	// Its request is done once its connection is gone (status, a
	// management request, is not counted).
	for deadline := time.Now().Add(dtHangGuard); ; {
		if st := h.status(); st.Connections == 0 && st.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed client's call still holds rukhd after %s", dtHangGuard)
		}
	}
	for range 14 {
		h.must("ppid")
	}
	if got := h.doctor().Processors; got == 1 && all > 1 { // the 15th alone
		t.Errorf("after 15 requests one at a time rukhd went back to one processor; it waits for 16")
	}
	if got := h.doctor().Processors; got != 1 { // the 16th
		t.Errorf("after 16 requests one at a time rukhd runs on %d processors, want 1", got)
	}

	// Fixed by the environment.
	h.must("daemon", "stop")
	first.wait(t)
	d := h.startProc(append(h.env[:len(h.env):len(h.env)], "GOMAXPROCS=3"), b.rukhd)
	h.waitAnswers(d, b.build)
	for range 16 {
		h.must("ppid")
	}
	if got := h.doctor().Processors; got != 3 {
		t.Errorf("with GOMAXPROCS=3 rukhd runs on %d processors after 16 requests one at a time, want 3", got)
	}
}
