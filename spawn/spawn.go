// Package spawn starts an extension command as a shell would start a job,
// and keeps track of everything it starts. The invocation core uses it to
// run a command in its own process; the thin client uses the same code
// for a command the daemon admitted but that must be the client's child
// to have the caller's terminal (docs/adr/0008-thin-client.md). It is a
// leaf: the thin client links it without the core.
package spawn

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Isolation is where a command is put among processes.
type Isolation int

const (
	// Group: a process group of its own (a CLI command), so that it and
	// what it starts are stopped together — unless it runs in the
	// foreground of its caller's terminal: then it joins the caller's
	// group, the shell's job, and is stopped alone (with KillOrphans).
	Group Isolation = iota
	// Session: a session of its own, with no controlling terminal (an MCP
	// call): it can neither read the owner's terminal nor ask on it.
	Session
)

// A command run in the foreground of its caller's terminal must behave
// as if the shell had started it: it reads the terminal (stdin or
// /dev/tty) without being stopped by SIGTTIN, Ctrl-C interrupts it,
// Ctrl-Z suspends it and its host together and `fg` resumes both, a
// resize reaches it (SIGWINCH), and tcgetpgrp(tty) == getpgrp() inside
// it. The shell gives all of that to its job's process group, so the
// command joins the host's group.

// Job is how a command is started.
type Job struct {
	Isolation Isolation
	// Supervised: the program started is the enforcement helper
	// (rukh-sandbox), which forks the command, stays its parent and the
	// subreaper of all it starts, and kills all of that when the command
	// exits, when it gets Kill, or when its host dies; it exits as the
	// command did. In the caller's job it passes on the signals sent to
	// it; in a group or session of its own the group's signals reach the
	// command directly.
	Supervised bool
}

// Kill is the signal that has a supervising helper kill the command and
// everything it started, then itself (as by SIGKILL): SIGKILL would end
// the helper alone and leave the rest to init.
const Kill = syscall.SIGUSR1

// Route says how sig reaches a command started as job: the signals for
// the process Start started, in order, and whether sig goes to its
// process group too. A command in the foreground (its caller's job) is
// signalled alone: the group is the caller's.
func Route(sig syscall.Signal, job Job, foreground bool) (proc []syscall.Signal, group bool) {
	switch {
	case job.Supervised && sig == syscall.SIGKILL:
		// SIGCONT first: a stopped helper acts on nothing.
		return []syscall.Signal{syscall.SIGCONT, Kill}, false
	case foreground:
		return []syscall.Signal{sig}, false
	default:
		return nil, true
	}
}

// Proc is a started command.
type Proc struct {
	Pid        int
	Foreground bool // it joined its host's process group (see Group)
	job        Job
	cmd        *exec.Cmd
	exited     atomic.Bool
}

// Start starts ex as job; the process started dies with the thread that
// started it (PR_SET_PDEATHSIG; the Go runtime never ends a thread of a
// live process), and a supervising helper then kills everything the
// command started. Start sets ex.SysProcAttr.
func Start(ex *exec.Cmd, job Job) (*Proc, error) {
	fg := job.Isolation == Group && Foreground(ex.Stdin, ex.Stdout, ex.Stderr)
	ex.SysProcAttr = &syscall.SysProcAttr{Setpgid: job.Isolation == Group && !fg, Setsid: job.Isolation == Session, Pdeathsig: syscall.SIGKILL}
	if err := ex.Start(); err != nil {
		return nil, err
	}
	return &Proc{Pid: ex.Process.Pid, Foreground: fg, job: job, cmd: ex}, nil
}

// Signal sends sig to the command as Route says. Once the command was
// waited for, only its group is signalled (what is left of it): its pid
// may be another process's by then.
func (p *Proc) Signal(sig syscall.Signal) {
	if p.exited.Load() {
		if !p.Foreground {
			syscall.Kill(-p.Pid, sig)
		}
		return
	}
	proc, group := Route(sig, p.job, p.Foreground)
	for _, s := range proc {
		p.cmd.Process.Signal(s) // a pidfd: never another process
	}
	if group {
		syscall.Kill(-p.Pid, sig)
	}
}

// Kill ends the process Start started at once, whatever its state — a
// supervising helper that is stopped (SIGSTOP) or traced acts on no Kill
// — with SIGKILL, and its group unless it runs in its caller's job. The
// command then dies by its parent-death signal; what it detached is the
// next subreaper's (KillOrphans in a host of one call).
func (p *Proc) Kill() {
	if !p.exited.Load() {
		p.cmd.Process.Signal(syscall.SIGKILL) // a pidfd: never another process
	}
	if !p.Foreground {
		syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}

// Wait waits for the command to exit and returns its exit status as a
// shell reports it: 128+N when signal N ended it, -1 when it cannot be
// known. What is left of its group is killed then.
func (p *Proc) Wait() int {
	err := p.cmd.Wait()
	p.exited.Store(true)
	p.Signal(syscall.SIGKILL)
	return ExitStatus(err)
}

// ExitStatus is the exit status err (of exec.Cmd.Wait) stands for, as a
// shell reports it.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// Foreground reports whether streams put a command in the foreground of
// this process's controlling terminal: one of them is a terminal whose
// foreground process group is this process's. A host serving another
// process's terminal (rukhd), or a CLI started in the background
// (`rukh … &`), is not in its foreground.
func Foreground(streams ...any) bool {
	pgrp := syscall.Getpgrp()
	for _, s := range streams {
		f, ok := s.(*os.File)
		if !ok || f == nil {
			continue
		}
		if fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP); err == nil && fg == pgrp {
			return true
		}
	}
	return false
}

// adopted is set by AdoptOrphans.
var adopted atomic.Bool

// AdoptOrphans makes this process the child subreaper of every process
// its commands start (PR_SET_CHILD_SUBREAPER): a grandchild whose parent
// exits, or that calls setsid(), stays below it, and KillOrphans kills
// all of them. Only a process that hosts one call and nothing else may
// call it: the one-shot core of a CLI command line, or the thin client
// that runs the one command the daemon admitted for it — never a daemon
// or `rukh mcp`, which host many calls at once.
func AdoptOrphans() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	adopted.Store(true)
	return nil
}

// KillOrphans kills and reaps every child of this process, and their
// children as they are reparented to it, once AdoptOrphans made it the
// subreaper: what the call left running when it ended. It gives up after
// a bounded number of rounds (a fork bomb cannot keep it here).
func KillOrphans() { KillOrphansBut(0) }

// KillOrphansBut is KillOrphans that leaves the child keep alone: the
// thin client's command, which it keeps unreaped until the daemon is done
// with it.
func KillOrphansBut(keep int) {
	if !adopted.Load() {
		return
	}
	for range 64 {
		if !hasChildren() {
			return // the common case, in one system call
		}
		kids := slices.DeleteFunc(children(), func(pid int) bool { return pid == keep })
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			var ws syscall.WaitStatus
			for {
				if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
					break
				}
			}
		}
	}
}

// hasChildren reports whether this process has a child, running or
// exited: waitid without reaping (WNOWAIT) fails with ECHILD only when it
// has none. It is one system call; children reads a file per thread.
func hasChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
		if err != unix.EINTR {
			return err != unix.ECHILD
		}
	}
}

// children lists this process's children, from each thread's list
// (/proc/self/task/TID/children).
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
