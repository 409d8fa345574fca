// Package cli is the command-line presentation of Rukh: the cobra tree of
// built-in commands and of the installed extension commands of the active
// revision, output formatting and the one table of exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/client"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/thin"
)

// IOStreams are the streams a command writes to: data on Out, everything
// else (errors, diagnostics) on ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory carries what commands need. Expensive dependencies are lazy
// funcs, so building the tree or printing help never touches the disk.
type Factory struct {
	Name    string // the CLI's name, e.g. "rukh"
	IO      IOStreams
	HomeEnv string // e.g. RUKH_HOME
	Paths   func() (paths.Paths, error)
	Dir     string   // the working directory commands run in
	Env     []string // the caller's environment (filtered before a command sees it)

	// NewHost, when set, gives the Host instead of an in-process one that
	// opens the store per operation: rukhd runs the CLI on its warm core.
	NewHost func() (*local.Host, error)
	// OnInvocation, when set, learns each invocation's id as it starts
	// (rukhd tells the thin client, so a lost daemon can be reported).
	OnInvocation func(id string)
	// Spawner, when set, starts extension commands instead of this
	// process: rukhd has the client that forwarded the command line start
	// them, in the caller's own job (invoke.Request.Spawner).
	Spawner invoke.Spawner
	// CallerPID is the process whose command line this is; 0 for this
	// process (rukhd sets its client's, named by the pidfd it took at
	// accept).
	CallerPID int
	// CallerAlive reports whether CallerPID is still the live process that
	// sent the command line (rukhd asks the pidfd); with a CallerPID it is
	// required, and `approve` refuses a caller it cannot confirm.
	CallerAlive func() bool
	// HostNote says which host this process serves through and why, for
	// `doctor`.
	HostNote string
	// Builtins, when set, is the embedder's built-in release: a host made
	// here installs it first if the active revision does not run it yet
	// (rukhd's host did when the daemon started).
	Builtins *admin.Builtins
	// Ready, when set, returns once this process may run the command
	// line's command or write the store: Execute waits for it after
	// resolving the line and before running anything of it, and a host
	// waits for it before it installs the built-ins. The one-shot core
	// catches its signals meanwhile.
	Ready func()

	host         *local.Host
	releaseStore func() // lets go of the store HoldStore held, if it did
}

// Host returns the Host the CLI talks to: nothing else of the core is
// reachable from a command. It is built on first use, so help and
// completion of built-ins never touch the disk.
func (f *Factory) Host() (*local.Host, error) {
	if f.host != nil {
		return f.host, nil
	}
	if f.NewHost != nil {
		h, err := f.NewHost()
		if err != nil {
			return nil, err
		}
		f.host = h
		return h, nil
	}
	p, err := f.Paths()
	if err != nil {
		return nil, &ExitError{Status: exitcode.Usage, Err: err}
	}
	if err := paths.Secure(p.Data); err != nil {
		return nil, &ExitError{Status: exitcode.TempFail, Err: err}
	}
	h := f.newLocal(p, true)
	// A daemon started while this command line's call runs records its
	// outcome at once (client.Settler).
	h.FinishThrough(client.Settler(thin.Dialer{Socket: p.Socket(f.Name), Name: f.Name, Build: buildid.ID()}))
	f.host = h
	return h, nil
}

// newLocal is an in-process host of the data directory in p. With ensure
// it first installs the embedder's built-ins if the active revision does
// not run them yet; what fails is said, and the CLI goes on without them
// (the owner must still be able to `ext deactivate` a release whose route
// a new built-in takes). A store another process holds is the daemon's,
// or briefly another command line's, which install them themselves.
func (f *Factory) newLocal(p paths.Paths, ensure bool) *local.Host {
	h := local.New(p.Data)
	h.Hide(p.Data, p.Config, p.Runtime)
	if f.Builtins != nil && ensure {
		if f.Ready != nil {
			f.Ready() // an install writes: not before the signals are caught
		}
		var locked *store.LockedError
		if err := h.Admin().EnsureBuiltins(context.Background(), f.Builtins); err != nil && !errors.As(err, &locked) {
			fmt.Fprintf(f.IO.ErrOut, "%s: the built-in commands are not active: %v\n", f.Name, err)
		}
	}
	return h
}

// daemonAnswers reports whether a daemon answers at d (of this build or
// not): it holds the store.
func daemonAnswers(d thin.Dialer) bool {
	s, err := d.Connect(context.Background())
	if s != nil {
		s.Close()
	}
	return s != nil || err != nil
}

// Abs makes a path the user typed absolute against the working directory
// of the command line (which, run by rukhd, is the client's, not the
// daemon's); "" and "-" (stdin) stay as they are.
func (f *Factory) Abs(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.Dir, p)
}

// ToolHost returns what `rukh mcp` serves from: in a CLI process, the
// daemon when one answers and the in-process core otherwise, chosen per
// operation; in the daemon, its own core.
func (f *Factory) ToolHost() (seam.ToolHost, error) {
	if f.NewHost != nil {
		return f.Host()
	}
	p, err := f.Paths()
	if err != nil {
		return nil, &ExitError{Status: exitcode.Usage, Err: err}
	}
	if err := paths.Secure(p.Data); err != nil {
		return nil, &ExitError{Status: exitcode.TempFail, Err: err}
	}
	d := thin.Dialer{Socket: p.Socket(f.Name), Name: f.Name, Build: buildid.ID()}
	// With a daemon serving, the in-process host is only the fallback,
	// and the daemon installed the built-ins when it started.
	h := f.newLocal(p, f.Builtins != nil && !daemonAnswers(d))
	return client.NewAuto(d, h), nil
}

// state reads the active revision through the Host.
func state(cmd interface{ Context() context.Context }, f *Factory) (*admin.State, error) {
	h, err := f.Host()
	if err != nil {
		return nil, err
	}
	return h.Admin().State()
}
