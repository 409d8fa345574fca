// Package client is how a long-lived presentation reaches a host: Auto
// serves seam.ToolHost (`rukh mcp`) from the daemon when one answers and
// from an in-process local.Host otherwise, choosing per operation, so a
// client started before or after the daemon keeps working.
package client

import (
	"context"
	"errors"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	_ "github.com/rukh-cli/rukh/internal/daemon/wire/wirecbor" // the members a command line's frames do not use
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/thin"
)

// Auto is the ToolHost of a long-lived client (`rukh mcp`): it chooses per
// operation, so a client started before or after the daemon keeps working.
// It dials the daemon first; when none answers it runs in-process; when
// in-process finds the store locked (a daemon just started), it dials
// again. A daemon that refuses this client (another build) is an error,
// never a silent fallback.
type Auto struct {
	Dialer thin.Dialer
	Local  *local.Host
	kept   keptSessions // connections of finished reads, for the next
}

var _ seam.ToolHost = (*Auto)(nil)

// NewAuto returns the Auto of d and local. A call local runs that a
// daemon's start outlives is recorded by that daemon at once
// (invoke.Core.Elsewhere).
func NewAuto(d thin.Dialer, l *local.Host) *Auto {
	l.FinishThrough(Settler(d))
	return &Auto{Dialer: d, Local: l}
}

// Settler is the daemon d reaches, as the invoke.Settler of an in-process
// host (local.Host.FinishThrough): a call that host runs while a daemon
// starts is recorded by that daemon at once.
func Settler(d thin.Dialer) invoke.Settler { return daemonSettler{d} }

// daemonSettler is invoke.Settler over the daemon's socket: a daemon of
// this build answers, and commits the outcomes saved aside when asked.
type daemonSettler struct{ d thin.Dialer }

// settleWait bounds a Settle: one short transaction of the daemon's.
const settleWait = 10 * time.Second

func (s daemonSettler) Holds() bool {
	sess, err := s.d.Dial(context.Background())
	if err != nil {
		return false
	}
	sess.Close()
	return true
}

func (s daemonSettler) Settle() error {
	ctx, cancel := context.WithTimeout(context.Background(), settleWait)
	defer cancel()
	sess, err := s.d.Dial(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	m, err := sess.Do(ctx, &wire.Msg{Settle: &wire.Settle{}}, nil, nil, nil)
	if err != nil {
		return err
	}
	if m.Settled == nil {
		return errors.New("the daemon answered settle with something else")
	}
	return nil
}

// lockedRetries bounds how often an operation goes back to the daemon
// after finding the store locked.
const lockedRetries = 3

// do runs one request on the daemon, sent right behind the hello
// (thin.Dialer.Request: the policy the CLI follows too), and answer reads
// the daemon's answer; the session is closed after it, unless keep is
// set and the answer was not an error (a read's: kept.go). When no daemon
// answers, local runs it here.
func do[T any](ctx context.Context, a *Auto, req *wire.Msg, answer func(*thin.Session) (T, error), local func() (T, error), keep *keptSessions) (T, error) {
	var zero T
	for range lockedRetries {
		s, err := a.Dialer.Request(ctx, req)
		if err != nil {
			return zero, err
		}
		if s != nil {
			v, err := answer(s)
			if keep != nil && err == nil {
				keep.put(s)
			} else {
				s.Close()
			}
			return v, err
		}
		v, err := local()
		if !isLocked(err) {
			return v, err
		}
	}
	return local()
}

func isLocked(err error) bool {
	var locked *store.LockedError
	return errors.As(err, &locked)
}

// WatchRevisions watches the store rukhd publishes in as much as any
// other process: one watch serves either host.
func (a *Auto) WatchRevisions(ctx context.Context) (<-chan uint64, error) {
	return a.Local.WatchRevisions(ctx)
}

func (a *Auto) HTTPSection(ctx context.Context) (*wire.HTTP, error) {
	return read(ctx, a, &wire.Msg{GetHTTP: &wire.GetHTTP{}}, func(m *wire.Msg) (*wire.HTTP, error) {
		if m.HTTP == nil {
			return nil, wire.Errorf(wire.CodeInternal, "the daemon answered getHttp with something else")
		}
		return m.HTTP, nil
	}, func() (*wire.HTTP, error) { return a.Local.HTTPSection(ctx) })
}

func (a *Auto) BindTask(ctx context.Context, task string) (string, error) {
	return read(ctx, a, &wire.Msg{BindTask: &wire.BindTask{Task: task}}, func(m *wire.Msg) (string, error) {
		if m.Bound == nil {
			return "", wire.Errorf(wire.CodeInternal, "the daemon answered bindTask with something else")
		}
		return m.Bound.Task, nil
	}, func() (string, error) { return a.Local.BindTask(ctx, task) })
}

func (a *Auto) ListTools(ctx context.Context, list *wire.ListTools) (*wire.ToolPage, error) {
	return read(ctx, a, &wire.Msg{ListTools: list}, func(m *wire.Msg) (*wire.ToolPage, error) {
		if m.ToolPage == nil {
			return nil, wire.Errorf(wire.CodeInternal, "the daemon answered listTools with something else")
		}
		return m.ToolPage, nil
	}, func() (*wire.ToolPage, error) { return a.Local.ListTools(ctx, list) })
}

func (a *Auto) CallTool(ctx context.Context, call *wire.CallTool, opts seam.CallOptions) (*wire.CallResult, error) {
	c := *call
	c.Progress = opts.OnProgress != nil
	c.Diag = opts.Diagnostics != nil
	return do(ctx, a, &wire.Msg{CallTool: &c}, func(s *thin.Session) (*wire.CallResult, error) {
		m, err := s.Await(ctx, func(ev *wire.Msg) {
			switch {
			case ev.Started != nil && opts.OnStart != nil:
				opts.OnStart(ev.Started.InvocationID)
			case ev.Progress != nil && opts.OnProgress != nil:
				opts.OnProgress(ev.Progress)
			case ev.Diag != nil && opts.Diagnostics != nil:
				opts.Diagnostics.Write([]byte(ev.Diag.Line))
			}
		}, opts.CancelReason)
		if err != nil {
			return nil, err
		}
		if m.CallResult == nil {
			return nil, wire.Errorf(wire.CodeInternal, "the daemon answered callTool with something else")
		}
		return m.CallResult, nil
	}, func() (*wire.CallResult, error) { return a.Local.CallTool(ctx, call, opts) }, nil) // a call's connection serves it alone
}
