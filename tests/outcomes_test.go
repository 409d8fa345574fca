package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/testpty"
)

// The same outcome on both hosts (invariant I1; issue 26, item 5), for
// what happens around a call rather than in it: the reader of its output
// gone, a terminal hung up. In-process, rukh died of these (SIGHUP) or
// reported them (SIGPIPE) where rukhd went on and said 0 or recorded
// something else.

// lastRecord is the newest invocation record of the home.
func (h *hostileHome) lastRecord(t *testing.T) map[string]any {
	t.Helper()
	list := exec.Command(h.rukh, "invocations", "list", "--json")
	list.Env = h.env
	out, err := list.Output()
	if err != nil {
		t.Fatalf("invocations list: %v", err)
	}
	var recs []map[string]any
	if err := json.Unmarshal(out, &recs); err != nil || len(recs) == 0 {
		t.Fatalf("invocations list: %v\n%s", err, out)
	}
	return recs[0]
}

// fifo makes a named pipe for a command (or its grandchild) to write to
// once something happened, and returns its path and a wait for that
// event, which returns what was written. Reading to the writer's end
// never leaves the writer a closed pipe.
func fifo(t *testing.T, dir, name string) (string, func(what string) string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(path) // from the writer's open to its close
		got <- string(data)
	}()
	return path, func(what string) string {
		t.Helper()
		select {
		case data := <-got:
			return data
		case <-time.After(dtHangGuard):
			t.Fatalf("%s: nothing was written within %s", what, dtHangGuard)
			return ""
		}
	}
}

func TestSameOutcomeOnBothHosts(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newHostileHome(t, host)

		// Its stdout's reader gone before rukh writes the result: rukh
		// ends as killed by SIGPIPE, after the call was recorded as it
		// ended, on both hosts (through rukhd: exit 0, before).
		t.Run("ClosedStdout", func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			cmd := exec.Command(h.rukh, "attack", "stat", "/")
			cmd.Env, cmd.Stdout = h.env, w
			err = cmd.Run()
			w.Close()
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
				t.Errorf("rukh with its stdout's reader gone: %v (%v), want killed by SIGPIPE", cmd.ProcessState, err)
			}
			if rec := h.lastRecord(t); rec["outcome"] != "succeeded" {
				t.Errorf("the call's record: %v, want succeeded", rec)
			}
		})

		// The terminal hung up during a call: the call is cancelled and
		// recorded interrupted, and rukh exits 130, on both hosts
		// (in-process, rukh died of SIGHUP and the next admission
		// recorded host_lost).
		t.Run("HangUp", func(t *testing.T) {
			defaultHangUp(t)
			started, wait := fifo(t, h.dir, "hangup.started")
			master, slave := testpty.Open(t)
			cmd := exec.Command(h.rukh, "attack", "sleep", started, "--other", "10m")
			cmd.Env = h.env
			r := startAtTerminal(t, cmd, slave)
			// Nothing reads the terminal (a read would hold the master
			// open past its Close); the call writes nothing to it.
			wait("rukh attack sleep on a terminal")
			master.Close() // the hang-up: SIGHUP to the session
			select {
			case <-r.exited:
			case <-time.After(dtHangGuard):
				t.Fatalf("rukh still runs %s after its terminal hung up", dtHangGuard)
			}
			if code := cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("rukh after a hang-up: %v, want exit 130", cmd.ProcessState)
			}
			if rec := h.lastRecord(t); rec["outcome"] != "cancelled" || rec["reason"] != "interrupted" {
				t.Errorf("the call's record after a hang-up: %v, want cancelled/interrupted", rec)
			}
		})
	})
}

// A store file its owner cannot read (chmod 000) is the host's condition,
// not the command's: exit 75, saying so (before: exit 1). In-process only:
// a running rukhd holds the file open, and one that starts refuses it so.
// Root reads any file, so this runs only unprivileged (.ci/nonroot runs
// it).
func TestUnreadableStore(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads a file of mode 000; .ci/nonroot runs this test unprivileged")
	}
	rukh, _ := hostBinaries(t)
	h := prepareHostileHome(t, rukh)
	db := filepath.Join(h.home, "data", "store.db")
	if err := os.Chmod(db, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(db, 0o600) })
	for _, args := range [][]string{{"attack", "stat", "/"}, {"ext", "list"}, {"invocations", "list"}} {
		cmd := exec.Command(h.rukh, args...)
		cmd.Env = h.env
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 75 || !strings.Contains(string(out), "cannot be opened") || !strings.Contains(string(out), db) {
			t.Errorf("rukh %s on a store of mode 000: %v\n%s\nwant exit 75 saying the store at %s cannot be opened", strings.Join(args, " "), err, out, db)
		}
	}
}

// defaultHangUp has the processes the test starts get SIGHUP's default
// disposition, as in a terminal's session, even when the test runs with
// it ignored (`nohup make test`): a child inherits an ignored signal, and
// rukh rightly leaves a hang-up it was started to ignore alone. A signal
// this process catches is the default again in a program it starts. (It
// catches it whether or not it was ignored: once a first Notify and Stop
// have put it back to ignored, signal.Ignored no longer says so.)
func defaultHangUp(t *testing.T) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	t.Cleanup(func() { signal.Stop(c) })
}
