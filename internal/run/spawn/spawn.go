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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
	cmd        *exec.Cmd // started by os/exec; nil when startFiles started it
	handle     *os.File  // startFiles's: the pidfd its clone gave, nil if none
	reap       sync.Mutex
	reaped     bool // startFiles's process was reaped: its pid may be another's
	exited     atomic.Bool
	pidfd      *os.File // where this process is a subreaper (unblock)
}

// Start starts ex as job; the process started dies with the thread that
// started it (PR_SET_PDEATHSIG; the Go runtime never ends a thread of a
// live process), and a supervising helper then kills everything the
// command started. Start sets ex.SysProcAttr.
//
// A command whose streams are all files (or none) starts without
// os/exec (startFiles), and ex.Process stays nil.
func Start(ex *exec.Cmd, job Job) (*Proc, error) {
	fg := job.Isolation == Group && Foreground(ex.Stdin, ex.Stdout, ex.Stderr)
	ex.SysProcAttr = &syscall.SysProcAttr{Setpgid: job.Isolation == Group && !fg, Setsid: job.Isolation == Session, Pdeathsig: syscall.SIGKILL}
	p := &Proc{Foreground: fg, job: job}
	if files, ok := streamFiles(ex); ok {
		pid, handle, err := startFiles(ex, files)
		if err != nil {
			return nil, err
		}
		p.Pid, p.handle = pid, handle
	} else {
		if err := StartTracked(ex); err != nil {
			return nil, err
		}
		p.Pid, p.cmd = ex.Process.Pid, ex
	}
	if adopted.Load() || strays.Load() {
		// Readable once it has exited, whether or not it is reported
		// to this process (Wait).
		if fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK); err == nil {
			p.pidfd = os.NewFile(uintptr(fd), "pidfd")
		}
	}
	return p, nil
}

// StartTracked starts ex as a child this process knows it started, so
// that KillOrphans in a host of many calls never takes it for a stray;
// Untrack forgets it once it was waited for. Start does both. From a
// host, ex starts with the default timer slack (forkAsCommand).
func StartTracked(ex *exec.Cmd) error {
	starting.RLock()
	defer starting.RUnlock()
	var err error
	forkAsCommand(func() { err = ex.Start() })
	if err != nil {
		return err
	}
	live.Store(ex.Process.Pid, true)
	return nil
}

// Untrack forgets a child StartTracked started, once it was waited for.
func Untrack(pid int) { live.Delete(pid) }

// OpenNull opens the null device as a command's standard stream fd (0,
// 1 or 2), as os/exec opens it for a nil stream: for reading as stdin,
// for writing as stdout or stderr.
func OpenNull(fd int) (*os.File, error) {
	if fd == 0 {
		return os.Open(os.DevNull)
	}
	return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
}

// streamFiles returns ex's standard streams and extra files as
// startFiles takes them, when each stream is a file or nil (the null
// device): os/exec would then copy nothing either, and start no
// goroutine.
func streamFiles(ex *exec.Cmd) ([]*os.File, bool) {
	if ex.Cancel != nil || ex.Err != nil {
		return nil, false
	}
	files := make([]*os.File, 0, 3+len(ex.ExtraFiles))
	for _, s := range []any{ex.Stdin, ex.Stdout, ex.Stderr} {
		switch f := s.(type) {
		case *os.File:
			files = append(files, f)
		case nil:
			files = append(files, nil)
		default:
			return nil, false
		}
	}
	return append(files, ex.ExtraFiles...), true
}

// startFiles starts ex as os/exec would, with its streams and extra
// files as files (streamFiles), and returns its pid and the pidfd the
// clone gave (CLONE_PIDFD), through which Signal reaches it and never
// another process. It does not go through os.StartProcess, which first
// checks once per process that the kernel's pidfds work: a pidfd_open,
// a waitid and the clone of a child that exits at once, 0.1–0.2 ms of a
// host that starts one command, the thin client and the one-shot core
// (docs/benchmarks.md, "Twelfth pass"). The environment is os/exec's
// (Cmd.Environ: the last value of a name wins), and a nil stream is the
// null device, as there. From a host, it starts with the default timer
// slack (forkAsCommand).
func startFiles(ex *exec.Cmd, files []*os.File) (pid int, handle *os.File, err error) {
	fds := make([]uintptr, len(files))
	for i, f := range files {
		switch {
		case f == nil && i < 3:
			null, err := OpenNull(i)
			if err != nil {
				return 0, nil, err
			}
			defer null.Close()
			fds[i] = null.Fd()
		case f == nil:
			fds[i] = ^uintptr(0) // closed in the child, as os/exec leaves it
		default:
			fds[i] = f.Fd()
		}
	}
	args := ex.Args
	if len(args) == 0 {
		args = []string{ex.Path}
	}
	pidfd := -1
	sys := *ex.SysProcAttr
	sys.PidFD = &pidfd
	starting.RLock()
	defer starting.RUnlock()
	attr := &syscall.ProcAttr{Dir: ex.Dir, Env: ex.Environ(), Files: fds, Sys: &sys}
	forkAsCommand(func() { pid, err = syscall.ForkExec(ex.Path, args, attr) })
	if err != nil {
		return 0, nil, &os.PathError{Op: "fork/exec", Path: ex.Path, Err: err}
	}
	live.Store(pid, true)
	if pidfd < 0 {
		return pid, nil, nil // a kernel without CLONE_PIDFD: signal falls back to the pid
	}
	return pid, os.NewFile(uintptr(pidfd), "pidfd"), nil
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
		p.signal(s)
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
		p.signal(syscall.SIGKILL)
	}
	if !p.Foreground {
		syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}

// Wait waits for the command to exit and returns its exit status as a
// shell reports it: 128+N when signal N ended it, -1 when it cannot be
// known. What is left of its group is killed then.
func (p *Proc) Wait() int {
	done := make(chan struct{})
	if p.pidfd != nil {
		// The exit is awaited through the poller first, so that no thread
		// sits in wait(2) while the command runs: one in a system call
		// keeps the runtime's monitor waking every 20-40 µs, CPU taken
		// from the command (docs/benchmarks.md, "Fifth pass").
		AwaitExit(p.pidfd)
		go p.unblock(done)
	}
	status := p.wait()
	close(done)
	if p.pidfd != nil {
		p.pidfd.Close()
	}
	Untrack(p.Pid)
	p.exited.Store(true)
	if p.handle != nil {
		p.handle.Close() // a Signal that holds it closes it once done
	}
	p.Signal(syscall.SIGKILL)
	return status
}

// signal sends sig to the process Start started, never to another one:
// through its pidfd, or, where the kernel gave none or refuses
// pidfd_send_signal (an old kernel, a seccomp profile that predates it),
// to its pid while it is not reaped (wait), when the pid is still its
// own, as os/exec does.
func (p *Proc) signal(sig syscall.Signal) {
	if p.cmd != nil {
		p.cmd.Process.Signal(sig)
		return
	}
	p.reap.Lock()
	defer p.reap.Unlock()
	if p.reaped {
		return
	}
	if p.handle == nil {
		syscall.Kill(p.Pid, sig)
		return
	}
	rc, err := p.handle.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { err = unix.PidfdSendSignal(int(fd), sig, nil, 0) })
	if err == unix.ENOSYS || err == unix.EPERM {
		syscall.Kill(p.Pid, sig)
	}
}

// wait reaps the process Start started and returns its exit status as a
// shell reports it; -1 once it was reaped already.
func (p *Proc) wait() int {
	if p.cmd != nil {
		return ExitStatus(p.cmd.Wait())
	}
	p.reap.Lock()
	reaped := p.reaped
	p.reap.Unlock()
	if reaped {
		return -1
	}
	// Until it is reaped its pid is its own, so it is waited for first
	// without reaping it, then reaped where signal cannot be sending to
	// that pid.
	var info unix.Siginfo
	for {
		if err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			break
		}
	}
	p.reap.Lock()
	defer p.reap.Unlock()
	if p.reaped {
		return -1
	}
	p.reaped = true
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.Pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1
		}
		break
	}
	return ShellStatus(ws)
}

// AwaitExit returns once the command has exited, without reaping it,
// waiting through Go's poller on the pidfd Start opened in a process that
// adopts what its commands leave (AdoptOrphans, AdoptStrays), so that no
// thread is held while it runs. Without that pidfd it returns an error at
// once: the caller then waits its own way.
func (p *Proc) AwaitExit() error {
	if p.pidfd == nil {
		return errors.New("spawn: no pidfd to wait on")
	}
	return AwaitExit(p.pidfd)
}

// AwaitExit returns once the process pidfd names has exited, waiting
// through Go's poller, so that no thread is held: pidfd must have been
// opened non-blocking (os.NewFile then puts it in the poller). It returns
// an error, without waiting, for a pidfd the poller does not take, and
// when pidfd is closed or its read deadline passes first.
func AwaitExit(pidfd *os.File) error {
	rc, err := pidfd.SyscallConn()
	if err != nil {
		return err
	}
	// Ask the kernel each time: a read forgets what the poller saw
	// before it began, so an exit seen then would never be seen again.
	return rc.Read(func(fd uintptr) bool { return ExitedNow(int(fd)) })
}

// ExitedNow reports, without waiting, whether the process the pidfd fd
// names has exited (or fd cannot be polled: nothing to wait for then).
func ExitedNow(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}

// unblock, once the process has exited (AwaitExit), kills what this
// process adopted (KillStrays) now and then until Wait has reported it
// (done): a process killed while traced is reported to its parent only
// once its tracer is gone, and a tracer that a command started is one of
// those (the helper's SIGKILL at the end of a call it was held in:
// invoke.Process.Kill). Normally Wait returns first.
func (p *Proc) unblock(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(sweepEvery):
			KillStrays()
		}
	}
}

// sweepEvery is how often unblock kills what holds an exited process.
const sweepEvery = 50 * time.Millisecond

// ExitStatus is the exit status err (of exec.Cmd.Wait) stands for, as a
// shell reports it.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ShellStatus(ws)
		}
		return ee.ExitCode()
	}
	return -1
}

// ShellStatus is the wait status ws as a shell reports it: the exit
// status, or 128 plus the number of the signal that ended the process.
func ShellStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
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

// adopted is set by AdoptOrphans, strays by AdoptStrays.
var adopted, strays atomic.Bool

// live holds the children this process started and has not waited for
// (StartTracked); starting is held shared while one is started, and
// exclusively while KillOrphans tells them from strays.
var (
	live     sync.Map // pid → true
	starting sync.RWMutex
)

// AdoptOrphans makes this process the child subreaper of every process
// its commands start (PR_SET_CHILD_SUBREAPER): a grandchild whose parent
// exits, or that calls setsid(), stays below it, and KillOrphans kills
// all of them. Only a process that hosts one call and nothing else may
// call it: the one-shot core of a CLI command line, or the thin client
// that runs the one command the daemon admitted for it. A host of many
// calls (rukhd, `rukh mcp`) calls AdoptStrays.
func AdoptOrphans() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	adopted.Store(true)
	return nil
}

// AdoptStrays makes a host of many calls at once (rukhd, `rukh mcp`) the
// child subreaper of what its commands leave when their supervising
// helper is killed — by the command itself, which under `host` may, or
// by the host at the end of a call whose helper did not obey — so that
// it does not go to init: KillOrphans then kills and reaps every child
// that is not one this process started and still waits for.
func AdoptStrays() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	strays.Store(true)
	return nil
}

// KillOrphans kills and reaps every child of this process, and their
// children as they are reparented to it, once AdoptOrphans made it the
// subreaper of its one call: what the call left running when it ended.
func KillOrphans() { KillOrphansBut(0) }

// KillOrphansBut is KillOrphans that leaves the child keep alone: the
// thin client's command, which it keeps unreaped until the daemon is done
// with it.
func KillOrphansBut(keep int) {
	if adopted.Load() {
		kill(func(pid int) bool { return pid != keep })
	}
}

// KillStrays kills and reaps every child of this process that it did
// not start (StartTracked) and still wait for, and their children as
// they are reparented to it, once AdoptStrays or AdoptOrphans made it a
// subreaper: what a call whose helper was killed left running. A helper
// killed while traced is not reported to its parent until its tracer is
// gone, and its tracer is one of these.
func KillStrays() {
	if !strays.Load() && !adopted.Load() {
		return
	}
	starting.Lock()
	defer starting.Unlock()
	kill(func(pid int) bool {
		_, ours := live.Load(pid)
		return !ours
	})
}

// kill kills and reaps the children stray reports true of, round after
// round as their own children are reparented here. It gives up after a
// bounded number of rounds (a fork bomb cannot keep it here).
func kill(stray func(pid int) bool) {
	for range 64 {
		if !hasChildren() {
			return // the common case, in one system call
		}
		var kids []int
		for _, pid := range children() {
			if stray(pid) {
				kids = append(kids, pid)
			}
		}
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
