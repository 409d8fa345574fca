package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// The hosts a client of Rukh can have, as gopls runs its tests "direct"
// and "forwarded" (lsprpc_test.go) and TestScripts runs every script:
//
//	in-process  `rukh mcp` and every `rukh` command run the core
//	            themselves, each opening the store for a moment
//	daemon      a real rukhd process serves the test's RUKH_HOME: `rukh
//	            mcp` sends every tools/list and tools/call to it, and
//	            `rukh` forwards its command lines to it
//
// The MCP client suites (TestMCPProcess, TestMCPSignalAndDiagnostics,
// TestTypeScriptClient, TestInspectorCLI, TestGreetProgressOverMCP) and
// TestParity run their every scenario against both, with the same
// assertions, so both hosts give identical results; where a test can
// compare what the clients saw, acrossHosts requires it to be the same.
// A test joins the table by wrapping its body in forEachHost and calling
// h.serve once its RUKH_HOME is prepared: from then on the daemon holds
// the store's lock, so the test reaches the home only through the rukh
// binaries.
var hostModes = []string{"in-process", "daemon"}

// testHost is one host of the table, with the binaries every test of the
// table runs: one build of rukh and rukhd per test binary.
type testHost struct {
	Mode   string // "in-process" or "daemon"
	Daemon bool
	Rukh   string // the built rukh
	Rukhd  string // the built rukhd
}

// forEachHost runs body as the subtests "in-process" and "daemon", in
// that order.
func forEachHost(t *testing.T, body func(t *testing.T, h *testHost)) {
	t.Helper()
	rukh, rukhd := hostBinaries(t)
	for _, mode := range hostModes {
		t.Run(mode, func(t *testing.T) {
			body(t, &testHost{Mode: mode, Daemon: mode == "daemon", Rukh: rukh, Rukhd: rukhd})
		})
	}
}

// served is how a home is served.
type served struct {
	// PID is the daemon's process id; 0 in-process, where each client
	// process hosts the commands it runs.
	PID int
}

// parentOf is the process an extension command started by a call of the
// client process pid runs under (through its supervisor, rukh-sandbox:
// hostPID): that client in-process, the daemon otherwise.
func (s *served) parentOf(client int) int {
	if s.PID != 0 {
		return s.PID
	}
	return client
}

// hostPID is a shell word for the process that runs a command: the
// parent of its parent, the supervising rukh-sandbox; "unsupervised" when
// the command's parent is not rukh-sandbox.
const hostPID = `$(read -r _ _ _ pp _ < /proc/$PPID/stat; case $(readlink /proc/$PPID/exe) in */rukh-sandbox) echo $pp;; *) echo unsupervised;; esac)`

// serve serves home, prepared by the test, until t ends. In daemon mode
// it starts the built rukhd on home and waits until `rukh daemon status`
// answers with its pid; when t ends, that same daemon must still answer
// (a daemon that died would have let the clients fall back to in-process
// silently), `rukh daemon stop` must stop it and it must exit 0. In
// process, no daemon may answer for home when t ends.
func (h *testHost) serve(t *testing.T, home string) *served {
	t.Helper()
	env := append(os.Environ(), "RUKH_HOME="+home)
	if !h.Daemon {
		t.Cleanup(func() {
			cmd := exec.Command(h.Rukh, "daemon", "status")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitcode.Unavailable {
				t.Errorf("in-process, but `rukh daemon status` says (%v):\n%s", err, out)
			}
		})
		return &served{}
	}

	logPath := filepath.Join(testhome.TempDir(t), "rukhd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// The idle timeout only bounds a daemon that a crashed test binary
	// left behind: every test keeps it busy, and the check at the end
	// catches one that left early.
	cmd := exec.Command(h.Rukhd, "--idle-timeout", "1m")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Start()
	logf.Close()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	daemonLog := func() string {
		data, _ := os.ReadFile(logPath)
		return string(data)
	}
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill() // the test failed before its stop
			<-exited
		}
		if log := daemonLog(); t.Failed() || strings.Contains(log, "level=ERROR") {
			if strings.Contains(log, "level=ERROR") {
				t.Errorf("rukhd logged an error")
			}
			t.Logf("rukhd log:\n%s", log)
		}
	})

	var pid int
	for end := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("rukhd exited at once (%v):\n%s", cmd.ProcessState, daemonLog())
		default:
		}
		st, err := hostDaemonStatus(h.Rukh, env)
		switch {
		case err == nil && st.PID != cmd.Process.Pid:
			t.Fatalf("`rukh daemon status` answers with pid %d, not the rukhd just started (%d)", st.PID, cmd.Process.Pid)
		case err == nil:
			pid = st.PID
		case time.Now().After(end):
			t.Fatalf("rukhd did not answer `rukh daemon status` within 10 s (%v):\n%s", err, daemonLog())
		}
	}

	t.Cleanup(func() {
		if st, err := hostDaemonStatus(h.Rukh, env); err != nil || st.PID != pid {
			t.Errorf("at the end of the test, the rukhd that served it (pid %d) no longer answers (status %+v, %v): clients may have run in-process", pid, st, err)
		}
		stop := exec.Command(h.Rukh, "daemon", "stop")
		stop.Env = env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("rukh daemon stop: %v\n%s", err, out)
		}
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("rukhd (pid %d) still runs 15 s after `rukh daemon stop`", pid)
			return // the cleanup before kills it
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("rukhd exited %d after `rukh daemon stop`, want 0", code)
		}
	})
	return &served{PID: pid}
}

// acrossHosts collects what each host gave, by key, for a test to
// require the same of both once forEachHost has returned. Invocation ids
// differ by nature and are replaced by "ID".
type acrossHosts struct {
	mu   sync.Mutex
	keys []string
	got  map[string]map[string]string // key → mode → result
	seen map[string]int               // mode + key → how many recorded
}

// record records result as what host h gave for key; a key recorded
// again (the second call of a subtest, say) gets its own number.
func (a *acrossHosts) record(h *testHost, key, result string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.got == nil {
		a.got, a.seen = map[string]map[string]string{}, map[string]int{}
	}
	n := a.seen[h.Mode+"\x00"+key]
	a.seen[h.Mode+"\x00"+key] = n + 1
	if n > 0 {
		key = fmt.Sprintf("%s #%d", key, n+1)
	}
	if a.got[key] == nil {
		a.got[key] = map[string]string{}
		a.keys = append(a.keys, key)
	}
	a.got[key][h.Mode] = invocationID.ReplaceAllString(result, "ID")
}

// check requires every key both hosts recorded to have the same result.
func (a *acrossHosts) check(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, key := range a.keys {
		in, ok1 := a.got[key]["in-process"]
		d, ok2 := a.got[key]["daemon"]
		if ok1 && ok2 && in != d {
			t.Errorf("%s: in process and through rukhd differ:\nin-process %s\ndaemon     %s", key, in, d)
		}
	}
}

// invocationID matches an invocation id.
var invocationID = regexp.MustCompile(`\b[0-9a-f]{32}\b`)

// hostDaemonStatus is `rukh daemon status --json`.
func hostDaemonStatus(rukh string, env []string) (*hostStatus, error) {
	cmd := exec.Command(rukh, "daemon", "status", "--json")
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var st hostStatus
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("daemon status --json: %v: %s", err, out)
	}
	return &st, nil
}

type hostStatus struct {
	PID      int    `json:"pid"`
	Build    string `json:"build"`
	Socket   string `json:"socket"`
	Revision uint64 `json:"revision"`
}

// hostBins are the binaries of the table, built once per test binary
// into a directory TestMain removes.
var hostBins struct {
	once  sync.Once
	dir   string
	build string // the build id both print: `rukhd version`
	err   error
}

// hostBinaries builds rukh and rukhd once, in one go command, so that
// both carry the same build id (a daemon serves only its own build).
func hostBinaries(t testing.TB) (rukh, rukhd string) {
	t.Helper()
	hostBins.once.Do(func() {
		hostBins.dir, hostBins.err = os.MkdirTemp("", "rukh-tests-bin-")
		if hostBins.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", hostBins.dir+string(filepath.Separator), "../cmd/rukh", "../cmd/rukhd")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and the .deb build them
		out, err := build.CombinedOutput()
		if err != nil {
			hostBins.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		// The one-shot core beside them, as make build and the .deb lay it
		// out: the thin rukh runs a command line of one extension
		// command in it when no daemon serves.
		build = exec.Command("go", "build", "-tags", "rukh_oneshot", "-o", filepath.Join(hostBins.dir, "rukh-oneshot"), "../cmd/rukhd")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			hostBins.err = fmt.Errorf("go build -tags rukh_oneshot: %v\n%s", err, out)
			return
		}
		// The enforcement helper beside them, as make build and the .deb
		// install it: it supervises every call.
		if hostBins.err = sandbox.Build(filepath.Join(hostBins.dir, "rukh-sandbox")); hostBins.err != nil {
			return
		}
		// The id depends on how go build stamped them (GOFLAGS, VCS), so
		// it is read from what was built, never assumed to be this test
		// binary's own.
		out, err = exec.Command(filepath.Join(hostBins.dir, "rukhd"), "version").Output()
		id, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "rukhd ")
		if err != nil || !ok || id == "" {
			hostBins.err = fmt.Errorf("rukhd version: %v: %q", err, out)
		}
		hostBins.build = id
	})
	if hostBins.err != nil {
		t.Fatal(hostBins.err)
	}
	return filepath.Join(hostBins.dir, "rukh"), filepath.Join(hostBins.dir, "rukhd")
}

// cliInto puts the built rukh, rukhd and rukh-sandbox (hard links to
// hostBinaries') into dir, for a test that changes what is beside them,
// and returns rukh's path: the thin rukh runs rukhd beside it.
func cliInto(t testing.TB, dir string) string {
	t.Helper()
	rukh, rukhd := hostBinaries(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{rukh, rukhd, filepath.Join(hostBins.dir, "rukh-sandbox")} {
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.Link(src, dst); err != nil {
			data, rerr := os.ReadFile(src)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err := os.WriteFile(dst, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return filepath.Join(dir, "rukh")
}

// hostBuild is the build id of the binaries hostBinaries built: what a
// client in this test process must present to their daemon.
func hostBuild(t testing.TB) string {
	t.Helper()
	hostBinaries(t)
	return hostBins.build
}

// removeHostBinaries removes what hostBinaries built.
func removeHostBinaries() {
	if hostBins.dir != "" {
		testhome.MakeWritable(hostBins.dir) // the damage template's releases
		os.RemoveAll(hostBins.dir)
	}
}

// cleanupM removes the built binaries once the tests have run.
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	defer removeHostBinaries()
	return c.m.Run()
}

// homePaths are the paths of the CLI rukh whose RUKH_HOME is home, and
// no other variable set.
func homePaths(home string) (paths.Paths, error) {
	return paths.Resolve("rukh", func(k string) string {
		if k == "RUKH_HOME" {
			return home
		}
		return ""
	})
}
