package invoke

import (
	"os"
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

// This process is alive to itself only under its own start time: a
// record of an earlier process that had its pid (pid reuse) is not.
func TestSelfIsAliveOnlyAsItself(t *testing.T) {
	start := selfStart()
	if start == 0 {
		t.Fatal("cannot read this process's start time")
	}
	for _, tc := range []struct {
		name  string
		start uint64
		want  bool
	}{
		{"this process", start, true},
		{"an earlier process with this pid", start - 1, false},
		{"a later one", start + 1, false},
	} {
		if got := processAlive(os.Getpid(), tc.start); got != tc.want {
			t.Errorf("%s: processAlive = %v, want %v", tc.name, got, tc.want)
		}
	}
}
