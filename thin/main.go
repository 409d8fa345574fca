package thin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/fds"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/release/descriptor/format"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// CoreFlag is the first argument with which the core binary (NAMEd) runs
// a command line in its own process, as the thin client would have had
// the daemon run it: `rukhd --cli ext list`.
const CoreFlag = "--cli"

// OneShotFlag is the first argument with which the thin client runs a
// command line in the one-shot core, followed by the client's build id:
// `NAME-oneshot --oneshot BUILD ARGS`. A one-shot core of another build
// (one an upgrade did not replace) never runs the line: it hands it to
// NAMEd, as it does a line that is not one extension command.
const OneShotFlag = "--oneshot"

// Main is the whole program of the thin CLI binary of the CLI name: it
// links no part of the core. `NAME version` it answers itself. When the
// daemon answers, the command line
// runs there (Forward); otherwise, or for what always runs in the
// caller's own process (`daemon`, `mcp`), it replaces itself with the core
// binary (ExecCore), which keeps this process's pid, descriptors,
// terminal and signals.
func Main(name string, args []string) int {
	fds.MarkInherited()
	if status, ok := version(name, args); ok {
		return status
	}
	if status, ok := Forward(name, args); ok {
		return status
	}
	return ExecCore(name, args)
}

// local are the commands that always run in the caller's process:
// `daemon` manages the daemon, and `mcp` is a long-lived client that
// picks the daemon or the in-process core per operation.
var local = map[string]bool{"daemon": true, "mcp": true}

// acrossBuilds are the commands that still answer when the daemon is of
// another build: they run in the caller's process instead (every other
// command exits 75 saying how to restart the daemon).
var acrossBuilds = map[string]bool{"version": true, "help": true, "--help": true, "-h": true, "doctor": true}

// Forward runs the command line in the daemon when one answers: it sends
// argv, the working directory, the environment a command may see
// (envpolicy.ForDaemon) and this process's stdin, stdout and stderr.
// Once the command runs (a built-in line: once it is sent), the first
// Ctrl-C or SIGTERM becomes a cancel (the command is stopped and recorded
// as interrupted), and a second one ends the client at once; one before
// that ends the client, and the daemon records the call cancelled. ok is
// false when the command line must run in this process instead: no
// daemon answers, one is draining, or one of another build answers and
// the command is one that must work across builds.
func Forward(name string, args []string) (status int, ok bool) {
	if len(args) == 0 || local[args[0]] {
		return 0, false // no arguments: the help, which needs no daemon
	}
	p, err := paths.Resolve(name, os.Getenv)
	if err != nil {
		return 0, false // the in-process CLI reports it
	}
	d := Dialer{Socket: p.Socket(name), Name: name, Build: buildid.ID()}
	if _, err := os.Lstat(d.Socket); errors.Is(err, fs.ErrNotExist) && !autoStart(name) {
		return 0, false // no daemon listens, and none is to be started
	}
	// A daemon may answer: the client would then wait on it and on its
	// one command and compute next to nothing, so it runs its goroutines
	// on one processor: with more, the Go scheduler wakes idle threads to
	// look for work each time a goroutine becomes runnable, and on a
	// 2-core machine that CPU is taken from rukhd and the command
	// (docs/benchmarks.md, "Fifth pass"). Done before the dial, while no
	// daemon works for this client yet; and not without a socket: the
	// change stops the world (0.1 ms), which a command line that finds no
	// daemon would pay for nothing before it execs the core
	// ("Twelfth pass"). A line that runs in this process after all gets
	// the processors back.
	procs := runtime.GOMAXPROCS(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.Getwd()
	// The signals are caught once there is something to stop (catch,
	// below), and never given back once the daemon took the command
	// line: the process exits when Forward returns ok, and giving each
	// back would cost a handshake with the Go runtime's signal thread
	// (0.05–0.1 ms each, three of them) between the exit status and the
	// exit.
	sigs := make(chan os.Signal, 2)
	catch := sync.OnceFunc(func() { signal.Notify(sigs, StopSignals()...) })
	// The Exec goes behind the hello (request). A built-in command runs
	// in the daemon, which may wait on this terminal (`approve`), so its
	// signals are caught while the daemon answers. An extension
	// command's are caught once the command is started, or once the
	// daemon sends anything else first (child.caught): catching them
	// starts three threads of the Go runtime and hands each signal to
	// one of them and back, which would take a core from the daemon
	// while it prepares the command (docs/benchmarks.md, "Fourteenth
	// pass"). A signal before that ends this process as it would any
	// program; the daemon then records the call cancelled, of which
	// nothing has run (its spawn fails with invoke.ErrSpawnerGone).
	req := &request{
		msg:   &wire.Msg{Exec: &wire.Exec{Args: args, Dir: dir, Env: envpolicy.ForDaemon(paths.HomeEnv(name), os.Environ())}},
		files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	}
	ch := &child{}
	if extensionLine(args) {
		ch.caught = catch
	} else {
		req.waiting = catch
	}
	s, err := d.connect(ctx, req)
	if err == nil && s == nil && autoStart(name) {
		// The owner opted in to a daemon started on first use: start one
		// (the core's `daemon start`, which waits until it answers), then
		// forward to it.
		if startDaemon(name) == nil {
			s, err = d.connect(ctx, req)
		}
	}
	var we *wire.Error
	switch {
	case err == nil && s == nil, errors.As(err, &we) && we.Code == wire.CodeBuildMismatch && acrossBuilds[args[0]]:
		// The line runs in this process, which catches the signals itself
		// and gets its processors back.
		signal.Stop(sigs)
		runtime.GOMAXPROCS(procs)
		return 0, false
	case err != nil: // another build's daemon says how to restart it
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitcode.TempFail, true
	}
	defer s.Close()

	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		cancel() // the first: a cancel frame
		if _, ok := <-sigs; ok {
			s.Close() // the second: stop waiting
		}
	}()
	// The daemon may have this process start the command (wire.Spawn):
	// then it hosts that one command, and what the command leaves behind
	// is its to kill (spawn.AdoptOrphans).
	spawn.AdoptOrphans()
	m, err := s.await(ctx, nil, nil, ch)
	ch.stop() // a command still running here lost its daemon
	switch {
	case err != nil && ctx.Err() != nil:
		return exitcode.Interrupted, true
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitcode.TempFail, true
	case m.Exit == nil:
		fmt.Fprintf(os.Stderr, "%s: the daemon answered with something else than an exit status\n", name)
		return exitcode.TempFail, true
	}
	if m.Exit.Status == exitcode.BrokenPipe {
		// End as the in-process CLI would have: killed by SIGPIPE.
		dieOf(syscall.SIGPIPE)
	}
	return m.Exit.Status, true
}

// dieOf ends the process as killed by sig. The Go runtime keeps a
// handler for SIGPIPE whatever signal.Reset says, so the disposition is
// set back to the default with rt_sigaction itself (a zero struct
// sigaction: SIG_DFL, no flags, nothing masked) before the kill. If the
// process outlives it, the caller returns the status instead.
func dieOf(sig syscall.Signal) {
	var dfl [4]uint64
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	syscall.Kill(os.Getpid(), sig)
}

// StopSignals are the signals that stop a command line's call, the same
// in-process and through the daemon: Ctrl-C, SIGTERM, and the terminal's
// hang-up, unless the process was started with it ignored (nohup), which
// catching it would undo.
func StopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// AutoStartEnv is the variable with which an owner opts in to a daemon
// started on first use, for machines without systemd: NAME_DAEMON=auto
// (RUKH_DAEMON for rukh, MY_CLI_DAEMON for my-cli: spelt as NAME_HOME).
// Without it, no command starts a daemon.
func AutoStartEnv(name string) string { return paths.EnvPrefix(name) + "_DAEMON" }

func autoStart(name string) bool { return os.Getenv(AutoStartEnv(name)) == "auto" }

// startDaemon runs `NAMEd --cli daemon start` and waits for it: it starts
// the daemon in a session of its own and returns once it answers.
func startDaemon(name string) error {
	core, err := CoreBinary(name)
	if err != nil {
		return err
	}
	cmd := exec.Command(core, CoreFlag, "daemon", "start")
	cmd.Stdout, cmd.Stderr = nil, nil // its word goes to the daemon's log; the command line's output is the command's
	return cmd.Run()
}

// ExecCore replaces this process with the core binary running args: the
// one-shot core, NAME-oneshot (OneShotFlag), for a command line of an
// extension command when it is installed beside this executable (it
// links none of the built-in commands, MCP or release sources, so it
// starts sooner; docs/adr/0017-one-shot-core.md), otherwise the whole
// core, NAMEd (ExecWholeCore). It returns only when that fails, with the
// exit status after saying why.
func ExecCore(name string, args []string) int {
	if extensionLine(args) {
		if core, ok := beside(OneShotBinary(name)); ok {
			return execAs(name, core, append([]string{OneShotFlag, buildid.ID()}, args...))
		}
	}
	return ExecWholeCore(name, args)
}

// extensionLine reports whether a command line may be one extension
// command: its first word is neither a flag, a word of cobra's own
// (__complete), nor a built-in word (format.ReservedWords, which the
// descriptor decoder reserves).
func extensionLine(args []string) bool {
	return len(args) > 0 && !strings.HasPrefix(args[0], "-") && !strings.HasPrefix(args[0], "__") && !slices.Contains(format.ReservedWords(), args[0])
}

// ExecWholeCore replaces this process with the whole core binary, NAMEd,
// running args (CoreFlag): what the one-shot core does with a command
// line that is not one extension command. It returns only when that
// fails, with the exit status after saying why.
func ExecWholeCore(name string, args []string) int {
	core, err := CoreBinary(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitcode.Unavailable
	}
	return execAs(name, core, append([]string{CoreFlag}, args...))
}

// execAs replaces this process with core running args, keeping its pid,
// descriptors, terminal and environment, as a host
// (spawn.WithHostTimerSlack); it returns only when that fails, with the
// exit status after saying why.
func execAs(name, core string, args []string) int {
	err := spawn.WithHostTimerSlack(func() error { return syscall.Exec(core, append([]string{core}, args...), os.Environ()) })
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return exitcode.Unavailable
}

// OneShotBinary is the file name of the one-shot core binary of the CLI
// name: NAME-oneshot, the core built with the build tag rukh_oneshot.
func OneShotBinary(name string) string { return name + "-oneshot" }

// beside is the path of file beside this executable, if it is a regular
// file there.
func beside(file string) (string, bool) {
	exe, err := os.Executable()
	if err != nil {
		return "", false
	}
	p := filepath.Join(filepath.Dir(exe), file)
	fi, err := os.Stat(p)
	return p, err == nil && fi.Mode().IsRegular()
}

// CoreBinary finds the core binary of the CLI name, NAMEd: beside this
// executable (how the .deb and `make build` lay them out), else on $PATH.
func CoreBinary(name string) (string, error) {
	if p, ok := beside(name + "d"); ok {
		return p, nil
	}
	p, err := exec.LookPath(name + "d")
	if err != nil {
		return "", fmt.Errorf("cannot find %sd, the core every %s command runs in, beside %s or on $PATH; reinstall %s", name, name, name, name)
	}
	return p, nil
}
