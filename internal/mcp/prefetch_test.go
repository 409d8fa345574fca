package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
)

// pagedHost lists three pages of one tool each, "0" "1" "2", naming each
// tool after the revision it was listed at, and reports every request.
type pagedHost struct {
	seam.ToolHost // nil: only ListTools is asked
	asked         chan string
	revision      chan uint64 // the revision the next answers list
	mu            sync.Mutex  // a page asked ahead runs beside a request
	rev           uint64
}

func (h *pagedHost) ListTools(ctx context.Context, list *wire.ListTools) (*wire.ToolPage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case r := <-h.revision:
		h.rev = r
	default:
	}
	h.asked <- list.Cursor
	next := map[string]string{"": "1", "1": "2", "2": ""}[list.Cursor]
	return &wire.ToolPage{Revision: h.rev, NextCursor: next, Tools: []*wire.Tool{{
		Name: fmt.Sprintf("t%s_r%d", list.Cursor, h.rev), InputSchema: []byte(`{"type":"object"}`)}}}, nil
}

// TestListAsksAhead: a session that has been sent a page has the host
// asked for the next one before the client asks; the client gets what
// the host answered; a revision drops a page asked ahead.
func TestListAsksAhead(t *testing.T) {
	host := &pagedHost{asked: make(chan string, 8), revision: make(chan uint64, 1), rev: 1}
	revisions := make(chan uint64)
	srv := mcp.NewServer(mcp.Options{Host: host, Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test", Revisions: revisions})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, ct := sdk.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	asked := func(want string) {
		t.Helper()
		select {
		case got := <-host.asked:
			if got != want {
				t.Fatalf("the host was asked for cursor %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("the host was not asked for cursor %q", want)
		}
	}
	list := func(cursor, want string) *sdk.ListToolsResult {
		t.Helper()
		res, err := cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != want {
			t.Fatalf("page %q lists %v, want %s", cursor, res.Tools, want)
		}
		return res
	}

	list("", "t_r1")
	asked("")
	asked("1") // ahead, before the client asks
	list("1", "t1_r1")
	asked("2") // the client's own request was served from what was asked ahead
	list("2", "t2_r1")
	select {
	case c := <-host.asked:
		t.Fatalf("the host was asked for %q after the last page", c)
	default:
	}

	// A revision drops the page asked ahead: after it, the host is asked
	// again, and the client gets the new revision's page.
	list("", "t_r1")
	asked("")
	asked("1")
	host.revision <- 2
	revisions <- 2
	// notifyRevisions has taken the revision once the next one is taken.
	revisions <- 3
	list("1", "t1_r2")
	asked("1")
	asked("2")
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}
