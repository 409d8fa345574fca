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
