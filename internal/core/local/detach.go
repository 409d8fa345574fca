package local

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
)

// detachedRuns are the runs of this host that outlive the call that
// started them (CallTool with Detach;
// docs/adr/0005-detached-runs-and-waits.md). They end on their own, at
// their task's deadline, or when the host stops them (StopDetached): each
// is one invocation with one recorded outcome, like any other.
type detachedRuns struct {
	mu      sync.Mutex
	init    bool
	stopped bool // no new detached run is taken
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	n       atomic.Int64
}

// begin counts a run in and returns the context it runs under, unless
// the host is stopping.
func (d *detachedRuns) begin() (context.Context, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.init {
		d.ctx, d.cancel = context.WithCancel(context.Background())
		d.init = true
	}
	if d.stopped {
		return nil, false
	}
	d.wg.Add(1)
	d.n.Add(1)
	return d.ctx, true
}

func (d *detachedRuns) end() {
	d.n.Add(-1)
	d.wg.Done()
}

// StopDetached takes no new detached run and stops the running ones: each
// command gets SIGTERM, then SIGKILL after the grace period, and is
// recorded cancelled/interrupted. It does not wait; WaitDetached does.
func (l *Host) StopDetached() {
	d := &l.runs
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.init {
		d.cancel()
	}
}

// WaitDetached takes no new detached run and waits until every running
// one has ended and its outcome is committed (or saved aside): a host
// calls it before it closes its store or exits.
func (l *Host) WaitDetached() {
	d := &l.runs
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.wg.Wait()
}

// DetachedRunning is how many detached runs this host has running.
func (l *Host) DetachedRunning() int { return int(l.runs.n.Load()) }

// detach runs r as a detached run: it answers once the call is admitted
// and recorded, with the invocation id and Detached set, while the
// command runs on under the host's life rather than the call's. Until it
// is admitted the run belongs to the call: a call cancelled while it
// waits for admission starts nothing. A call refused at admission answers
// with its outcome, exactly as without Detach.
func (l *Host) detach(ctx context.Context, target *invoke.Target, r *invoke.Request, opts seam.CallOptions, tool *projection.Tool) (*wire.CallResult, error) {
	life, ok := l.runs.begin()
	if !ok {
		return nil, wire.Errorf(wire.CodeShuttingDown, "the host is stopping; nothing was run")
	}
	runCtx, cancel := context.WithCancel(life)
	var why atomic.Pointer[string]
	unhook := context.AfterFunc(ctx, func() {
		reason := invoke.ReasonClientCancelled
		if opts.CancelReason != nil {
			reason = opts.CancelReason()
		}
		why.CompareAndSwap(nil, &reason)
		cancel()
	})
	// After the answer, the run is the host's: stopping it means the host
	// is going away (interrupted).
	r.CancelReason = func() string {
		if w := why.Load(); w != nil {
			return *w
		}
		return invoke.ReasonInterrupted
	}
	// Nobody listens once the call has answered: progress is not sent, and
	// the diagnostics log (the session's, which may close first) gets the
	// lines written before the answer only.
	r.OnProgress = nil
	var diag *gate
	if opts.Diagnostics != nil {
		diag = &gate{w: opts.Diagnostics}
		r.Diagnostics = invoke.NewDiagnosticsLog(diag)
	}
	started := make(chan string, 1)
	onStart := r.OnStart
	r.OnStart = func(id string) {
		unhook() // from here on, the call's end does not end the run
		if onStart != nil {
			onStart(id)
		}
		started <- id
	}
	done := make(chan *wire.CallResult, 1)
	go func() {
		defer l.runs.end()
		defer cancel()
		defer unhook()
		out, err := l.core.Invoke(runCtx, target, r)
		done <- wireResult(out, err, tool)
	}()
	var res *wire.CallResult
	select {
	case id := <-started:
		res = &wire.CallResult{InvocationID: id, Detached: true}
	case res = <-done:
		select { // OnStart comes before the outcome: an admitted run is always answered as detached
		case id := <-started:
			res = &wire.CallResult{InvocationID: id, Detached: true}
		default:
		}
	}
	diag.close()
	return res, nil
}

// wireResult is the CallResult of an outcome of tool: of every call,
// detached or not.
func wireResult(out *invoke.Outcome, err error, tool *projection.Tool) *wire.CallResult {
	res := &wire.CallResult{InvocationID: out.InvocationID, Outcome: out.Outcome, Reason: out.Reason, Message: out.Message}
	if rr := out.Result; rr != nil {
		res.Result = &wire.CommandResult{Kind: string(rr.Kind), Text: rr.Text, Data: rr.Data}
	}
	for _, e := range out.Effects {
		res.Effects = append(res.Effects, wire.Effect{Kind: e.Kind, Ref: e.Ref})
	}
	if out.Reason == invoke.ReasonApprovalRequired {
		res.ApprovalID = out.Attempt.ApprovalID
	}
	if out.Reason == invoke.ReasonInvalidInput {
		res.InputSchema = tool.InputSchema
	}
	if err != nil {
		res.RecordError = err.Error() // names the invocation, when it has one
	}
	return res
}

// gate passes writes to w until it is closed, and none after: a closed
// gate never writes again, even concurrently.
type gate struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.w.Write(p)
	}
	return len(p), nil
}

func (g *gate) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
