package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
