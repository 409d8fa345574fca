package local

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/release/extproto"
)

// Listing limits (I8).
const (
	PageTools    = 32
	PageBytes    = 1 << 20
	ListDeadline = 30 * time.Second
)

var _ seam.ToolHost = (*Host)(nil)

// visible returns the projection of the current revision and the tools
// task may see, in name order. A task that cannot be read is an error,
// never an empty list.
func (l *Host) visible(ctx context.Context, task string) (*projection.Projection, *profile.Profile, []*projection.Tool, error) {
	p, prof, err := l.Projection(ctx)
	if err != nil {
		return nil, nil, nil, storeError("cannot read the tool projection", err)
	}
	t, ok := prof.Tasks[task]
	if !ok {
		return nil, nil, nil, wire.Errorf(wire.CodeTaskUndefined,
			"the task %q this server is bound to is not defined in the active profile; the owner must restore it", task)
	}
	// What a task sees is a function of the projection and its profile
	// alone, so it is computed once per projection and task, not for every
	// page and call. The key is the projection itself: the tools are
	// pointers into it, which CallTool compares.
	key := visibleKey{p, task}
	if tools, ok := l.visibles.Load(key); ok {
		return p, prof, tools.([]*projection.Tool), nil
	}
	var tools []*projection.Tool
	for i := range p.Tools {
		tool := &p.Tools[i]
		for _, pat := range t.Commands {
			if profile.Matches(pat, tool.Identity) {
				tools = append(tools, tool)
				break
			}
		}
	}
	l.visibles.Store(key, tools)
	return p, prof, tools, nil
}

// visibleKey names the tools one task sees in one projection.
type visibleKey struct {
	p    *projection.Projection
	task string
}

// storeError classifies a failure to read the store as a *wire.Error that
// still unwraps to its cause (a *store.LockedError, say).
func storeError(what string, err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return err
	}
	code := wire.CodeStoreUnavailable
	var corrupt *store.CorruptError
	if errors.As(err, &corrupt) {
		code = wire.CodeStoreDamaged
	}
	return &causedError{wire.Errorf(code, "%s: %v", what, err), err}
}

// causedError is a *wire.Error with the Go error it came from.
type causedError struct {
	we    *wire.Error
	cause error
}

func (e *causedError) Error() string   { return e.we.Message }
func (e *causedError) Unwrap() []error { return []error{e.we, e.cause} }

func (l *Host) HTTPSection(ctx context.Context) (*wire.HTTP, error) {
	p, prof, err := l.Projection(ctx)
	if err != nil {
		return nil, storeError("cannot read the active profile", err)
	}
	h := &wire.HTTP{Revision: p.Revision}
	if prof.MCP.HTTP != nil {
		if h.Section, err = json.Marshal(prof.MCP.HTTP); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "mcp.http: %v", err)
		}
	}
	return h, nil
}

func (l *Host) BindTask(ctx context.Context, task string) (string, error) {
	_, prof, err := l.Projection(ctx)
	if err != nil {
		return "", storeError("cannot read the active profile", err)
	}
	if task == "" {
		task = prof.MCP.Task
	}
	if _, ok := prof.Tasks[task]; !ok {
		return "", wire.Errorf(wire.CodeTaskUndefined, "task %q is not defined in the active profile", task)
	}
	return task, nil
}

func (l *Host) ListTools(ctx context.Context, list *wire.ListTools) (*wire.ToolPage, error) {
	task, cursor := list.Task, list.Cursor
	binding := cursorBinding(list)
	ctx, cancel := context.WithTimeout(ctx, ListDeadline)
	defer cancel()
	p, prof, tools, err := l.visible(ctx, task)
	if err != nil {
		return nil, err
	}
	commands := len(tools)
	var denied []*wire.DeniedTool
	if list.Denied {
		if denied, err = l.denied(ctx, p, prof.Tasks[task], tools); err != nil {
			return nil, err
		}
	}
	if prof.MCPProjection() == profile.ProjectionDispatch {
		// One tool, whatever the task sees (docs/adr/0006-dispatch-projection.md).
		tools = []*projection.Tool{p.DispatchTool()}
	}
	start := 0
	if cursor != "" {
		key, err := l.CursorKey(ctx)
		if err != nil {
			return nil, storeError("cannot read the cursor key", err)
		}
		pos, ok := readCursor(key, cursor, p.Revision, binding)
		if !ok || pos > len(tools) {
			return nil, wire.Errorf(wire.CodeBadCursor,
				"the cursor is invalid or from an older tool list (the profile changed); list the tools again from the start")
		}
		start = pos
	}
	page := &wire.ToolPage{Revision: p.Revision, Tools: []*wire.Tool{}, Total: len(tools), Commands: commands, Projection: prof.MCPProjection(), Denied: denied, Naming: string(p.Naming)}
	size := 0
	end := start
	for ; end < len(tools) && end-start < PageTools; end++ {
		t := wireTool(tools[end])
		n := len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema) + 256
		if end > start && size+n > PageBytes {
			break
		}
		size += n
		page.Tools = append(page.Tools, t)
	}
	if end < len(tools) {
		key, err := l.CursorKey(ctx)
		if err != nil {
			return nil, storeError("cannot read the cursor key", err)
		}
		page.NextCursor = makeCursor(key, p.Revision, binding, end)
	}
	return page, nil
}

// denied lists the tools (of p, visible to task) every call of which task
// denies, as admission would (invoke.Unallowed). It pins each tool's
// command: only `mcp`'s start and `tools` ask for it.
func (l *Host) denied(ctx context.Context, p *projection.Projection, task profile.Task, tools []*projection.Tool) ([]*wire.DeniedTool, error) {
	var out []*wire.DeniedTool
	for _, tool := range tools {
		target, err := l.ResolveTool(ctx, p.Revision, tool)
		if errors.Is(err, invoke.ErrStale) {
			return nil, nil // a change landed: the next listing says
		}
		if err != nil {
			return nil, storeError("cannot pin the tool's command", err)
		}
		if a, ok := invoke.Unallowed(task, target.Command); ok {
			out = append(out, &wire.DeniedTool{Name: tool.Name, Identity: tool.Identity, Action: a.Action, Resource: a.Resource})
		}
	}
	return out, nil
}

func wireTool(t *projection.Tool) *wire.Tool {
	wt := &wire.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
	if an := t.Annotations; an.ReadOnlyHint != nil || an.DestructiveHint != nil || an.IdempotentHint != nil || an.OpenWorldHint != nil {
		wt.Annotations = &wire.Annotations{ReadOnly: an.ReadOnlyHint, Destructive: an.DestructiveHint,
			Idempotent: an.IdempotentHint, OpenWorld: an.OpenWorldHint}
	}
	return wt
}

// cursorBinding is what a cursor is bound to besides the revision: the
// task and, over HTTP, the caller (one subject's cursor is useless to
// another, even of the same task).
func cursorBinding(list *wire.ListTools) string {
	if list.Subject == "" {
		return list.Task
	}
	return list.Task + "\x00" + list.Issuer + "\x00" + list.Subject
}

// A cursor is base64url(revision | position | HMAC-SHA256(key, revision |
// position | binding)[:16]): bound to the revision, the visibility binding
// and the position, and useless once any of them changes.
func makeCursor(key []byte, rev uint64, task string, pos int) string {
	buf := binary.BigEndian.AppendUint64(nil, rev)
	buf = binary.BigEndian.AppendUint32(buf, uint32(pos))
	buf = append(buf, cursorMAC(key, buf, task)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

func readCursor(key []byte, cursor string, rev uint64, task string) (int, bool) {
	if len(cursor) > 64 {
		return 0, false
	}
	buf, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(buf) != 12+16 {
		return 0, false
	}
	if !hmac.Equal(buf[12:], cursorMAC(key, buf[:12], task)) || binary.BigEndian.Uint64(buf) != rev {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(buf[8:12])), true
}

func cursorMAC(key, head []byte, task string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(head)
	m.Write([]byte(task))
	return m.Sum(nil)[:16]
}

// errUnknownTool is the one answer for unknown, obsolete and invisible
// names alike, so it reveals nothing about hidden tools; it says what a
// client that listed before the owner's last change must do.
func errUnknownTool(name string) error {
	return wire.Errorf(wire.CodeUnknownTool, "unknown tool %q: tool names change with every change the owner makes "+
		"to the profile or the installed releases; list the tools again (tools/list) and call a name from that list", name)
}

func (l *Host) CallTool(ctx context.Context, call *wire.CallTool, opts seam.CallOptions) (*wire.CallResult, error) {
	p, prof, tools, err := l.visible(ctx, call.Task)
	if err != nil {
		return nil, err
	}
	if prof.MCPProjection() == profile.ProjectionDispatch {
		if call.Name != p.DispatchTool().Name {
			return nil, errUnknownTool(call.Name)
		}
		return l.dispatch(ctx, p, tools, call, opts)
	}
	tool := p.Tool(call.Name)
	if tool == nil || !contains(tools, tool) {
		return nil, errUnknownTool(call.Name)
	}
	return l.callTool(ctx, p, tool, call, opts)
}

// callTool makes one invocation of tool, visible to call.Task in p: the
// one path of a per-tool call and of every dispatch op.
func (l *Host) callTool(ctx context.Context, p *projection.Projection, tool *projection.Tool, call *wire.CallTool, opts seam.CallOptions) (*wire.CallResult, error) {
	target, err := l.ResolveTool(ctx, p.Revision, tool)
	if errors.Is(err, invoke.ErrStale) {
		return nil, errUnknownTool(call.Name)
	}
	if err != nil {
		return nil, storeError("cannot pin the tool's command", err)
	}
	r := &invoke.Request{
		Transport:    invoke.TransportMCP,
		Task:         call.Task,
		Subject:      call.Subject,
		Issuer:       call.Issuer,
		Arguments:    call.Arguments,
		CancelReason: opts.CancelReason,
		OnStart:      opts.OnStart,
	}
	if r.CancelReason == nil {
		r.CancelReason = func() string { return invoke.ReasonClientCancelled }
	}
	if opts.Diagnostics != nil {
		r.Diagnostics = invoke.NewDiagnosticsLog(opts.Diagnostics)
	}
	if opts.OnProgress != nil {
		r.OnProgress = func(pr extproto.Progress) {
			opts.OnProgress(&wire.Progress{Message: pr.Message, Done: asFloat(pr.Done), Total: asFloat(pr.Total)})
		}
	}
	if call.Detach {
		return l.detach(ctx, target, r, opts, tool)
	}
	out, err := l.core.Invoke(ctx, target, r)
	return wireResult(out, err, tool), nil
}

func contains(tools []*projection.Tool, t *projection.Tool) bool {
	for _, x := range tools {
		if x == t {
			return true
		}
	}
	return false
}

func asFloat(n *int64) *float64 {
	if n == nil {
		return nil
	}
	f := float64(*n)
	return &f
}
