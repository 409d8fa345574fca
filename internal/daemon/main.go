package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/fds"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/thin"
	"golang.org/x/sys/unix"
)

// maxSocketPath is the longest path a Unix socket may have on Linux:
// sun_path holds 108 bytes, the last one its NUL.
const maxSocketPath = 107

// storeWait bounds how long a starting daemon waits for an in-process
// client to release the store.
const storeWait = 10 * time.Second

// Options are what the daemon is given by the core's main (app.Main):
// the CLI's name, its built-ins, and the runner of forwarded command
// lines. The daemon never imports the CLI.
type Options struct {
	Name     string
	Builtins *admin.Builtins // nil without any
	Run      Runner
}

// Runner runs one forwarded command line on the daemon's core and
// returns its exit status (app builds it on the CLI).
type Runner func(ctx context.Context, c *CommandLine) int

// CommandLine is one command line a client forwarded, with what the
// runner needs to run it as the client would have in-process.
type CommandLine struct {
	Args  []string
	Dir   string   // the client's working directory
	Env   []string // the client's environment, as envpolicy forwards it
	In    io.Reader
	Out   io.Writer
	Err   io.Writer
	Host  *local.Host // the daemon's warm core
	Paths paths.Paths // the directories it serves
	// OnInvocation learns each invocation's id as it starts (the client
	// is told, so that a lost daemon can be reported).
	OnInvocation func(id string)
	// Spawner has the client start extension commands, in its own job.
	Spawner invoke.Spawner
	// CallerPID is the client's pid, named by the pidfd taken at accept;
	// CallerAlive says whether it is still that live process.
	CallerPID   int
	CallerAlive func() bool
	// HostNote says which host serves, for `doctor`.
	HostNote string
}

// Main is the daemon's main, args its flags, with the process's
// environment and signals. It returns the exit status.
func Main(o Options, args []string) int {
	fds.MarkInherited()
	name := o.Name
	cliname.Set(name)
	fs, idle, version := flags(name)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) || err == nil && fs.NArg() == 1 && fs.Arg(0) == "help" {
		fmt.Print(Usage(name, fs))
		return exitcode.OK
	}
	if err == nil && fs.NArg() == 1 && fs.Arg(0) == "version" {
		*version = true
	} else if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%sd: %v\nRun '%sd --help' for usage.\n", name, err, name)
		return exitcode.Usage
	}
	if *version {
		fmt.Printf("%sd %s\n", name, buildid.ID())
		return exitcode.OK
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The first SIGTERM or Ctrl-C stops the daemon cleanly (running
	// invocations are stopped and recorded); a second one ends it at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, o, *idle, logger); err != nil {
		fmt.Fprintf(os.Stderr, "%sd: %v\n", name, err)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.status
		}
		return exitcode.TempFail
	}
	return exitcode.OK
}

// flags are the daemon's flags: --idle-timeout and --version (and, as
// for every flag set, -h and --help).
func flags(name string) (fs *flag.FlagSet, idle *time.Duration, version *bool) {
	fs = flag.NewFlagSet(name+"d", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Main says what was wrong, and Usage is asked for
	fs.Usage = func() {}
	idle = fs.Duration("idle-timeout", 0, "exit after this long with no client and nothing running (0: never)")
	version = fs.Bool("version", false, "print the version and exit")
	return fs, idle, version
}

// Usage is what `NAMEd --help` prints: what the core binary is, how it is
// run, its flags (fs's, as Main parses them), the environment it reads,
// and where the manual is. Everything is spelt from the CLI's name.
func Usage(name string, fs *flag.FlagSet) string {
	if fs == nil {
		fs, _, _ = flags(name)
	}
	d, env := name+"d", paths.EnvPrefix(name)
	var b strings.Builder
	fmt.Fprintf(&b, `%[1]s is the core of %[2]s: its optional per-user daemon, which keeps the store
open and the projection warm between commands, and the process a %[2]s
command line runs in when no daemon serves it. People run %[2]s, not %[1]s.

Usage:
  %[1]s [--idle-timeout DURATION]   serve as the daemon (systemd's %[1]s.socket starts it)
  %[1]s version                     print the build and exit
  %[1]s %[3]s ARGS...               run one %[2]s command line in this process

Flags:
`, d, name, thin.CoreFlag)
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		if arg == "" {
			arg = strings.ToUpper(f.Name) // none for a bool
		}
		left := "--" + f.Name
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); !isBool {
			left += " " + strings.ToUpper(arg)
		}
		fmt.Fprintf(&b, "  %-26s %s\n", left, text)
	})
	fmt.Fprintf(&b, "  %-26s %s\n", "-h, --help", "show this help and exit")
	fmt.Fprintf(&b, `
Environment:
  %[3]s_HOME        every file under this directory (data/, config/, run/)
  XDG_DATA_HOME, XDG_RUNTIME_DIR
                   where the files are without %[3]s_HOME; the socket is
                   $XDG_RUNTIME_DIR/%[2]s/%[1]s.sock
  %[3]s_DAEMON=auto %[2]s starts %[1]s on first use (without systemd)
  LISTEN_FDS, NOTIFY_SOCKET
                   set by systemd: the socket to serve, where to say ready

%[2]s daemon start|stop|status|restart manages it. Exit status: 0 on a clean
stop, 2 on invalid arguments, 75 when another daemon answers or the store
is locked or damaged. More: man %[1]s.
`, d, name, env)
	return b.String()
}

type exitError struct {
	status int
	err    error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func run(ctx context.Context, o Options, idle time.Duration, logger *slog.Logger) error {
	name, builtins := o.Name, o.Builtins
	p, err := paths.Resolve(name, os.Getenv)
	if err != nil {
		return &exitError{exitcode.Usage, err}
	}
	ln, activated, err := Listen(ctx, name, p)
	if err != nil {
		return err
	}
	defer ln.Close()
	s, err := New(name, p, logger)
	if err != nil {
		return err
	}
	defer s.Close()
	if builtins != nil {
		// Said, and served without them, as the CLI does (cli.Factory).
		if err := s.Host.Admin().EnsureBuiltins(ctx, builtins); err != nil {
			logger.Warn("the built-in commands are not active", "error", err)
		}
	}
	s.Activated, s.Idle, s.Run = activated, idle, o.Run
	s.procs = newProcessors() // the process's own: not for a Server in a test
	s.Exe, _ = os.Executable()
	// What a call whose helper was killed leaves behind comes here, not
	// to init, and is killed when that call ends (spawn.KillStrays).
	invoke.AdoptStrays()
	sddaemon.SdNotify(false, sddaemon.SdNotifyReady)
	logger.Info("serving", "socket", ln.Addr().String(), "pid", os.Getpid(), "build", s.Build, "activated", activated)
	err = s.Serve(ctx, ln)
	sddaemon.SdNotify(false, sddaemon.SdNotifyStopping)
	logger.Info("stopped")
	return err
}

// privateSocket makes a socket it was handed (socket activation) reachable
// by its user only, whatever made it: systemd-socket-activate, for one,
// creates it 0644 in a directory others may enter. Peer credentials are
// checked at every connection too; this keeps others from connecting at
// all. A socket this user cannot chmod is refused.
func privateSocket(ul *net.UnixListener) error {
	path := ul.Addr().String()
	if path == "" || path[0] == '@' {
		return nil // abstract: no file to protect (and no way to)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("the socket passed by socket activation, %s: %w", path, err)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("the socket passed by socket activation, %s, is open to others (mode %04o) and cannot be made private: %w; set SocketMode=0600 in the socket unit", path, fi.Mode().Perm(), err)
	}
	return nil
}

// New returns a Server for the CLI name's files at p, with the store open
// (waiting at most storeWait for an in-process client to release it).
// Close closes the store once Serve has returned.
func New(name string, p paths.Paths, logger *slog.Logger) (*Server, error) {
	if err := paths.Secure(p.Data); err != nil {
		return nil, &exitError{exitcode.TempFail, err}
	}
	st, err := store.Open(p.Store(), store.Options{Timeout: storeWait, Journal: true})
	if err != nil {
		return nil, err
	}
	for _, c := range store.JournalCopies(p.Store()) {
		logger.Warn("a journal was set aside beside the store: it may hold call records the store does not have", "copy", c, "see", name+" doctor")
	}
	held := store.NewHeld(st)
	host := local.NewHeld(p.Data, held, os.Getuid())
	host.Hide(p.Data, p.Config, p.Runtime)
	return &Server{Name: name, Paths: p, Build: buildid.ID(), Logger: logger,
		Host: host, store: held}, nil
}

// Listen returns the socket systemd passed (socket activation) or, when
// there is none, creates the CLI's socket: its directory 0700 and owned by
// this user, the socket 0600, and only after checking that no live daemon
// answers there — a socket that answers is never replaced.
func Listen(ctx context.Context, name string, p paths.Paths) (*net.UnixListener, bool, error) {
	lns, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("socket activation: %w", err)
	}
	for _, l := range lns {
		if ul, ok := l.(*net.UnixListener); ok {
			if err := privateSocket(ul); err != nil {
				ul.Close()
				return nil, false, &exitError{exitcode.TempFail, err}
			}
			return ul, true, nil
		}
	}
	if len(lns) > 0 {
		return nil, false, &exitError{exitcode.Usage, errors.New("socket activation passed no Unix stream socket")}
	}
	sock := p.Socket(name)
	if len(sock) > maxSocketPath {
		return nil, false, &exitError{exitcode.Unavailable, fmt.Errorf("the socket %s would be %d bytes long, more than the %d a Unix socket's path may have; "+
			"give %s a shorter directory (or, when it is unset, XDG_RUNTIME_DIR); without a daemon, %s works as it is", sock, len(sock), maxSocketPath, paths.HomeEnv(name), name)}
	}
	if err := paths.Secure(p.Runtime); err != nil {
		return nil, false, &exitError{exitcode.TempFail, err}
	}
	// Daemons starting at once take turns to check, remove and bind: the
	// second then finds the first answering (or not yet serving) and never
	// removes its socket.
	lock, err := os.OpenFile(sock+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, &exitError{exitcode.TempFail, err}
	}
	defer lock.Close() // releases the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, false, &exitError{exitcode.TempFail, fmt.Errorf("lock %s: %w", lock.Name(), err)}
	}
	d := thin.Dialer{Socket: sock, Name: name, Build: buildid.ID()}
	if s, err := d.Dial(ctx); err == nil {
		s.Close()
		return nil, false, &exitError{exitcode.TempFail, fmt.Errorf("a daemon already answers at %s (pid %d)", sock, s.Daemon.PID)}
	} else if we := (*wire.Error)(nil); errors.As(err, &we) && (we.Code == wire.CodeDaemonStale || we.Code == wire.CodeShuttingDown) {
		// It drains: it keeps the socket until its last call ends, and
		// new calls run in-process meanwhile.
		return nil, false, &exitError{exitcode.TempFail, fmt.Errorf("the daemon at %s is draining (%v); it exits once its last call ends, and calls run in-process meanwhile: start one then", sock, we.Message)}
	} else if !errors.Is(err, thin.ErrNoDaemon) {
		var te *thin.Error
		if !errors.As(err, &te) || te.Op != "hello" {
			// Something answers but is not a daemon we can talk to:
			// never remove a socket that still answers.
			return nil, false, &exitError{exitcode.TempFail, fmt.Errorf("%s answers but not as this daemon (%v); stop it first", sock, err)}
		}
		return nil, false, &exitError{exitcode.TempFail, fmt.Errorf("a daemon at %s does not answer (%v); stop it first", sock, err)}
	}
	os.Remove(sock) // nothing answers: a stale socket of a daemon that died
	// The directory is 0700, so the socket's mode before the chmod
	// exposes nothing (a umask would change the whole process's).
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, false, &exitError{exitcode.TempFail, err}
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return nil, false, &exitError{exitcode.TempFail, err}
	}
	ln.SetUnlinkOnClose(true)
	return ln, false, nil
}
