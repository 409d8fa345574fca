package spawn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// TestStartFiles: a command whose streams are files starts without
// os/exec (no ex.Process) and sees what os/exec would give it: the last
// value of a duplicated variable, its directory, the null device for a
// nil stream, an extra file at 3+i and nothing at a nil one's place; its
// exit status is a shell's, and its pidfd, not its pid, is what Kill
// signals. A stream that is not a file goes through os/exec.
func TestStartFiles(t *testing.T) {
	dir := t.TempDir()
	run := func(t *testing.T, ex *exec.Cmd, job Job) (*Proc, string) {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if ex.Stdout == nil {
			ex.Stdout = w
		}
		ex.ExtraFiles = append(ex.ExtraFiles, w)
		p, err := Start(ex, job)
		w.Close()
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { p.Kill(); p.Wait() })
		out, _ := io.ReadAll(r)
		return p, string(out)
	}
	t.Run("files", func(t *testing.T) {
		ex := exec.Command("/bin/sh", "-c", `echo "$A $(pwd)"; cat; echo "stdin done"; echo four >&4; echo "status of fd 3: $( (: <&3) 2>/dev/null && echo open || echo closed)"`)
		ex.Env, ex.Dir = []string{"A=first", "A=last"}, dir
		ex.ExtraFiles = []*os.File{nil} // fd 3; the pipe is fd 4
		ex.Stderr = os.Stderr
		p, out := run(t, ex, Job{Isolation: Session})
		if ex.Process != nil {
			t.Errorf("ex.Process = %v: os/exec started a command whose streams are all files", ex.Process)
		}
		want := "last " + dir + "\nstdin done\nfour\nstatus of fd 3: closed\n"
		if out != want {
			t.Errorf("the command wrote %q, want %q", out, want)
		}
		if got := p.Wait(); got != 0 {
			t.Errorf("Wait = %d, want 0", got)
		}
		p.Signal(syscall.SIGKILL) // once waited for: nothing, and no panic
		p.Kill()
	})
	t.Run("exit status", func(t *testing.T) {
		for _, c := range []struct {
			script string
			want   int
		}{{"exit 3", 3}, {"kill -TERM $$", 128 + int(syscall.SIGTERM)}} {
			p, _ := run(t, exec.Command("/bin/sh", "-c", c.script), Job{Isolation: Session})
			if got := p.Wait(); got != c.want {
				t.Errorf("%q: Wait = %d, want %d", c.script, got, c.want)
			}
		}
	})
	t.Run("null streams", func(t *testing.T) {
		// Nil stdout and stderr are the null device opened for writing,
		// as os/exec opens them.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ex := exec.Command("/bin/sh", "-c", `echo out; a=$?; echo err >&2; echo "$a $?" >&3`)
		ex.ExtraFiles = []*os.File{w}
		p, err := Start(ex, Job{Isolation: Session})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		if got := p.Wait(); got != 0 || string(out) != "0 0\n" {
			t.Errorf("Wait = %d; the writes to a nil stdout and stderr exited %q, want \"0 0\"", got, out)
		}
		if got := p.Wait(); got != -1 {
			t.Errorf("a second Wait = %d, want -1: the process was reaped already", got)
		}
	})
	// A supervised command's SIGKILL is SIGCONT and Kill (SIGUSR1) to the
	// process itself, not to its group: here a sleep, which SIGUSR1 ends.
	// It goes through the pidfd, or, where the kernel gives none (or
	// refuses to signal through it), to the pid, which is the command's
	// own until Wait reaps it.
	for _, pidfd := range []bool{true, false} {
		t.Run(fmt.Sprintf("signals, pidfd %v", pidfd), func(t *testing.T) {
			ex := exec.Command("/bin/sh", "-c", "echo started >&3; exec sleep 30")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ex.ExtraFiles = []*os.File{w}
			p, err := Start(ex, Job{Isolation: Session, Supervised: true})
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(-p.Pid, syscall.SIGKILL); p.Wait() })
			if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("the command's first line: %q, %v", line, err)
			}
			if !pidfd {
				p.handle.Close()
				p.handle = nil
			}
			p.Signal(syscall.SIGKILL)
			if got := p.Wait(); got != 128+int(Kill) {
				t.Errorf("Wait after Signal(SIGKILL) of a supervised command = %d, want %d (its Kill, SIGUSR1)", got, 128+int(Kill))
			}
		})
	}
	t.Run("a stream that is not a file", func(t *testing.T) {
		var buf strings.Builder
		ex := exec.Command("/bin/sh", "-c", "echo via os/exec")
		ex.Stdout = &buf
		p, err := Start(ex, Job{Isolation: Session})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Process == nil {
			t.Error("ex.Process is nil: a command with a writer for stdout did not go through os/exec")
		}
		if got := p.Wait(); got != 0 || buf.String() != "via os/exec\n" {
			t.Errorf("Wait = %d, output %q", got, buf.String())
		}
	})
	t.Run("no such program", func(t *testing.T) {
		_, err := Start(exec.Command(filepath.Join(dir, "missing")), Job{Isolation: Session})
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Op != "fork/exec" || !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("Start of a missing program: %v, want fork/exec …: ENOENT, as os/exec says", err)
		}
	})
}

// TestShellStatus: a wait status as a shell reports it, the one
// conversion the client, the daemon and the core share.
func TestShellStatus(t *testing.T) {
	for _, c := range []struct {
		ws   syscall.WaitStatus
		want int
	}{
		{0, 0},
		{3 << 8, 3},
		{syscall.WaitStatus(syscall.SIGTERM), 143},
		{syscall.WaitStatus(syscall.SIGKILL) | 0x80, 137},   // killed, core dumped
		{0x7f | syscall.WaitStatus(syscall.SIGSTOP)<<8, -1}, // stopped: no exit status
	} {
		if got := ShellStatus(c.ws); got != c.want {
			t.Errorf("ShellStatus(%#x) = %d, want %d", int(c.ws), got, c.want)
		}
	}
}
