package spawn

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestKillOrphans: a command's background child, left behind when the
// command exits, is reparented to the host that adopted orphans, and
// KillOrphans kills and reaps it; with no child left, hasChildren says so
// without reading /proc.
func TestKillOrphans(t *testing.T) {
	if hasChildren() {
		t.Fatal("the test process has a child before it started one")
	}
	if err := AdoptOrphans(); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	cmd := exec.Command("sh", "-c", "sleep 300 & echo $!")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the background pid: %v", err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("background pid %q: %v", line, err)
	}
	t.Cleanup(func() { syscall.Kill(orphan, syscall.SIGKILL) })
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !hasChildren() {
		t.Fatalf("sleep (pid %d) outlived sh, but hasChildren says there is no child", orphan)
	}
	KillOrphans()
	if hasChildren() {
		t.Fatalf("a child is left after KillOrphans: %v", children())
	}
	if err := syscall.Kill(orphan, 0); err != syscall.ESRCH {
		t.Fatalf("kill(%d, 0) after KillOrphans: %v, want ESRCH (killed and reaped)", orphan, err)
	}
}
