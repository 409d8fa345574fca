// Package cli is the command-line presentation of Rukh: the cobra tree of
// built-in commands (and, later, installed extension commands), output
// formatting and the one table of exit codes.
package cli

import (
	"io"
	"runtime/debug"

	"github.com/rukh-cli/rukh/admin"
	"github.com/rukh-cli/rukh/invoke"
)

// IOStreams are the streams a command writes to: data on Out, everything
// else (errors, diagnostics) on ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Paths are the directories the CLI keeps its files in.
type Paths struct {
	Data    string `json:"data"`
	Config  string `json:"config"`
	Runtime string `json:"runtime"`
}

// Factory carries what commands need. Expensive dependencies are lazy
// funcs, so building the tree or printing help never touches the disk.
type Factory struct {
	Name    string // the CLI's name, e.g. "rukh"
	IO      IOStreams
	HomeEnv string // e.g. RUKH_HOME
	Paths   func() (Paths, error)
	Dir     string   // the working directory commands run in
	Env     []string // the caller's environment (filtered before a command sees it)
}

// State reads the active revision as the owner sees it.
func (f *Factory) State() (*admin.State, error) {
	a, err := f.Admin()
	if err != nil {
		return nil, err
	}
	return a.State()
}

// Core returns the invocation core on the CLI's data directory.
func (f *Factory) Core() (*invoke.Core, error) {
	p, err := f.Paths()
	if err != nil {
		return nil, &ExitError{Status: ExitUsage, Err: err}
	}
	return invoke.New(p.Data), nil
}

// Admin returns the owner operations on the CLI's data directory. The
// store is opened by each operation, not here.
func (f *Factory) Admin() (*admin.Admin, error) {
	p, err := f.Paths()
	if err != nil {
		return nil, &ExitError{Status: ExitUsage, Err: err}
	}
	return admin.New(p.Data), nil
}

// BuildVersion is the module version of this build, or "devel".
func BuildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
