package daemon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/spawn"
	"github.com/rukh-cli/rukh/wire"
)

// spawnAnswer bounds how long the daemon waits for a client to say it
// started a command (Spawned): starting a process takes milliseconds.
const spawnAnswer = 10 * time.Second

// clientSpawner has the client that sent an Exec start the command the
// daemon admitted for it (wire.Spawn), so that the command is a child of
// the caller's own job at the caller's terminal; the daemon keeps
// everything else — resolving, admission, the channel, the deadline, the
// record (docs/adr/0008-thin-client.md). One Exec starts at most one
// command.
type clientSpawner struct {
	c       *wire.Conn
	replies chan clientReply // Spawned, then Exited, routed by watch
	gone    chan struct{}    // closed when the connection ends

	mu   sync.Mutex
	used bool
}

type clientReply struct {
	m     *wire.Msg
	files []*os.File
}

func newClientSpawner(c *wire.Conn) *clientSpawner {
	return &clientSpawner{c: c, replies: make(chan clientReply, 2), gone: make(chan struct{})}
}

// route takes a client's Spawned or Exited frame; it reports false for a
// frame nobody asked for.
func (sp *clientSpawner) route(m *wire.Msg, files []*os.File) bool {
	select {
	case sp.replies <- clientReply{m, files}:
		return true
	default:
		return false
	}
}

func (sp *clientSpawner) Spawn(ex *exec.Cmd, job spawn.Job) (invoke.Process, error) {
	sp.mu.Lock()
	used := sp.used
	sp.used = true
	sp.mu.Unlock()
	if used {
		return nil, errors.New("a command line starts one command")
	}
	files := make([]*os.File, 0, 3+len(ex.ExtraFiles))
	for _, s := range []any{ex.Stdin, ex.Stdout, ex.Stderr} {
		switch f := s.(type) {
		case *os.File:
			files = append(files, f)
		case nil:
			null, err := os.Open(os.DevNull)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			files = append(files, null)
		default:
			return nil, fmt.Errorf("the client can only be given descriptors, not a %T", s)
		}
	}
	files = append(files, ex.ExtraFiles...)
	if len(files) > wire.MaxFiles {
		return nil, fmt.Errorf("%d descriptors; the client takes at most %d", len(files), wire.MaxFiles)
	}
	msg := &wire.Spawn{Path: ex.Path, Args: ex.Args, Env: ex.Env, Dir: ex.Dir, Session: job.Isolation == spawn.Session, Supervised: job.Supervised, Files: len(files)}
	if err := sp.c.Send(&wire.Msg{Spawn: msg}, files...); err != nil {
		return nil, fmt.Errorf("ask the client to start the command: %w", err)
	}
	timer := time.NewTimer(spawnAnswer)
	defer timer.Stop()
	select {
	case r := <-sp.replies:
		if r.m.Spawned == nil {
			closeAll(r.files)
			return nil, errors.New("the client answered the spawn with something else")
		}
		if r.m.Spawned.Error != "" {
			return nil, errors.New(r.m.Spawned.Error)
		}
		return &clientProc{sp: sp, pid: r.m.Spawned.PID, fg: r.m.Spawned.Foreground, job: job, pidfd: r.files[0]}, nil
	case <-sp.gone:
		return nil, errors.New("the client went away before it started the command")
	case <-timer.C:
		return nil, fmt.Errorf("the client did not say within %s whether it started the command", spawnAnswer)
	}
}

// clientProc is a command the client started: the daemon signals it
// through its pidfd (which names that process, never a reused pid) and
// learns its exit status from the client.
type clientProc struct {
	sp    *clientSpawner
	pid   int
	fg    bool
	job   spawn.Job
	pidfd *os.File
	mu    sync.Mutex // guards pidfd against Wait closing it
	ended bool       // Wait returned: the pidfd is closed
}

func (p *clientProc) InForeground() bool { return p.fg }

func (p *clientProc) Signal(sig syscall.Signal) {
	proc, group := spawn.Route(sig, p.job, p.fg)
	p.mu.Lock()
	if !p.ended {
		for _, s := range proc {
			unix.PidfdSendSignal(int(p.pidfd.Fd()), s, nil, 0)
		}
	}
	p.mu.Unlock()
	if group {
		// Its group (named by its pid while it lives).
		syscall.Kill(-p.pid, sig)
	}
}

// Kill sends SIGKILL to the command the client started, through its
// pidfd only.
func (p *clientProc) Kill() {
	p.mu.Lock()
	if !p.ended {
		unix.PidfdSendSignal(int(p.pidfd.Fd()), syscall.SIGKILL, nil, 0)
	}
	p.mu.Unlock()
}

// Wait returns the status the client reports; a client that goes away
// first cannot report it: the command is killed (it would die with its
// parent anyway) and the status is unknown.
func (p *clientProc) Wait() int {
	defer func() {
		p.mu.Lock()
		p.ended = true
		p.pidfd.Close()
		p.mu.Unlock()
	}()
	select {
	case r := <-p.sp.replies:
		closeAll(r.files)
		if r.m.Exited != nil {
			return r.m.Exited.Status
		}
	case <-p.sp.gone:
	}
	p.Signal(syscall.SIGKILL)
	return -1
}
