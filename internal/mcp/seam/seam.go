// Package seam declares what a presentation may ask of Rukh's core, as
// interfaces over the wire protocol's plain types: the core as one host
// (local.Host) and the daemon (client.Auto, through thin) implement
// them, and a presentation that imports only seam and wire cannot reach
// the core any other way.
package seam

import (
	"context"
	"io"
	"time"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// ToolHost is what the MCP presentation asks of Rukh: the task it is
// bound to, pages of the tools that task may see, and calls by tool name.
// Visibility, paging and cursor signing happen behind it, so a
// presentation never sees the cursor key or another task's tools. Its
// types are the wire protocol's: the daemon-backed ToolHost sends them as
// they are. Failures are *wire.Error with a code from the closed set.
type ToolHost interface {
	// BindTask checks that task (or, when empty, the profile's mcp.task)
	// is defined, and returns its name.
	BindTask(ctx context.Context, task string) (string, error)
	// ListTools answers one page of list.Task's tools from list.Cursor;
	// a cursor is bound to the task and the caller that listed.
	ListTools(ctx context.Context, list *wire.ListTools) (*wire.ToolPage, error)
	CallTool(ctx context.Context, call *wire.CallTool, opts CallOptions) (*wire.CallResult, error)
	// WaitInvocations observes the invocations ids of task for at most
	// timeout (0 looks once; at most wire.MaxWaitTimeoutMs) until every
	// one is terminal or cannot change by waiting. Other tasks' records
	// are unknown, like ids that do not exist. It never touches a run;
	// ctx ending ends the observation only. A request out of bounds is
	// invalid_argument. docs/adr/0005-detached-runs-and-waits.md.
	WaitInvocations(ctx context.Context, task string, ids []string, timeout time.Duration) (*wire.WaitResult, error)
	// WatchRevisions reports the number of each active revision published
	// after the call, whoever published it, until ctx ends (then it
	// closes the channel); a burst may be reported as its newest. A
	// revision changes the tools' names (I7): a presentation tells its
	// clients to list them again.
	WatchRevisions(ctx context.Context) (<-chan uint64, error)
	// HTTPSection is the active profile's mcp.http section (JSON; empty
	// when it has none) and the revision it is of.
	HTTPSection(ctx context.Context) (*wire.HTTP, error)
}

// CallOptions are a call's ties to its presentation.
type CallOptions struct {
	OnStart    func(invocationID string)
	OnProgress func(*wire.Progress)
	// Diagnostics receives the diagnostics log's lines, one Write each;
	// it must be safe for concurrent use. Nil logs nothing.
	Diagnostics io.Writer
	// CancelReason says why ctx ended: invoke.ReasonInterrupted or
	// invoke.ReasonClientCancelled (the default).
	CancelReason func() string
}
