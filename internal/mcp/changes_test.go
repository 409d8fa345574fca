package mcp_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/mcp"
)

// changedHang bounds a wait for a notification: a hang guard, never a
// budget.
const changedHang = 15 * time.Second

// connectNotified is connect with a ToolListChangedHandler and a protocol
// version; each notification is sent on the channel it returns.
func connectNotified(t *testing.T, dir, version string) (*sdk.ClientSession, <-chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 16)
	cs := connectWith(t, dir, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs, changed
}

// An owner's change, made through another handle on the store (as another
// process would), reaches a connected client as tools/list_changed on
// both protocol versions (2026-07-28 through subscriptions/listen); the
// client lists again and calls a name of the new list. The server says
// it will (tools.listChanged).
func TestToolsListChanged(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			dir, a := home(t, 3, "test.*/*")
			cs, changed := connectNotified(t, dir, version)
			if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
				t.Fatalf("capabilities %+v: want tools.listChanged", caps.Tools)
			}
			// On 2026-07-28 the client's Connect returns once the server
			// acknowledged its subscriptions/listen.
			before, _ := listAll(t, cs)
			apply(t, a, "test.*/*", "renamed")
			select {
			case <-changed:
			case <-time.After(changedHang):
				t.Fatalf("no notifications/tools/list_changed within %s of a new revision", changedHang)
			}
			after, _ := listAll(t, cs)
			if len(after) != len(before) || after[0] == before[0] {
				t.Fatalf("listed again: %v, before %v", after, before)
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: after[0]})
			if err != nil || res.IsError {
				t.Fatalf("a name of the new list: %v %+v", err, res)
			}
			// One revision, one notification: nothing more arrives once
			// the next revision's own has.
			apply(t, a, "test.*/*", "again")
			select {
			case <-changed:
			case <-time.After(changedHang):
				t.Fatalf("no notification for the second revision")
			}
			if n := len(changed); n != 0 {
				t.Errorf("%d more notifications for two revisions", n)
			}
		})
	}
}

// recorder is a client transport that keeps every method the server
// sent on it.
type recorder struct {
	sdk.Transport
	mu      sync.Mutex
	methods []string
}

func (r *recorder) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	return &recordingConn{Connection: c, r: r}, err
}

func (r *recorder) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.methods {
		if m == method {
			n++
		}
	}
	return n
}

type recordingConn struct {
	sdk.Connection
	r *recorder
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok {
		c.r.mu.Lock()
		c.r.methods = append(c.r.methods, req.Method)
		c.r.mu.Unlock()
	}
	return m, err
}

// The notification goes only where the protocol lets it: a 2026-07-28
// session that did not subscribe (subscriptions/listen) gets none; a
// 2025-11-25 session gets one per revision at most, and a burst of
// revisions may come as one. Three sessions of one server: the
// subscribed one's notification orders the others' (the SDK writes to
// sessions of older versions first), and a ping on each then orders
// anything written to it before.
func TestToolsListChangedOnlyWhereAllowed(t *testing.T) {
	dir, a := home(t, 2, "test.*/*")
	ctx := context.Background()
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	session := func(version string, opts *sdk.ClientOptions) (*sdk.ClientSession, *recorder) {
		var rec *recorder
		cs := connectTo(t, srv, func(ct sdk.Transport) sdk.Transport { rec = &recorder{Transport: ct}; return rec },
			opts, &sdk.ClientSessionOptions{ProtocolVersion: version})
		return cs, rec
	}
	quiet, quietRec := session("2026-07-28", nil) // no handler: it does not subscribe
	legacy, legacyRec := session("2025-11-25", nil)
	changed := make(chan struct{}, 16)
	session("2026-07-28", &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }})

	const revisions = 3
	for i := range revisions {
		apply(t, a, "test.*/*", fmt.Sprintf("burst%d", i))
	}
	select {
	case <-changed:
	case <-time.After(changedHang):
		t.Fatalf("the subscribed session was not told within %s", changedHang)
	}
	for _, cs := range []*sdk.ClientSession{quiet, legacy} {
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := quietRec.count("notifications/tools/list_changed"); n != 0 {
		t.Errorf("a 2026-07-28 session that did not subscribe got %d notifications", n)
	}
	if n := legacyRec.count("notifications/tools/list_changed"); n < 1 || n > revisions {
		t.Errorf("the 2025-11-25 session got %d notifications for %d revisions, want 1 to %d", n, revisions, revisions)
	}
}

// A cursor is bound to the caller that listed (over HTTP, its subject and
// issuer), not only to the task: another caller of the same task cannot
// page with it, and the same caller can.
func TestCursorBoundToCaller(t *testing.T) {
	dir, _ := home(t, 40, "test.*/*")
	ctx := context.Background()
	as := func(subject string) *sdk.ClientSession {
		srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Name: "rukh", Version: "test", Stateless: true,
			Binding: mcp.Binding{Task: "agent", Subject: subject, Issuer: "https://idp.test"}})
		return connectTo(t, srv, nil, nil, nil)
	}
	alice, bob := as("alice"), as("bob")
	first, err := alice.ListTools(ctx, nil)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	if _, err := bob.ListTools(ctx, &sdk.ListToolsParams{Cursor: first.NextCursor}); err == nil || !strings.Contains(err.Error(), "list the tools again") {
		t.Errorf("bob with alice's cursor: %v", err)
	}
	if next, err := alice.ListTools(ctx, &sdk.ListToolsParams{Cursor: first.NextCursor}); err != nil || len(next.Tools) == 0 {
		t.Errorf("alice with her own cursor: %v", err)
	}
}
