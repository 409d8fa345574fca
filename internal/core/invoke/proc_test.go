package invoke

import (
	"os/exec"
	"testing"
	"time"
)

// A host that exited but was not reaped yet (a zombie) runs no more: its
// records must be resolvable as host_lost at once.
func TestZombieHostIsNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, ok := procStart(pid)
	for i := 0; ok && i < 500; i++ { // until it has exited (a hang guard: 5 s)
		if _, state, _ := procStat(pid); state == "Z" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		t.Fatal("cannot read the exited process")
	}
	if processAlive(pid, start) {
		t.Error("a zombie host counts as alive")
	}
	cmd.Wait()
	if processAlive(pid, start) {
		t.Error("a reaped host counts as alive")
	}
}
