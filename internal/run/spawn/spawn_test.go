package spawn

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// AwaitExit returns for a process that exited before it was called and
// whose exit Go's poller had seen already: a read forgets what the poller
// saw before it began, so only asking the kernel finds that exit (the
// thin client waits for its command so, long after the command ended).
func TestAwaitExitOfAnExitedProcess(t *testing.T) {
	for range 20 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.PidfdOpen(cmd.Process.Pid, unix.PIDFD_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		pidfd := os.NewFile(uintptr(fd), "pidfd")
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
			t.Fatal(err)
		}
		// The process has exited; parked on a timer, this goroutine lets
		// the scheduler poll, and the poller see that exit.
		<-time.After(time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- AwaitExit(pidfd) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("AwaitExit: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("AwaitExit did not return within 10 s for a process that had exited")
		}
		pidfd.Close()
		cmd.Wait()
	}
}

// Proc.AwaitExit, in a host that adopts what its command leaves (as the
// thin client does), returns once the command has exited and leaves it
// unreaped: a zombie waitid still finds, and Wait then reaps with its
// status. A Proc without a pidfd says so at once, waiting for nothing.
func TestProcAwaitExit(t *testing.T) {
	if err := AdoptOrphans(); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	p, err := Start(exec.Command("sh", "-c", "exit 3"), Job{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.AwaitExit() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("AwaitExit: %v", err)
		}
	case <-time.After(10 * time.Second):
		p.Kill()
		t.Fatal("AwaitExit did not return within 10 s of a command that exits at once")
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil); err != nil || info.Signo != int32(syscall.SIGCHLD) {
		t.Fatalf("waitid after AwaitExit: %v, signo %d: want the exited command, not yet reaped", err, info.Signo)
	}
	if st := p.Wait(); st != 3 {
		t.Fatalf("Wait = %d, want 3", st)
	}
	if err := (&Proc{Pid: p.Pid}).AwaitExit(); err == nil {
		t.Fatal("AwaitExit without a pidfd returned nil; want an error at once")
	}
}
