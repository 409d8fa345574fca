package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// keptGuard bounds every wait of these tests. It is far below the
// keepIdle the server is given (an hour), so a connection that ends
// within it was ended by what the test did, not by the idle limit.
const keptGuard = time.Minute

// keptServer serves an empty home in this process, keeping idle
// connections for an hour, and returns it, its socket and what Serve
// returned (once it has: done is closed). Each time a connection waits for
// its next read, kept receives. setup, when set, adjusts the server
// before it serves.
func keptServer(t *testing.T, setup func(*Server)) (*Server, string, <-chan struct{}, *error, <-chan struct{}) {
	t.Helper()
	dir := testhome.TempDir(t)
	p := paths.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}
	ln, _, err := Listen(context.Background(), "rukh", p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New("rukh", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.keepIdle = time.Hour
	keptc := make(chan struct{}, 16)
	s.kept = func() {
		select {
		case keptc <- struct{}{}:
		default: // a test that does not wait for it never blocks the daemon
		}
	}
	if setup != nil {
		setup(s)
	}
	served, serveErr := make(chan struct{}), new(error)
	go func() {
		*serveErr = s.Serve(context.Background(), ln)
		close(served)
	}()
	t.Cleanup(func() {
		s.Stop()
		select {
		case <-served:
		case <-time.After(keptGuard):
			t.Errorf("Serve did not return within %s of Stop", keptGuard)
		}
		s.Close()
	})
	return s, p.Socket("rukh"), served, serveErr, keptc
}

// waitKept waits until a connection waits for its next read.
func waitKept(t *testing.T, kept <-chan struct{}) {
	t.Helper()
	select {
	case <-kept:
	case <-time.After(keptGuard):
		t.Fatalf("no connection waited for its next read within %s", keptGuard)
	}
}

// keptConn is a client connection that has said hello.
func keptConn(t *testing.T, sock string) (*os.File, *wire.Conn) {
	t.Helper()
	f, err := wire.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c := wire.NewConn(f)
	if err := c.Send(&wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: buildid.ID(), Name: "rukh", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	if m := keptNext(t, f, c, "the daemon's hello"); m.Hello == nil {
		t.Fatalf("the daemon answered hello with %+v", m)
	}
	return f, c
}

func keptNext(t *testing.T, f *os.File, c *wire.Conn, what string) *wire.Msg {
	t.Helper()
	f.SetReadDeadline(time.Now().Add(keptGuard))
	m, files, err := c.Receive()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return m
}

// keptRead sends a read (getHttp) and takes its answer.
func keptRead(t *testing.T, f *os.File, c *wire.Conn) {
	t.Helper()
	if err := c.Send(&wire.Msg{GetHTTP: &wire.GetHTTP{}}); err != nil {
		t.Fatal(err)
	}
	if m := keptNext(t, f, c, "the section"); m.HTTP == nil {
		t.Fatalf("getHttp was answered %+v", m)
	}
}

// keptEOF waits for the daemon to close the connection.
func keptEOF(t *testing.T, f *os.File, c *wire.Conn, what string) {
	t.Helper()
	f.SetReadDeadline(time.Now().Add(keptGuard))
	m, _, err := c.Receive()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("%s: the daemon sent %+v (%v), not the connection's end", what, m, err)
	}
}

// A read (bindTask, listTools, getHttp) may follow a read on one
// connection, each answered before the next is read, and a late cancel
// between two reads is ignored; anything else after a read is refused
// and nothing of it is done.
func TestKeptReads(t *testing.T) {
	reads := []*wire.Msg{
		{GetHTTP: &wire.GetHTTP{}},
		{BindTask: &wire.BindTask{Task: "nope"}},
		{ListTools: &wire.ListTools{Task: "nope"}},
		{Cancel: &wire.Cancel{Reason: "client_cancelled"}}, // a late cancel: no answer
		{GetHTTP: &wire.GetHTTP{}},
	}
	t.Run("ReadsFollowReads", func(t *testing.T) {
		_, sock, _, _, _ := keptServer(t, nil)
		f, c := keptConn(t, sock)
		for _, req := range reads {
			if err := c.Send(req); err != nil {
				t.Fatal(err)
			}
			if req.Cancel != nil {
				continue
			}
			m := keptNext(t, f, c, "the answer")
			switch {
			case req.GetHTTP != nil && m.HTTP == nil,
				req.BindTask != nil && (m.Error == nil || m.Error.Code != wire.CodeTaskUndefined),
				req.ListTools != nil && (m.Error == nil || m.Error.Code != wire.CodeTaskUndefined):
				t.Fatalf("%+v was answered %+v", req, m)
			}
		}
	})
	for _, tc := range []struct {
		name string
		req  *wire.Msg
	}{
		{"CallAfterRead", &wire.Msg{CallTool: &wire.CallTool{Task: "owner", Name: "t_quick"}}},
		{"WaitAfterRead", &wire.Msg{WaitInvocations: &wire.WaitInvocations{Task: "owner", IDs: []string{"x"}}}},
		{"StopAfterRead", &wire.Msg{Stop: &wire.Stop{}}},
		{"SettleAfterRead", &wire.Msg{Settle: &wire.Settle{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, sock, _, _, _ := keptServer(t, nil)
			f, c := keptConn(t, sock)
			keptRead(t, f, c)
			if err := c.Send(tc.req); err != nil {
				t.Fatal(err)
			}
			if m := keptNext(t, f, c, "the refusal"); m.Error == nil || m.Error.Code != wire.CodeBadRequest {
				t.Fatalf("%+v after a read was answered %+v, not bad_request", tc.req, m)
			}
			keptEOF(t, f, c, "after the refusal")
			if s.stopping.Load() {
				t.Fatal("a stop after a read stopped the daemon")
			}
		})
	}
}

// A drain closes the kept connections at once, so that Serve returns
// without waiting for their idle limit, and a read that comes as the
// daemon drains is refused as a new connection's would be.
func TestKeptDrain(t *testing.T) {
	t.Run("ClosesIdle", func(t *testing.T) {
		s, sock, done, serveErr, kept := keptServer(t, nil)
		f, c := keptConn(t, sock)
		keptRead(t, f, c)
		waitKept(t, kept)
		s.drain()
		keptEOF(t, f, c, "a kept connection as the daemon drains")
		select {
		case <-done:
			if *serveErr != nil {
				t.Fatal(*serveErr)
			}
		case <-time.After(keptGuard):
			t.Fatalf("Serve did not return within %s of the drain", keptGuard)
		}
		keptSettled(t, s)
	})
	t.Run("RefusesStale", func(t *testing.T) {
		exe := filepath.Join(testhome.TempDir(t), "rukhd")
		if err := os.WriteFile(exe, []byte("v1"), 0o755); err != nil {
			t.Fatal(err)
		}
		s, sock, _, _, _ := keptServer(t, func(s *Server) { s.Exe = exe })
		f, c := keptConn(t, sock)
		keptRead(t, f, c)
		if err := os.WriteFile(exe, []byte("v2, upgraded"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := c.Send(&wire.Msg{GetHTTP: &wire.GetHTTP{}}); err != nil {
			t.Fatal(err)
		}
		if m := keptNext(t, f, c, "the refusal"); m.Error == nil || m.Error.Code != wire.CodeDaemonStale {
			t.Fatalf("a read after an upgrade was answered %+v, not daemon_stale", m)
		}
		keptEOF(t, f, c, "after daemon_stale")
		if !s.stopping.Load() {
			t.Fatal("the upgrade did not start a drain")
		}
	})
}

// A flood evicts kept connections like any waiting one: they hold no
// slot of their own.
func TestKeptEvicted(t *testing.T) {
	s, sock, done, _, kept := keptServer(t, nil)
	f, c := keptConn(t, sock)
	keptRead(t, f, c)
	waitKept(t, kept)
	s.waiting.mu.Lock()
	if n := s.waiting.order.Len(); n != 1 {
		s.waiting.mu.Unlock()
		t.Fatalf("%d connections wait; the kept one should", n)
	}
	s.waiting.evictLocked()
	s.waiting.mu.Unlock()
	keptEOF(t, f, c, "an evicted kept connection")
	s.Stop()
	select {
	case <-done:
	case <-time.After(keptGuard):
		t.Fatalf("Serve did not return within %s of Stop", keptGuard)
	}
	keptSettled(t, s)
}

// keptSettled checks, once Serve has returned, that no connection is
// counted anywhere: kept ones leave no slot, place or eviction behind.
func keptSettled(t *testing.T, s *Server) {
	t.Helper()
	if n, w, wait, ev := s.conns.Load(), s.working.Load(), s.waiting.len(), s.waiting.evictedOpen(); n != 0 || w != 0 || wait != 0 || ev != 0 {
		t.Errorf("after Serve: %d connections, %d served, %d waiting, %d evicted still open; want none", n, w, wait, ev)
	}
}
