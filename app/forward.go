package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rukh-cli/rukh/cli"
	"github.com/rukh-cli/rukh/extproto"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/thin"
	"github.com/rukh-cli/rukh/wire"
)

// local are the commands that always run in the client: `daemon` manages
// the daemon, and `mcp` is a long-lived client that picks the daemon or
// the in-process core per operation.
var local = map[string]bool{"daemon": true, "mcp": true}

// forward runs the command line in the daemon when one answers: it sends
// argv, the working directory, the environment a command may see and this
// process's stdin, stdout and stderr, so the command sees the user's
// terminal exactly as without the daemon. The first Ctrl-C or SIGTERM
// becomes a cancel (the command is stopped and recorded as interrupted);
// a second one ends the client at once. ok is false when no daemon
// answers, or one is draining: then the caller runs the command itself.
func forward(cfg Config, args []string) (status int, ok bool) {
	if len(args) > 0 && local[args[0]] {
		return 0, false
	}
	p, err := cfg.Paths(os.Getenv)
	if err != nil {
		return 0, false // the in-process CLI reports it
	}
	d := thin.Dialer{Socket: p.Socket(cfg.Name), Name: cfg.Name, Build: buildid.ID()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := d.Dial(ctx)
	var we *wire.Error
	switch {
	case errors.Is(err, thin.ErrNoDaemon):
		return 0, false
	case errors.As(err, &we) && (we.Code == wire.CodeDaemonStale || we.Code == wire.CodeShuttingDown):
		return 0, false // it is draining; the in-process CLI waits for its lock
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", cfg.Name, err)
		return cli.ExitTempFail, true
	}
	defer s.Close()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		cancel() // the first: a cancel frame
		if _, ok := <-sigs; ok {
			s.Close() // the second: stop waiting
		}
	}()
	dir, _ := os.Getwd()
	req := &wire.Msg{Exec: &wire.Exec{Args: args, Dir: dir, Env: allowedEnv(cfg, os.Environ())}}
	m, err := s.Do(ctx, req, []*os.File{os.Stdin, os.Stdout, os.Stderr}, nil, nil)
	switch {
	case err != nil && ctx.Err() != nil:
		return cli.ExitInterrupted, true
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", cfg.Name, err)
		return cli.ExitTempFail, true
	case m.Exit == nil:
		fmt.Fprintf(os.Stderr, "%s: the daemon answered with something else than an exit status\n", cfg.Name)
		return cli.ExitTempFail, true
	}
	if m.Exit.Status == cli.ExitBrokenPipe {
		// End as the in-process CLI would have: killed by SIGPIPE.
		signal.Reset(syscall.SIGPIPE)
		syscall.Kill(os.Getpid(), syscall.SIGPIPE)
	}
	return m.Exit.Status, true
}

// allowedEnv is the part of the environment the daemon needs: what a
// command may see (invoke.EnvAllowlist, LC_*), what locates the CLI's
// files, and the invocation a caller runs inside (so that what only the
// owner may do, like approve, is refused there too).
func allowedEnv(cfg Config, environ []string) []string {
	keep := map[string]bool{cfg.HomeEnv(): true, "XDG_DATA_HOME": true, "XDG_CONFIG_HOME": true, "XDG_RUNTIME_DIR": true,
		extproto.EnvInvocationID: true}
	for _, k := range invoke.EnvAllowlist {
		keep[k] = true
	}
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if keep[k] || strings.HasPrefix(k, "LC_") {
			env = append(env, kv)
		}
	}
	return env
}
