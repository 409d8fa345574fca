package thin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// child is the command this client started for the daemon (wire.Spawn):
// at most one per command line.
type child struct {
	mu    sync.Mutex
	proc  *spawn.Proc
	pidfd *os.File
	told  chan struct{} // closed once it has exited and that was reported
	done  chan struct{} // closed once, after that, what it left is gone

	// caught, when set, runs once the command is started or the daemon
	// sends an event before asking for one: what catches the client's
	// stop signals when it hosts an extension command (Forward).
	caught func()
}

// catch runs ch.caught, if any.
func (ch *child) catch() {
	if ch != nil && ch.caught != nil {
		ch.caught()
	}
}

// start starts what the daemon asks, exactly as asked, with the same
// code the core uses (package spawn): in the caller's job when the
// caller's terminal is in the foreground, else in a group or session of
// its own. It answers Spawned (with the command's pidfd), and Exited once
// the command is gone.
//
// The command is not reaped until the daemon has answered the command
// line (stop): until then it is this process's child, exited or not, and
// its pidfd names it by pid, so that the daemon can check that it is
// (docs/daemon.md, "What a record proves") and read its exit status from
// the kernel rather than from Exited.
func (ch *child) start(c *wire.Conn, sp *wire.Spawn, files []*os.File) {
	defer closeFiles(files) // the child has its own copies
	fail := func(err error) { c.Send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, Error: err.Error()}}) }
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.proc != nil {
		fail(fmt.Errorf("a command line starts one command"))
		return
	}
	ex := &exec.Cmd{Path: sp.Path, Args: sp.Args, Env: sp.Env, Dir: sp.Dir,
		Stdin: files[0], Stdout: files[1], Stderr: files[2], ExtraFiles: files[3:]}
	job := spawn.Job{Isolation: spawn.Group, Supervised: sp.Supervised}
	if sp.Session {
		job.Isolation = spawn.Session
	}
	p, err := spawn.Start(ex, job)
	if err != nil {
		fail(err)
		return
	}
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		p.Signal(syscall.SIGKILL)
		p.Wait()
		fail(fmt.Errorf("pidfd_open: %w", err))
		return
	}
	pidfd := os.NewFile(uintptr(fd), "pidfd")
	err = c.Send(&wire.Msg{Spawned: &wire.Spawned{Ticket: sp.Ticket, PID: p.Pid, Foreground: p.Foreground}}, pidfd)
	ch.proc, ch.pidfd, ch.told, ch.done = p, pidfd, make(chan struct{}), make(chan struct{})
	if err != nil {
		p.Signal(syscall.SIGKILL)
	}
	ch.catch() // the command runs: from here on a Ctrl-C is a cancel
	go func() {
		status := exited(p)
		// The daemon is told first: what the command left behind (only
		// under a helper that was killed itself: a helper that exits
		// has ended all of it) is killed while the daemon records the
		// outcome, and before this client exits (stop).
		c.Send(&wire.Msg{Exited: &wire.Exited{Status: status}})
		close(ch.told)
		spawn.KillOrphansBut(p.Pid) // bounded (spawn.kill)
		close(ch.done)
	}()
}

// exited waits until the child p has exited, without reaping it, and
// returns its exit status as a shell reports it (-1 when it cannot be
// read). It waits through Go's poller (Proc.AwaitExit), else in
// waitid(2): a thread held in a system call for the whole command has
// the runtime start another one, and keeps its monitor waking every
// 20-40 µs (docs/benchmarks.md, "Fifth pass").
func exited(p *spawn.Proc) int {
	pid := p.Pid
	flags := unix.WEXITED | unix.WNOWAIT
	if p.AwaitExit() == nil {
		flags |= unix.WNOHANG // it has exited: waitid only reads that
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, flags, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1
		}
		if flags&unix.WNOHANG != 0 && info.Signo == 0 { // Linux fills in SIGCHLD for a child found
			flags &^= unix.WNOHANG // none waitable after all: wait for it
			continue
		}
		break
	}
	// A zombie's /proc/PID/stat ends with its wait status (field 52).
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 50 {
		return -1
	}
	ws, err := strconv.Atoi(f[49])
	if err != nil {
		return -1
	}
	return spawn.ShellStatus(syscall.WaitStatus(ws))
}

// stop kills the command when the daemon went away while it ran (its
// outcome is the daemon's to record, as host_lost, at its next start),
// waits until it is gone and reaps it, with what it left behind.
func (ch *child) stop() {
	ch.mu.Lock()
	p, told, done := ch.proc, ch.told, ch.done
	ch.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case <-told:
		<-done
	default:
		// SIGKILL of the helper too: one its command stopped or traces
		// acts on nothing else. A helper killed while traced is reported
		// only once its tracer, which this client adopted, is gone.
		p.Signal(syscall.SIGKILL)
		p.Kill()
		for swept := false; !swept; {
			select {
			case <-done:
				swept = true
			case <-time.After(50 * time.Millisecond):
				spawn.KillOrphansBut(p.Pid)
			}
		}
	}
	p.Wait()
	spawn.KillOrphans()
	ch.pidfd.Close()
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
