// Package mcp is the MCP presentation of Rukh: `rukh mcp` serves
// tools/list and tools/call from the projection of the current revision,
// through the official go-sdk, on the same invocation core as the CLI.
// It adds a front door and nothing else: no argv, no shell, no second
// validator.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
)

// The reasons a call is stopped for (the invocation core's vocabulary).
const (
	reasonInterrupted     = "interrupted"
	reasonClientCancelled = "client_cancelled"
	reasonInvalidInput    = "invalid_input"
)

// Binding is the launch binding of one `rukh mcp` process: fixed at start,
// never changed by anything a client sends (tool arguments and clientInfo
// claim nothing). The subject is the user the process runs as, which the
// daemon reads from the kernel (SO_PEERCRED).
type Binding struct {
	Task string // the task preset every call runs under
	// Resolve, when Task is empty, names the task on the first request
	// it succeeds for (the store was damaged or locked when the process
	// started); until then each request answers with its error. It is
	// called once at a time, and never again after it succeeded.
	Resolve func(context.Context) (string, error)
	// Subject and Issuer are the verified caller of an HTTP request (its
	// token's sub and iss), recorded with each invocation; empty on stdio,
	// where the caller is the user the process runs as.
	Subject, Issuer string
}

// Options configure a server.
type Options struct {
	Host    seam.ToolHost
	Binding Binding
	Name    string // the CLI's name, e.g. "rukh"
	Version string
	Logger  *slog.Logger
	// Stateless: every request is its own session (Streamable HTTP). The
	// server does not watch revisions itself, and it never advertises
	// listChanged to a client of 2025-11-25 or earlier (initialize): such
	// a client could be told only on a session's GET stream, which HTTP
	// does not serve (docs/adr/0014-http-list-changed.md).
	Stateless bool
	// Revisions, when set, are the revisions the server announces as
	// tools/list_changed, in place of a watch of its own: the HTTP
	// adapter gives the server of each subscriptions/listen stream one,
	// fed from its one watch of the store. Closing it stops announcing.
	Revisions <-chan uint64
	// AdvertiseListen: the server advertises tools.listChanged (to
	// clients of 2026-07-28, with Stateless) though it announces nothing
	// itself, because the HTTP adapter serves their subscriptions/listen
	// on a server that has Revisions.
	AdvertiseListen bool
	// Diagnostics receives the diagnostics log:
	// the bounded stdout and stderr of commands, line by line, and each
	// invocation's start and outcome; never the protocol's stdout.
	Diagnostics io.Writer
}

// Server is an MCP server whose tools come from the Host's projection per
// request: a receiving middleware answers tools/list and tools/call, so no
// tool is registered statically.
type Server struct {
	*sdk.Server
	a *adapter
}

// NewServer returns a Server for opts. It advertises tools.listChanged
// when it can watch the store for new revisions (or is given them,
// Options.Revisions), and then tells its sessions of each one
// (notifyRevisions); with Options.AdvertiseListen it advertises it for
// the HTTP adapter's listen streams.
func NewServer(opts Options) *Server {
	life, stop := context.WithCancel(context.Background())
	a := &adapter{opts: opts, life: life, stop: stop}
	revisions := opts.Revisions
	if revisions == nil && !opts.Stateless {
		var err error
		if revisions, err = opts.Host.WatchRevisions(life); err != nil && opts.Logger != nil {
			opts.Logger.Warn("clients will not be told when the owner changes the tools: "+err.Error(), "listChanged", false)
		}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: opts.Name, Version: opts.Version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: revisions != nil || opts.AdvertiseListen}},
		Logger:       opts.Logger,
	})
	switch d := opts.Diagnostics.(type) {
	case nil:
	case *LogQueue:
		a.diag = d // shared with other servers, and not this one's to close
	default:
		a.log = NewLogQueue(opts.Diagnostics)
		a.diag = a.log
	}
	s.AddReceivingMiddleware(a.middleware)
	srv := &Server{Server: s, a: a}
	if revisions != nil {
		go srv.notifyRevisions(revisions)
	}
	return srv
}

// notifyRevisions tells every session that the tool list changed, once
// for each revision reported (a burst within the SDK's debounce is one
// notification). The SDK sends notifications/tools/list_changed only for
// changes to its own registry, by the rules of each session's protocol
// version (on 2026-07-28, to sessions that asked with
// subscriptions/listen, stamped with that request's id): this server's
// tools never live in that registry (the middleware answers tools/list
// and tools/call), so a revision adds and removes a placeholder there,
// which no request ever reaches (docs/adr/0010-tools-list-changed.md).
// The notification carries no tool data: each session lists again, and
// sees what its own binding may see.
func (s *Server) notifyRevisions(revisions <-chan uint64) {
	for range revisions {
		s.a.takePrefetch()
		s.Server.AddTool(&sdk.Tool{Name: revisionPlaceholder, InputSchema: json.RawMessage(`{"type":"object"}`)}, placeholderHandler)
		s.Server.RemoveTools(revisionPlaceholder)
	}
}

// revisionPlaceholder names the placeholder of notifyRevisions; it is
// never listed or called (the middleware answers both).
const revisionPlaceholder = "rukh-revision-changed"

func placeholderHandler(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return nil, errors.New("the revision placeholder is never called")
}

// Connect serves one session on t, like the SDK's Connect, through the
// adapter's connection wrapper (see sessionConn).
func (s *Server) Connect(ctx context.Context, t sdk.Transport, opts *sdk.ServerSessionOptions) (*sdk.ServerSession, error) {
	return s.Server.Connect(ctx, sessionTransport{t, s.a}, opts)
}

// Run serves one session on t until the client goes away (EOF on stdin, a
// broken stdout, a closed transport) or ctx ends; then it stops every
// invocation still running and waits until each is finalized. When ctx
// ends first (SIGTERM or Ctrl-C to `rukh mcp`), running invocations are
// stopped at once and recorded as cancelled/interrupted: the host is going
// away, so nothing may outlive it or be recorded as if it had finished.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	// The session outlives ctx just long enough to stop, finalize and
	// answer the calls that were running: the agent learns what became of
	// them (cancelled/interrupted, with their invocation ids).
	session, endSession := context.WithCancel(context.WithoutCancel(ctx))
	defer endSession()
	stopOnSignal := context.AfterFunc(ctx, func() {
		s.a.end(reasonInterrupted)
		s.a.inflight.Wait()
		if c := s.a.conn.Load(); c != nil {
			c.waitAnswered(answerWait)
		}
		endSession()
	})
	defer stopOnSignal()
	err := s.Server.Run(session, sessionTransport{t, s.a})
	s.a.end(reasonClientCancelled)
	s.a.inflight.Wait()
	if s.a.log != nil {
		s.a.log.close(answerWait)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// answerWait bounds how long a stopping server waits for the responses of
// its finalized calls to be written.
const answerWait = 2 * time.Second

// sessionTransport wraps the session's connection (sessionConn).
type sessionTransport struct {
	sdk.Transport
	a *adapter
}

func (n sessionTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := n.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &sessionConn{Connection: c, end: func() { n.a.end(reasonClientCancelled) }, cancelled: map[string]bool{}, unanswered: map[string]bool{}}
	n.a.conn.Store(sc)
	return sc, nil
}

// maxCancelled bounds the remembered cancelled request ids (a client may
// cancel ids that were never pending).
const maxCancelled = 1024

// sessionConn is the session's connection as the SDK sees it. It does
// three things the SDK does not:
//
//   - it calls end as soon as the connection cannot be read or written any
//     more, so running invocations are stopped at once rather than when
//     the SDK has drained its handlers;
//   - it drops the response to a request the client cancelled, which MCP
//     says must not be answered (the SDK would answer it);
//   - it refuses, before dispatch, a tools/call that carries continuation
//     input (inputResponses or requestState, even empty): this server never
//     asks for input, so such input is unsolicited and nothing may run on
//     it (docs/mcp.md, "No input continuation");
//   - it refuses a tools/call whose request id the session already used
//     for one (the last maxCallIDs of them), so a client that sends a
//     call again never runs its command again (invariant I10).
type sessionConn struct {
	sdk.Connection
	end        func()
	mu         sync.Mutex
	cancelled  map[string]bool
	unanswered map[string]bool // tools/call requests not yet answered
	called     map[string]bool // tools/call request ids seen (typed keys)
	calledFIFO []string        // the same, oldest first
}

// maxCallIDs is how many tools/call request ids a session remembers.
const maxCallIDs = 1 << 16

// seen records a tools/call request id and reports whether the session
// had seen it. Keys keep the id's type: 1 and "1" are different ids.
func (c *sessionConn) seen(id any) bool {
	key := idKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.called == nil {
		c.called = map[string]bool{}
	}
	if c.called[key] {
		return true
	}
	if len(c.calledFIFO) >= maxCallIDs {
		delete(c.called, c.calledFIFO[0])
		c.calledFIFO = c.calledFIFO[1:]
	}
	c.called[key] = true
	c.calledFIFO = append(c.calledFIFO, key)
	return false
}

// waitAnswered waits until every tools/call read has been answered (or
// its answer dropped), or for at most d.
func (c *sessionConn) waitAnswered(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		n := len(c.unanswered)
		c.mu.Unlock()
		if n == 0 {
			return
		}
	}
}

// idKey is the key of a request id in the session's tables. It keeps the
// id's type, as JSON-RPC does: 1 and "1" are different ids, so cancelling
// one never drops the answer to the other.
func idKey(id any) string { return fmt.Sprintf("%T:%v", id, id) }

func (c *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			c.end()
			return m, err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "tools/call" {
			if refusal := Unsolicited(req); refusal != nil {
				err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: refusal})
				if err != nil {
					c.end()
					return nil, err
				}
				continue
			}
			if c.seen(req.ID.Raw()) {
				err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
					Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("request id %v was already used for a tools/call in this session; "+
						"a repeated request never runs a command again: see the first answer, or call with a new id", req.ID.Raw()),
				}})
				if err != nil {
					c.end()
					return nil, err
				}
				continue
			}
			c.mu.Lock()
			c.unanswered[idKey(req.ID.Raw())] = true
			c.mu.Unlock()
		}
		c.noteCancel(m)
		return m, nil
	}
}

// Unsolicited refuses, before dispatch, a tools/call that carries
// continuation input (inputResponses or requestState, even empty): this
// server never asks for input, so such input is unsolicited and nothing
// may run on it (docs/mcp.md, "No input continuation"). It is nil for any
// other request.
func Unsolicited(req *jsonrpc.Request) *jsonrpc.Error {
	if !req.IsCall() || req.Method != "tools/call" {
		return nil
	}
	field := continuationField(req.Params)
	if field == "" {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("tools/call carries %q, but this server never asked for input: "+
			"continuation input is not supported; call the tool again without inputResponses and requestState", field)}
}

// continuationField returns the first continuation member of tools/call
// params ("inputResponses" or "requestState"), whatever its value.
func continuationField(params json.RawMessage) string {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return "" // the SDK answers malformed params itself
	}
	for _, f := range []string{"inputResponses", "requestState"} {
		if _, ok := p[f]; ok {
			return f
		}
	}
	return ""
}

// noteCancel remembers the request a notifications/cancelled names.
func (c *sessionConn) noteCancel(m jsonrpc.Message) {
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.RequestID != nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				if len(c.cancelled) >= maxCancelled {
					clear(c.cancelled)
				}
				c.cancelled[idKey(id.Raw())] = true
				c.mu.Unlock()
			}
		}
	}
}

func (c *sessionConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.cancelled[idKey(resp.ID.Raw())]
		delete(c.cancelled, idKey(resp.ID.Raw()))
		delete(c.unanswered, idKey(resp.ID.Raw()))
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	err := c.Connection.Write(ctx, m)
	if err != nil {
		c.end()
	}
	return err
}

func (c *sessionConn) Close() error {
	c.end()
	return c.Connection.Close()
}

type adapter struct {
	opts     Options
	life     context.Context // ends when the session does
	stop     context.CancelFunc
	why      atomic.Pointer[string]      // why life ended: the first reason given
	conn     atomic.Pointer[sessionConn] // the session's connection, once connected
	diag     io.Writer                   // the diagnostics log, one Write a line
	log      *LogQueue                   // the same, when there is one
	mu       sync.Mutex                  // orders begin against end
	inflight sync.WaitGroup

	bindMu sync.Mutex
	bound  string // the task, once Binding names it

	// next is the page asked for ahead: the one after the page last
	// served, which a client listing every page asks for next.
	nextMu sync.Mutex
	next   *prefetch
}

// prefetch is a page asked of the host before the client asks for it,
// so that the host's answer overlaps the client's reading of the page
// before. A revision drops it (notifyRevisions): a client that lists
// again after list_changed gets the host's answer, as it would have.
type prefetch struct {
	req  wire.ListTools
	done chan struct{}
	page *wire.ToolPage
	err  error
}

// task is the task every request runs under: Binding.Task, or what
// Binding.Resolve names once it can.
func (a *adapter) task(ctx context.Context) (string, error) {
	a.bindMu.Lock()
	defer a.bindMu.Unlock()
	switch {
	case a.bound != "":
	case a.opts.Binding.Task != "" || a.opts.Binding.Resolve == nil:
		a.bound = a.opts.Binding.Task
	default:
		t, err := a.opts.Binding.Resolve(ctx)
		if err != nil {
			return "", err
		}
		a.bound = t
	}
	return a.bound, nil
}

// end ends the session's life for reason (reasonInterrupted or
// reasonClientCancelled), stopping every running invocation; the
// first reason given is the one kept.
func (a *adapter) end(reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.why.CompareAndSwap(nil, &reason)
	a.stop()
}

// begin counts a call in, unless the session has ended: no call may start
// once Run waits for the running ones.
func (a *adapter) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.life.Err() != nil {
		return false
	}
	a.inflight.Add(1)
	return true
}

// cancelReason says why a call's context ended: the session's reason when
// the session ended, else the client cancelled that request.
func (a *adapter) cancelReason() string {
	if a.life.Err() != nil {
		if why := a.why.Load(); why != nil {
			return *why
		}
	}
	return reasonClientCancelled
}

func (a *adapter) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			return a.list(ctx, req.(*sdk.ListToolsRequest))
		case "tools/call":
			return a.call(ctx, req.(*sdk.CallToolRequest))
		case "initialize":
			if a.opts.Stateless {
				return noListChanged(next(ctx, method, req))
			}
		}
		return next(ctx, method, req)
	}
}

// noListChanged takes listChanged out of an initialize result: a client
// of 2025-11-25 or earlier over stateless HTTP is never told (Options.Stateless).
func noListChanged(res sdk.Result, err error) (sdk.Result, error) {
	ir, ok := res.(*sdk.InitializeResult)
	if err != nil || !ok || ir.Capabilities == nil || ir.Capabilities.Tools == nil {
		return res, err
	}
	out, caps, tools := *ir, *ir.Capabilities, *ir.Capabilities.Tools
	tools.ListChanged = false
	caps.Tools, out.Capabilities = &tools, &caps
	return &out, nil
}

// hostError turns a ToolHost failure into the JSON-RPC error a client
// gets: unknown tools and stale cursors are the client's to fix (invalid
// params); everything else is the server's (internal error).
func hostError(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		switch we.Code {
		case wire.CodeUnknownTool, wire.CodeBadCursor:
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: we.Message}
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: we.Message}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func (a *adapter) list(ctx context.Context, req *sdk.ListToolsRequest) (sdk.Result, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	task, err := a.task(ctx)
	if err != nil {
		return nil, hostError(err)
	}
	page, err := a.listPage(ctx, wire.ListTools{Task: task, Cursor: cursor, Subject: a.opts.Binding.Subject, Issuer: a.opts.Binding.Issuer})
	if err != nil {
		return nil, hostError(err)
	}
	res := &sdk.ListToolsResult{Tools: make([]*sdk.Tool, 0, len(page.Tools)), NextCursor: page.NextCursor,
		Cacheable: sdk.Cacheable{TTLMs: 0, CacheScope: "private"}}
	for _, t := range page.Tools {
		res.Tools = append(res.Tools, toSDK(t))
	}
	return res, nil
}

// listPage answers req from the page asked for ahead when it is that
// page, and otherwise asks the host; then, in a session that lists
// (never a stateless one, whose next request may never come), it asks
// for the next page ahead. A page asked ahead that failed is asked
// again: its failure is not this request's.
func (a *adapter) listPage(ctx context.Context, req wire.ListTools) (*wire.ToolPage, error) {
	var page *wire.ToolPage
	err := errors.New("not asked ahead")
	if p := a.takePrefetch(); p != nil && p.req == req {
		select {
		case <-p.done:
			page, err = p.page, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		if page, err = a.opts.Host.ListTools(ctx, &req); err != nil {
			return nil, err
		}
	}
	if page.NextCursor != "" && !a.opts.Stateless {
		next := &prefetch{req: req, done: make(chan struct{})}
		next.req.Cursor = page.NextCursor
		a.nextMu.Lock()
		a.next = next
		a.nextMu.Unlock()
		go func() {
			defer close(next.done)
			next.page, next.err = a.opts.Host.ListTools(a.life, &next.req)
		}()
	}
	return page, nil
}

// takePrefetch takes the page asked for ahead, if any.
func (a *adapter) takePrefetch() *prefetch {
	a.nextMu.Lock()
	defer a.nextMu.Unlock()
	p := a.next
	a.next = nil
	return p
}

func toSDK(t *wire.Tool) *sdk.Tool {
	st := &sdk.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: json.RawMessage(t.InputSchema), OutputSchema: json.RawMessage(t.OutputSchema),
	}
	if an := t.Annotations; an != nil {
		st.Annotations = &sdk.ToolAnnotations{DestructiveHint: an.Destructive, OpenWorldHint: an.OpenWorld}
		if an.ReadOnly != nil {
			st.Annotations.ReadOnlyHint = *an.ReadOnly
		}
		if an.Idempotent != nil {
			st.Annotations.IdempotentHint = *an.Idempotent
		}
	}
	return st
}

func (a *adapter) call(ctx context.Context, req *sdk.CallToolRequest) (sdk.Result, error) {
	// An invocation ends with its request (notifications/cancelled) or with
	// the session, whichever comes first.
	if !a.begin() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server is stopping; nothing was run"}
	}
	defer a.inflight.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(a.life, cancel)()
	task, err := a.task(ctx)
	if err != nil {
		return nil, hostError(err)
	}
	call := &wire.CallTool{Task: task, Name: req.Params.Name, Arguments: req.Params.Arguments,
		Subject: a.opts.Binding.Subject, Issuer: a.opts.Binding.Issuer}
	opts := seam.CallOptions{Diagnostics: a.diag, CancelReason: a.cancelReason}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		call.Progress = true
		var gate progressGate
		opts.OnProgress = func(pr *wire.Progress) {
			if n, ok := gate.next(pr); ok {
				n.ProgressToken = token
				req.Session.NotifyProgress(ctx, n)
			}
		}
	}
	out, err := a.opts.Host.CallTool(ctx, call, opts)
	if we := (*wire.Error)(nil); errors.As(err, &we) && we.Code == wire.CodeUnknownTool {
		// The name may be a listing's of an older revision, and the
		// client is now told to list again: a page asked ahead may be of
		// that listing too, and is not given (the watch may not have
		// reported the revision yet).
		a.takePrefetch()
	}
	if err != nil {
		return nil, hostError(err)
	}
	if out.Dispatch != nil {
		for _, r := range out.Dispatch.Ops {
			if r.Call != nil && r.Call.RecordError != "" && a.opts.Logger != nil {
				a.opts.Logger.Error("recording the outcome failed", "invocation", r.Call.InvocationID, "error", r.Call.RecordError)
			}
		}
		return dispatchResult(out.Dispatch, newProtocol(req.Params.Meta)), nil
	}
	if out.RecordError != "" && a.opts.Logger != nil {
		a.opts.Logger.Error("recording the outcome failed", "invocation", out.InvocationID, "error", out.RecordError)
	}
	return result(out, newProtocol(req.Params.Meta)), nil
}

// progressGate keeps one call's progress notifications as MCP requires:
// the progress value increases with each one and never exceeds the total.
// A report that would not increase it (a command that went back, a
// message without a count after the first) is not sent; one beyond its
// total is sent at the total.
type progressGate struct {
	mu   sync.Mutex
	sent bool
	last float64
}

func (g *progressGate) next(pr *wire.Progress) (*sdk.ProgressNotificationParams, bool) {
	n := &sdk.ProgressNotificationParams{Message: pr.Message}
	if pr.Done != nil {
		n.Progress = *pr.Done
	}
	if pr.Total != nil && *pr.Total > 0 {
		n.Total = *pr.Total
		n.Progress = min(n.Progress, n.Total)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sent && n.Progress <= g.last || n.Progress < 0 {
		return nil, false
	}
	g.sent, g.last = true, n.Progress
	return n, true
}

// newProtocol reports whether a request follows protocol 2026-07-28 or
// later, by the SDK's own rule: a protocol version in the request's _meta.
func newProtocol(meta sdk.Meta) bool {
	v, ok := meta[sdk.MetaKeyProtocolVersion].(string)
	return ok && v >= "2026-07-28"
}

// LogQueue is the diagnostics log of a session (or, given as
// Options.Diagnostics, of every server that shares it, such as the
// per-request servers of HTTP): each Write is one line,
// queued and written by one goroutine, so a log nobody reads (a stderr
// pipe the MCP host never drains) can never block an invocation. When the
// queue is full, lines are dropped and counted; the count is written as a
// line once there is room again.
type LogQueue struct {
	lines   chan []byte
	dropped atomic.Int64
	done    chan struct{}
}

// logQueueLines bounds the lines waiting to be written.
const logQueueLines = 1024

func NewLogQueue(w io.Writer) *LogQueue {
	q := &LogQueue{lines: make(chan []byte, logQueueLines), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		for line := range q.lines {
			w.Write(line)
			if n := q.dropped.Swap(0); n > 0 {
				fmt.Fprintf(w, "(%d diagnostics lines dropped: the log was not read fast enough)\n", n)
			}
		}
	}()
	return q
}

func (q *LogQueue) Write(p []byte) (int, error) {
	select {
	case q.lines <- append([]byte(nil), p...):
	default:
		q.dropped.Add(1)
	}
	return len(p), nil
}

// close writes what is queued, waiting at most wait.
func (q *LogQueue) close(wait time.Duration) {
	close(q.lines)
	select {
	case <-q.done:
	case <-time.After(wait):
	}
}

// envelope is the closed core-owned result of a call
// (docs/reference.md §3).
type envelope struct {
	InvocationID  string         `json:"invocationId"`
	Outcome       string         `json:"outcome"`
	Reason        string         `json:"reason,omitempty"`
	ApprovalID    string         `json:"approvalId,omitempty"`
	CommandResult *commandResult `json:"commandResult,omitempty"`
	Effects       []effect       `json:"effects,omitempty"`
}

type effect struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
}

type commandResult struct {
	Kind string          `json:"kind"`
	Text *string         `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// result turns an outcome into a complete tool result: the envelope as
// structuredContent and as the first text block; refusals add a second
// block saying what to fix. Under protocol 2026-07-28 (complete set) the
// result says "resultType": "complete": it is built only once the
// invocation has been finalized, so it is final.
func result(out *wire.CallResult, complete bool) *sdk.CallToolResult {
	env := envelope{InvocationID: out.InvocationID, Outcome: out.Outcome, Reason: out.Reason, ApprovalID: out.ApprovalID}
	for _, e := range out.Effects {
		env.Effects = append(env.Effects, effect{Kind: e.Kind, Ref: e.Ref})
	}
	if r := out.Result; r != nil {
		cr := &commandResult{Kind: r.Kind}
		if r.Kind == "text" {
			text := r.Text
			cr.Text = &text
		} else {
			cr.Data = r.Data
		}
		env.CommandResult = cr
	}
	data, err := json.Marshal(env)
	if err != nil {
		data = []byte(`{"invocationId":"","outcome":"execution_failed","reason":"protocol_error"}`)
	}
	res := &sdk.CallToolResult{}
	if complete {
		res = completeResult()
	}
	res.StructuredContent = json.RawMessage(data)
	res.Content = []sdk.Content{&sdk.TextContent{Text: string(data)}}
	res.IsError = out.Outcome != "succeeded"
	if res.IsError && out.Message != "" {
		msg := out.Message
		if out.Reason == reasonInvalidInput && len(out.InputSchema) > 0 {
			msg += "\nThe tool's input schema: " + string(out.InputSchema)
		}
		res.Content = append(res.Content, &sdk.TextContent{Text: msg})
	}
	return res
}

// completeResult returns an empty CallToolResult whose resultType is
// "complete". The go-sdk (v1.8.0) sets that field only on results of tools
// registered with AddTool, and offers no setter: decoding is the one public
// way to set it. It is decoded once (completeTemplate) and copied: the
// go-sdk's decoder allocated some 40 KB for every call.
func completeResult() *sdk.CallToolResult {
	res := completeTemplate()
	res.Content = []sdk.Content{}
	return &res
}

var completeTemplate = sync.OnceValue(func() sdk.CallToolResult {
	var res sdk.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &res); err != nil {
		panic("mcp: the go-sdk no longer decodes resultType: " + err.Error())
	}
	return res
})
