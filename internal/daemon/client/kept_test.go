package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/daemon"
	"github.com/rukh-cli/rukh/internal/daemon/client"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/thin"
)

// guard bounds every wait of these tests.
const guard = time.Minute

// serve starts a daemon on p in this process; stop stops it and waits
// until it has released the store.
func serve(t *testing.T, p paths.Paths) (stop func()) {
	t.Helper()
	ln, _, err := daemon.Listen(context.Background(), "rukh", p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := daemon.New("rukh", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.Serve(context.Background(), ln)
		close(done)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.Stop()
			select {
			case <-done:
			case <-time.After(guard):
				t.Errorf("the daemon did not stop within %s", guard)
			}
			s.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// relay listens at a path, passes each connection on to a socket, and
// counts the connections it accepted; ended receives once for each that
// the client closed. Once hung, it passes nothing on in either
// direction, as a daemon that stopped answering (SIGSTOP) would.
type relay struct {
	accepted atomic.Int64
	hung     atomic.Bool
	// asked counts the connections made before the relay hung that the
	// client sent something on since.
	asked atomic.Int64
	ended chan struct{}
	mu    sync.Mutex
	conns []net.Conn // closed in the test's cleanup
}

func (r *relay) hold(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns = append(r.conns, c)
}

func proxy(t *testing.T, path, to string) *relay {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ended: make(chan struct{}, 1024)}
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.conns {
			c.Close()
		}
	})
	// pass copies src to dst until src ends, then ends dst's writing
	// side only: the relay still sees when the client closes its end.
	pass := func(dst, src net.Conn, fromClient bool) {
		defer dst.(*net.UnixConn).CloseWrite()
		buf := make([]byte, 64<<10)
		counted := false
		for {
			n, err := src.Read(buf)
			if n > 0 && fromClient && r.hung.Load() && !counted {
				counted = true
				r.asked.Add(1)
			}
			if n > 0 && !r.hung.Load() {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				if fromClient && errors.Is(err, io.EOF) {
					r.ended <- struct{}{}
				}
				return
			}
		}
	}
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			r.accepted.Add(1)
			r.hold(down)
			if r.hung.Load() {
				continue // accepted, never answered
			}
			up, err := net.Dial("unix", to)
			if err != nil {
				down.Close()
				continue
			}
			r.hold(up)
			go pass(up, down, true)
			go pass(down, up, false)
		}
	}()
	return r
}

// fixture is a home served by a daemon in this process (stop stops it,
// and serve starts another on the same paths), reached through a relay
// by an Auto, and a context bounded by guard.
type fixture struct {
	p    paths.Paths
	stop func()
	r    *relay
	a    *client.Auto
	ctx  context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := testhome.TempDir(t)
	f := &fixture{p: paths.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}}
	f.stop = serve(t, f.p)
	front := filepath.Join(dir, "front.sock")
	f.r = proxy(t, front, f.p.Socket("rukh"))
	f.a = client.NewAuto(thin.Dialer{Socket: front, Name: "rukh", Build: buildid.ID()}, local.New(f.p.Data))
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	f.ctx = ctx
	return f
}

// A long-lived client sends its reads on one connection; when the daemon
// has closed it (here: it stopped, and another started), the next read
// goes on a new connection and is answered, not failed.
func TestReadsKeepOneConnection(t *testing.T) {
	f := newFixture(t)
	p, stop, accepted, a, ctx := f.p, f.stop, &f.r.accepted, f.a, f.ctx
	read := func() {
		t.Helper()
		if _, err := a.HTTPSection(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		read()
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("20 reads took %d connections, not one", n)
	}
	stop()
	serve(t, p)
	read()
	if n := accepted.Load(); n != 2 {
		t.Fatalf("a read after the daemon's restart took %d connections in all, not a second one", n)
	}
	for range 5 {
		read()
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("reads after the restart took %d connections in all, not two", n)
	}
	// A call is never sent on a kept connection: it dials its own (and
	// here is refused, the task being undefined), and the kept one serves
	// the next read.
	_, err := a.CallTool(ctx, &wire.CallTool{Task: "none", Name: "t_x"}, seam.CallOptions{})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeTaskUndefined {
		t.Fatalf("the call was answered %v, not task_undefined", err)
	}
	read()
	if n := accepted.Load(); n != 3 {
		t.Fatalf("a call and a read took %d connections in all, not one more than the reads", n)
	}
}

// A kept connection skips the hello that tells a hung daemon; a read on
// it that is not answered within the hello's bound is asked again on a
// new connection, whose hello then says the daemon is hung, as it would
// have without the kept connection: the read neither hangs nor is
// answered by another host.
func TestKeptReadOfHungDaemon(t *testing.T) {
	f := newFixture(t)
	r, a, ctx := f.r, f.a, f.ctx
	// Four kept sessions, as after reads made at once.
	const kept = 4
	for range kept {
		s, err := a.Dialer.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.Keep(s)
	}
	r.hung.Store(true)
	_, err := a.HTTPSection(ctx)
	var te *thin.Error
	if !errors.As(err, &te) || te.Op != "hello" || !strings.Contains(te.Error(), "the daemon is hung") {
		t.Fatalf("a read of a hung daemon: %v; want the hello's hung daemon", err)
	}
	// One kept session was asked, and none of the others of the same
	// hung daemon (each would have cost the bound again), then a new
	// connection.
	if n := r.asked.Load(); n != 1 {
		t.Fatalf("the read was sent on %d kept sessions of the hung daemon, not one", n)
	}
	if n := r.accepted.Load(); n != kept+1 {
		t.Fatalf("%d connections in all, not the %d kept and a new one", n, kept)
	}
}

// A call and a wait each close their own connection once answered: only
// reads keep one. (A wait's connection was once left open, for the
// garbage collector to close.)
func TestCallsAndWaitsClose(t *testing.T) {
	// A connection left open would be closed by its finalizer once
	// collected: no collection here, so only a Close ends one.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f := newFixture(t)
	r, a, ctx := f.r, f.a, f.ctx
	for i := range 3 {
		if _, err := a.WaitInvocations(ctx, "none", []string{fmt.Sprintf("%032x", i)}, 0); err == nil {
			t.Fatal("a wait under an undefined task was answered")
		}
		if _, err := a.CallTool(ctx, &wire.CallTool{Task: "none", Name: "t_x"}, seam.CallOptions{}); err == nil {
			t.Fatal("a call under an undefined task was answered")
		}
	}
	for i := range 6 {
		select {
		case <-r.ended:
		case <-time.After(guard):
			t.Fatalf("%d of 6 connections (3 waits, 3 calls) were closed by the client within %s", i, guard)
		}
	}
}
