package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Daemons started at the same instant for one home: exactly one serves;
// every other exits 75 saying a daemon answers (or does not answer yet)
// and removes nothing, so the one that serves keeps its socket.
func TestDaemonsStartedAtOnce(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", bin+"/", "../cmd/rukh", "../cmd/rukhd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "RUKH_HOME="+filepath.Join(dir, "home"))
	for round := range 3 {
		var wg sync.WaitGroup
		cmds := make([]*exec.Cmd, 4)
		for i := range cmds {
			cmds[i] = exec.Command(filepath.Join(bin, "rukhd"))
			cmds[i].Env = env
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		exited := make([]int, len(cmds))
		for i, c := range cmds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.Wait()
				exited[i] = c.ProcessState.ExitCode()
			}()
		}
		// The one that serves answers status with its own pid.
		var st struct{ PID int }
		for range 1500 { // a hang guard: 15 s
			c := exec.Command(filepath.Join(bin, "rukh"), "daemon", "status", "--json")
			c.Env = env
			if out, err := c.Output(); err == nil && json.Unmarshal(out, &st) == nil {
				break
			}
			sleep10ms()
		}
		serving := 0
		for _, c := range cmds {
			if c.Process.Pid == st.PID {
				serving++
			}
		}
		if serving != 1 {
			t.Fatalf("round %d: status names pid %d, which is none of the daemons started", round, st.PID)
		}
		stop := exec.Command(filepath.Join(bin, "rukh"), "daemon", "stop")
		stop.Env = env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Fatalf("daemon stop: %v: %s", err, out)
		}
		wg.Wait()
		for i, c := range cmds {
			switch {
			case c.Process.Pid == st.PID && exited[i] != 0:
				t.Errorf("round %d: the serving daemon exited %d", round, exited[i])
			case c.Process.Pid != st.PID && exited[i] != 75:
				t.Errorf("round %d: a second daemon exited %d, want 75", round, exited[i])
			}
		}
		// Nothing is left holding the store.
		list := exec.Command(filepath.Join(bin, "rukh"), "ext", "list")
		list.Env = env
		if out, err := list.CombinedOutput(); err != nil || strings.Contains(string(out), "locked") {
			t.Fatalf("round %d: after stop: %v: %s", round, err, out)
		}
	}
}
