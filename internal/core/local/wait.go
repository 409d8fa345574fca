package local

import (
	"context"
	"errors"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// WaitInvocations observes the invocations of task (seam.ToolHost): the
// records of other tasks are unknown, exactly like ids that do not exist.
// A task that is not defined in the active profile observes nothing
// (task_undefined).
func (l *Host) WaitInvocations(ctx context.Context, task string, ids []string, timeout time.Duration) (*wire.WaitResult, error) {
	_, prof, err := l.Projection(ctx)
	if err != nil {
		return nil, storeError("cannot read the active profile", err)
	}
	if _, ok := prof.Tasks[task]; task == "" || !ok {
		return nil, wire.Errorf(wire.CodeTaskUndefined, "task %q is not defined in the active profile", task)
	}
	return l.wait(ctx, task, ids, timeout)
}

// WaitFor observes invocations of every task: the person at the CLI, who
// also lists and shows them all.
func (l *Host) WaitFor(ctx context.Context, ids []string, timeout time.Duration) (*wire.WaitResult, error) {
	return l.wait(ctx, "", ids, timeout)
}

func (l *Host) wait(ctx context.Context, task string, ids []string, timeout time.Duration) (*wire.WaitResult, error) {
	res, err := l.core.Wait(ctx, task, ids, timeout)
	var ue *invoke.WaitUsageError
	switch {
	case errors.As(err, &ue):
		return nil, &causedError{wire.Errorf(wire.CodeInvalidArgument, "%s", ue.Msg), err}
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, storeError("cannot read the invocation records", err)
	}
	return WireWait(res), nil
}

// WireWait is the wire form of a wait's result. Its lists are never nil,
// so that every member is there in JSON too.
func WireWait(res *invoke.WaitResult) *wire.WaitResult {
	w := &wire.WaitResult{
		Entries: make([]wire.WaitEntry, len(res.Entries)), AllTerminal: res.AllTerminal, TimedOut: res.TimedOut,
		Terminal: nonNil(res.Terminal), Pending: nonNil(res.Pending), Stopped: nonNil(res.Stopped), Unknown: nonNil(res.Unknown),
		TimeoutMs: res.Timeout.Milliseconds(),
	}
	for i, e := range res.Entries {
		w.Entries[i] = wire.WaitEntry{ID: e.ID, InvocationID: e.InvocationID, Command: e.Command, Status: e.Status,
			Terminal: e.Terminal(), Outcome: e.Outcome, Reason: e.Reason, Error: e.Error}
	}
	return w
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
