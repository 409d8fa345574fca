package invoke

import (
	"errors"
	"os/exec"
	"syscall"

	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// Process is a started command: started here, or by the client that
// forwarded the call and runs it as its own child (Spawner).
type Process interface {
	// Signal sends sig to the command (and its group, unless it runs in
	// its host's job).
	Signal(sig syscall.Signal)
	// Kill ends the process started (a supervising helper included) with
	// SIGKILL at once, whatever its state, when a call's stop was not
	// obeyed within the grace: a helper that its command stopped or
	// traces acts on no signal but SIGKILL.
	Kill()
	// Wait returns the command's exit status once it has exited, as a
	// shell reports it (128+N for signal N), or -1 when that cannot be
	// known (the client that ran it went away).
	Wait() int
	// InForeground reports whether the command runs in the foreground of
	// its caller's terminal, in the caller's job.
	InForeground() bool
}

// Spawner starts an admitted command somewhere else than in this
// process: rukhd has the thin client that forwarded a command line start
// it, so that it is a child of the caller's own job and terminal. ex is
// complete (program, arguments, environment, directory, streams, the
// channel and the enforcement helper's descriptors); the Spawner must not
// change what runs. Once it has asked for the start, and before it waits
// for the answer, it calls meanwhile (the begin record's commit), on the
// caller's goroutine: the commit overlaps the start without a goroutine
// of its own, whose thread the kernel would wake on the same core and let
// preempt the one that asks (docs/benchmarks.md, "Twelfth pass").
// meanwhile is not called when the request could not be sent.
type Spawner interface {
	Spawn(ex *exec.Cmd, job spawn.Job, meanwhile func()) (Process, error)
}

// ErrSpawnerGone is what a Spawner's error wraps when the process that
// was to start the command went away before it said it had (the thin
// client ended by a Ctrl-C it had not caught yet): the call is cancelled
// before it started, not a command that could not start.
var ErrSpawnerGone = errors.New("the client went away before it started the command")

// localProc is a command this process started.
type localProc struct{ *spawn.Proc }

func (p localProc) InForeground() bool { return p.Foreground }

func startLocal(ex *exec.Cmd, job spawn.Job) (Process, error) {
	p, err := spawn.Start(ex, job)
	if err != nil {
		return nil, err
	}
	return localProc{p}, nil
}

// AdoptOrphans makes this process the reaper of what its one call leaves
// behind (spawn.AdoptOrphans).
func AdoptOrphans() error { return spawn.AdoptOrphans() }

// AdoptStrays makes this process, which hosts many calls, the reaper of
// what a call whose helper was killed leaves behind (spawn.AdoptStrays).
func AdoptStrays() error { return spawn.AdoptStrays() }
