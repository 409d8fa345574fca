package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// recordConn is a connection that keeps what is written to it.
type recordConn struct {
	mu      sync.Mutex
	written []jsonrpc.Message
}

func (r *recordConn) Read(context.Context) (jsonrpc.Message, error) { select {} }
func (r *recordConn) Write(_ context.Context, m jsonrpc.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written = append(r.written, m)
	return nil
}
func (r *recordConn) Close() error      { return nil }
func (r *recordConn) SessionID() string { return "" }

// TestCancelKeepsIDType: a notifications/cancelled names one request id,
// with its type; the answer to an id of the same value and another type
// (1 and "1") is still written, the cancelled one's is dropped.
func TestCancelKeepsIDType(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cancelled any // requestId as JSON decodes it
		answered  any // the id the response carries
		dropped   bool
	}{
		{"string cancels string", "1", "1", true},
		{"number cancels number", float64(1), float64(1), true},
		{"string does not cancel number", "1", float64(1), false},
		{"number does not cancel string", float64(1), "1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recordConn{}
			c := &sessionConn{Connection: rc, end: func() {}, cancelled: map[string]bool{}, unanswered: map[string]bool{}}
			params, _ := json.Marshal(map[string]any{"requestId": tc.cancelled})
			c.noteCancel(&jsonrpc.Request{Method: "notifications/cancelled", Params: params})
			id, err := jsonrpc.MakeID(tc.answered)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if got := len(rc.written) == 0; got != tc.dropped {
				t.Errorf("response to %#v after cancelling %#v: dropped %v, want %v", tc.answered, tc.cancelled, got, tc.dropped)
			}
		})
	}
}
