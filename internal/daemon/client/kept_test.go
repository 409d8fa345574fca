package client_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
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
// counts the connections it accepted. Once hung, it passes nothing on in
// either direction, as a daemon that stopped answering (SIGSTOP) would.
type relay struct {
	accepted atomic.Int64
	hung     atomic.Bool
}

func proxy(t *testing.T, path, to string) *relay {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &relay{}
	pass := func(dst, src net.Conn) {
		defer dst.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !r.hung.Load() {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
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
			t.Cleanup(func() { down.Close() })
			if r.hung.Load() {
				continue // accepted, never answered
			}
			up, err := net.Dial("unix", to)
			if err != nil {
				down.Close()
				continue
			}
			go pass(up, down)
			go pass(down, up)
		}
	}()
	return r
}

// A long-lived client sends its reads on one connection; when the daemon
// has closed it (here: it stopped, and another started), the next read
// goes on a new connection and is answered, not failed.
func TestReadsKeepOneConnection(t *testing.T) {
	dir := testhome.TempDir(t)
	p := paths.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}
	stop := serve(t, p)
	front := filepath.Join(dir, "front.sock")
	accepted := &proxy(t, front, p.Socket("rukh")).accepted
	a := client.NewAuto(thin.Dialer{Socket: front, Name: "rukh", Build: buildid.ID()}, local.New(p.Data))
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
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
	if we, ok := err.(*wire.Error); !ok || we.Code != wire.CodeTaskUndefined {
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
	dir := testhome.TempDir(t)
	p := paths.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}
	serve(t, p)
	front := filepath.Join(dir, "front.sock")
	r := proxy(t, front, p.Socket("rukh"))
	a := client.NewAuto(thin.Dialer{Socket: front, Name: "rukh", Build: buildid.ID()}, local.New(p.Data))
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if _, err := a.HTTPSection(ctx); err != nil {
		t.Fatal(err)
	}
	r.hung.Store(true)
	_, err := a.HTTPSection(ctx)
	var te *thin.Error
	if !errors.As(err, &te) || te.Op != "hello" || !strings.Contains(te.Error(), "the daemon is hung") {
		t.Fatalf("a read of a hung daemon: %v; want the hello's hung daemon", err)
	}
	if n := r.accepted.Load(); n != 2 {
		t.Fatalf("the reads took %d connections, not the kept one and a new one", n)
	}
}
