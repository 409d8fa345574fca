package client

import (
	"context"
	"time"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/thin"
)

// WaitInvocations observes on the daemon when one answers, else here.
// The records are the same either way: a run detached in one host is
// observed from any.
func (a *Auto) WaitInvocations(ctx context.Context, task string, ids []string, timeout time.Duration) (*wire.WaitResult, error) {
	req := &wire.Msg{WaitInvocations: &wire.WaitInvocations{Task: task, IDs: ids, TimeoutMs: timeout.Milliseconds()}}
	return do(ctx, a, req, func(s *thin.Session) (*wire.WaitResult, error) {
		m, err := s.Await(ctx, nil, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if m.WaitResult == nil {
			return nil, wire.Errorf(wire.CodeInternal, "the daemon answered waitInvocations with something else")
		}
		return m.WaitResult, nil
	}, func() (*wire.WaitResult, error) { return a.Local.WaitInvocations(ctx, task, ids, timeout) }, nil)
}

// StopDetached stops the runs this process detached (those the daemon
// runs are the daemon's) and waits until each is recorded: `rukh mcp`
// calls it before it exits.
func (a *Auto) StopDetached() {
	a.Local.StopDetached()
	a.Local.WaitDetached()
}
