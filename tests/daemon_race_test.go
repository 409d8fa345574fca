package tests

import (
	"encoding/json"
	"github.com/rukh-cli/rukh/internal/testhome"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		for i := range procs {
			cmd := exec.Command(rukhd)
			cmd.Env = env
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			p := proc{cmd, make(chan struct{})}
			go func() { cmd.Wait(); close(p.exited) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-p.exited })
			procs[i] = p
		}
		// The one that serves answers status with its own pid.
		var st struct{ PID int }
		var last []byte
		for i := 0; ; i++ {
			out, err := run("daemon", "status", "--json")
			if err == nil && json.Unmarshal(out, &st) == nil {
				break
			}
			last = out
			if i == 1500 {
				t.Fatalf("round %d: no daemon answered `rukh daemon status` within 30 s: %s", round, last)
			}
			time.Sleep(20 * time.Millisecond)
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
