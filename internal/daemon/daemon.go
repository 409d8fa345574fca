// Package daemon is rukhd: one process per user that holds the store open,
// keeps the current revision's projection warm, and serves the thin
// client over a Unix socket with the same core the CLI runs in-process.
// It never changes what a command does, only how fast it starts.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	_ "github.com/rukh-cli/rukh/internal/daemon/wire/wirecbor" // the members a command line's frames do not use
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"golang.org/x/time/rate"
)

// Server serves one data directory to its owner's clients.
type Server struct {
	Name      string // the CLI's name, e.g. "rukh"
	Paths     paths.Paths
	Build     string // this build's id
	Host      *local.Host
	Logger    *slog.Logger
	Activated bool // the listener came from systemd
	// Idle ends Serve after this long with no connection and nothing
	// running; 0 never.
	Idle time.Duration
	// Exe is the daemon's executable and its identity at start: when the
	// file changes (an upgrade), the daemon stops taking work, drains and
	// exits, so no client is served stale code.
	Exe   string
	exeID fileID
	// Run runs a forwarded command line (Options.Run).
	Run Runner

	started  time.Time
	conns    atomic.Int64
	inflight atomic.Int64
	active   sync.WaitGroup // connections being served
	stopping atomic.Bool
	initOnce sync.Once
	stop     chan struct{}                      // closed to stop accepting
	cancel   atomic.Pointer[context.CancelFunc] // stops running work
	stopOnce sync.Once
	activity chan struct{} // a connection ended (for idleWatch)
	connDone chan struct{} // a connection ended (for handOver)
	store    *store.Held   // nil in tests that give Host their own store

	budget    *wire.Budget   // frame bytes all connections may hold while reading
	maxConns  int            // connections served at once; more are refused
	maxManage int            // management requests served at once, beside maxConns
	waiting   *waitingPool   // connections whose request is not read yet
	working   atomic.Int64   // connections served, but for management
	managing  atomic.Int64   // connections served a Status or Stop
	warn      rate.Sometimes // logs about peers, at a bounded rate
	keepIdle  time.Duration  // how long a kept connection waits for a read (default keepIdle)
	kept      func()         // tests: called once a connection waits for its next read
	unlogged  atomic.Int64   // warnings the rate left out, said with the next
	procs     *processors    // one while requests come alone
	busy      atomic.Int64   // requests admitted and not yet answered, but for management
}

// Limits of the daemon's own resources (item 10 and 11 of the hardening
// issue): a connection costs a descriptor (and up to wire.MaxFiles more
// while it passes files), so the connections served at once stay below
// the descriptor limit; the frames being read share one budget.
const (
	frameBudget = 64 << 20 // bytes
	// frameReserve is the part of frameBudget for small frames (a hello,
	// a status request; wire.SmallFrame): every waiting connection's
	// first chunk fits in it.
	frameReserve = maxWaiting * wire.SmallFrame / 2
	maxConns     = 1024
	// acceptBackoff bounds the pause after an accept that failed for want
	// of descriptors or memory; the daemon then tries again.
	acceptBackoff = time.Second
)

// connLimit is how many connections the daemon serves at once: maxConns,
// or less when the descriptor limit is low (each may hold a descriptor,
// and up to wire.MaxFiles more while it passes files, plus the command's
// pipes).
func connLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 64
	}
	n := (int(min(rl.Cur, 1<<20)) - 64) / (wire.MaxFiles + 4)
	return max(16, min(maxConns, n))
}

// warnf logs a warning about a peer, at most a few a minute; the count of
// those left out comes with the next one logged.
func (s *Server) warnf(msg string, args ...any) {
	logged := false
	s.warn.Do(func() {
		logged = true
		if n := s.unlogged.Swap(0); n > 0 {
			args = append(args, "not logged since the last", n)
		}
		s.Logger.Warn(msg, args...)
	})
	if !logged {
		s.unlogged.Add(1)
	}
}

// Close gives back the call reserves the daemon kept between calls and
// closes the store the Server holds, if it still does.
func (s *Server) Close() error {
	s.Host.Core().ReleaseReserves()
	if s.store == nil {
		return nil
	}
	return s.store.Release()
}

// fileID identifies a file's content well enough to notice a replacement.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

func statID(path string) (fileID, bool) {
	var st syscall.Stat_t
	if path == "" || syscall.Stat(path, &st) != nil {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino, st.Size, st.Mtim.Nano()}, true
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.stop = make(chan struct{})
		s.activity = make(chan struct{}, 1)
		s.connDone = make(chan struct{}, 1)
		s.budget = wire.NewBudget(frameBudget, frameReserve)
		s.maxConns = connLimit()
		// Under a low descriptor limit the other pools shrink with the
		// connection limit, so that what it holds stays within it.
		s.maxManage = min(manageReserve, max(4, s.maxConns/4))
		s.waiting = newWaitingPool(min(maxWaiting, s.maxConns))
		s.warn = rate.Sometimes{First: 10, Interval: time.Minute}
		if s.keepIdle == 0 {
			s.keepIdle = keepIdle
		}
		if s.procs == nil {
			s.procs = &processors{fixed: true}
		}
	})
}

// Stop asks Serve to stop: it takes no new work, stops what runs (each
// invocation is recorded as cancelled/interrupted) and returns.
func (s *Server) Stop() {
	s.drain()
	s.Host.StopDetached()
	if c := s.cancel.Load(); c != nil {
		(*c)()
	}
}

// drain makes Serve take no new work and return once what runs has
// finished.
func (s *Server) drain() {
	s.init()
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		close(s.stop)
		s.waiting.closeKept()
	})
}

// Serve accepts connections on ln until ctx ends, Stop is called, the
// daemon has been idle for s.Idle, or its executable changed; then it
// stops accepting, lets every running operation finish (an invocation
// whose client is still there is not cut short; ctx's end cancels them
// all) and returns.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	s.init()
	s.started = time.Now()
	s.exeID, _ = statID(s.Exe)
	if s.Logger == nil {
		s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if lost, err := s.Host.Core().ResolveLost(); err != nil {
		return fmt.Errorf("resolving invocations of lost hosts: %w", err)
	} else if len(lost) > 0 {
		s.Logger.Warn("recorded invocations of a lost host as execution_failed/host_lost", "ids", strings.Join(lost, ","))
	}
	// Runs detached from their calls end before the store closes: on
	// their own when the daemon drains, stopped (and recorded
	// cancelled/interrupted) when it stops.
	defer s.Host.WaitDetached()
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	s.cancel.Store(&cancelWork)
	if s.stopping.Load() {
		cancelWork() // Stop came before Serve
	}
	stopCtx := context.AfterFunc(ctx, s.Stop)
	defer stopCtx()

	go func() {
		<-s.stop
		s.handOver(ln)
	}()
	go s.idleWatch()
	var pause time.Duration
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if s.stopping.Load() {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if exhausted(err) {
				// Out of descriptors or memory: what runs keeps running;
				// try again after a pause that grows while it lasts.
				pause = min(max(2*pause, 5*time.Millisecond), acceptBackoff)
				s.warnf("cannot accept a connection; retrying", "error", err, "pause", pause)
				select {
				case <-time.After(pause):
				case <-s.stop:
				}
				continue
			}
			s.Stop()
			s.active.Wait()
			return err
		}
		pause = 0
		// Connections evicted from the waiting pool have closed their
		// descriptor already; only their goroutine is left to end.
		if int(s.conns.Load())-s.waiting.evictedOpen() >= s.maxConns+s.waiting.max+s.maxManage {
			s.warnf("refused a connection: holding as many as it may", "limit", s.maxConns)
			go refuseBusy(c, s.Name, s.maxConns)
			continue
		}
		s.conns.Add(1)
		s.active.Add(1)
		go func() {
			defer func() {
				// The slot is free before the peer sees the connection
				// end: a client that saw it end may connect again at once.
				s.conns.Add(-1)
				c.Close()
				s.active.Done()
				select {
				case s.activity <- struct{}{}:
				default:
				}
				select {
				case s.connDone <- struct{}{}:
				default:
				}
			}()
			s.serveConn(work, c)
		}()
	}
	s.active.Wait()
	return nil
}

// handOver is the drain, once the daemon takes no new work: it releases
// the store at once, so that the calls it still runs and those of the
// next host (the new build's, in-process until the new daemon starts)
// share its lock one transaction at a time; it keeps answering the
// socket, each new connection with shutting_down or daemon_stale (which
// sends the work in-process), so that connections queued on a socket
// systemd holds are not left unanswered; and once no connection and no
// detached run is left it closes the listener, which ends Serve.
func (s *Server) handOver(ln *net.UnixListener) {
	if s.store != nil {
		if err := s.store.Release(); err != nil {
			s.Logger.Warn("closing the store for the drain", "error", err)
		}
	}
	for s.conns.Load() > 0 {
		<-s.connDone
	}
	s.Host.WaitDetached()
	ln.Close()
}

// idleWatch stops the daemon once nothing has happened for s.Idle.
func (s *Server) idleWatch() {
	if s.Idle <= 0 {
		return
	}
	t := time.NewTimer(s.Idle)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.activity:
			t.Reset(s.Idle)
		case <-t.C:
			if s.conns.Load() == 0 && s.inflight.Load() == 0 && s.Host.DetachedRunning() == 0 {
				s.Logger.Info("idle; exiting", "after", s.Idle)
				s.Stop()
				return
			}
			t.Reset(s.Idle)
		}
	}
}

// stale reports whether the daemon's executable changed since it started.
func (s *Server) stale() bool {
	if s.Exe == "" {
		return false
	}
	id, ok := statID(s.Exe)
	return !ok || id != s.exeID
}

// exhausted reports whether an accept failed for want of descriptors or
// memory, which passes.
func exhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.ECONNABORTED)
}

// refuseBusy answers a connection past the limit with shutting_down's
// sibling, busy: the client says so and exits 75.
func refuseBusy(uc *net.UnixConn, name string, limit int) {
	c := wire.NewConn(uc)
	c.WriteTimeout = time.Second
	defer c.Close()
	c.Send(&wire.Msg{Error: wire.Errorf(wire.CodeBusy, "%sd serves %d connections at once, its limit; retry when fewer run", name, limit)})
}

// serveManage serves, after a refused hello, one Status or Stop request
// if that is what follows (thin.Dialer.Manage): `daemon status`, `stop`
// and `restart` must reach a daemon of another build, and one that
// drains.
func (s *Server) serveManage(ctx context.Context, c *wire.Conn, uc *net.UnixConn, w *waiter, pr *peer) {
	uc.SetReadDeadline(time.Now().Add(helloWait))
	req, files, err := c.Receive()
	uc.SetReadDeadline(time.Time{})
	closeAll(files)
	if err == nil && management(req) && s.admit(c, w, req) {
		defer s.release(req)
		s.serveRequest(ctx, c, req, nil, pr)
	}
}

// admit ends w's wait once its request req is read, and takes a slot for
// it: management in its reserve, the rest in the connection limit. It
// reports false, having answered busy where it can, when req is not to
// be served.
func (s *Server) admit(c *wire.Conn, w *waiter, req *wire.Msg) bool {
	if !s.waiting.leave(w) {
		return false // evicted: its connection is closed
	}
	n, limit, pool := &s.working, int64(s.maxConns), "connections"
	if management(req) {
		n, limit, pool = &s.managing, int64(s.maxManage), "management requests"
	}
	if n.Add(1) > limit {
		n.Add(-1)
		s.warnf("refused a request: serving as many as it may", "pool", pool, "limit", limit)
		c.Send(&wire.Msg{Error: wire.Errorf(wire.CodeBusy, "%sd serves %d %s at once, its limit; retry when fewer run", s.Name, limit, pool)})
		return false
	}
	if n == &s.working {
		// What runs beside it: the requests not yet answered
		// (serveRequest counts one out just before its answer, so that a
		// client quick to send its next request does not find its last
		// one still counted) and the detached runs.
		s.procs.admitted(int(s.busy.Add(1)) + s.Host.DetachedRunning())
	}
	return true
}

// management reports whether req is a management request (Status,
// Stop), served in a reserve of its own and not counted as work.
func management(req *wire.Msg) bool { return req.Status != nil || req.Stop != nil }

// release frees the slot admit took for req.
func (s *Server) release(req *wire.Msg) {
	if management(req) {
		s.managing.Add(-1)
	} else {
		s.working.Add(-1)
	}
}

// serveConn serves one connection: peer check, hello, one operation.
func (s *Server) serveConn(ctx context.Context, uc *net.UnixConn) {
	c := wire.NewConn(uc) // closed by Serve, once the slot is free
	c.WriteTimeout = writeWait
	c.Budget = s.budget
	uid, pid, err := wire.PeerCred(uc)
	w, _ := s.waiting.enter(uc, pid)
	defer s.waiting.leave(w)
	if err != nil || uid != os.Getuid() {
		s.warnf("refused a connection from another user", "uid", uid, "error", err)
		refusePeer(uc, c, wire.Errorf(wire.CodeBadRequest, "this daemon serves uid %d only", os.Getuid()))
		return
	}
	pr, err := takePeer(uc, pid)
	if errors.Is(err, errPeerGone) {
		// Nothing to tell apart: the peer exited before it could be
		// named, and nobody reads the answer.
		s.warnf("refused a connection whose process exited before it could be checked", "pid", pid, "error", err)
		return
	} else if err != nil {
		s.warnf("refused a connection whose process cannot be named by a pidfd", "pid", pid, "error", err)
		refusePeer(uc, c, wire.Errorf(wire.CodeBadRequest, "%sd cannot name the process that connected: %v", s.Name, err))
		return
	}
	defer pr.close()
	if same := sameUserNamespace(pr.pid); !pr.alive() {
		s.warnf("refused a connection whose process exited before it could be checked", "pid", pid)
		return
	} else if !same {
		// A process in another user namespace that maps the user to
		// itself (a container, another tool's sandbox) has a uid that
		// looks like the owner's, but it must never reach the daemon,
		// which would run anything for it. (A strict command can create
		// no socket at all.)
		s.warnf("refused a connection from another user namespace (a confined command?)", "pid", pid)
		refusePeer(uc, c, wire.Errorf(wire.CodeBadRequest, "this daemon serves its own user namespace only"))
		return
	}
	uc.SetReadDeadline(time.Now().Add(helloWait))
	m, files, err := c.Receive()
	uc.SetReadDeadline(time.Time{})
	closeAll(files)
	if err != nil || m.Hello == nil {
		s.refuse(c, err, "the first frame must be hello")
		return
	}
	switch {
	case m.Hello.Protocol != wire.ProtocolVersion:
		c.Send(&wire.Msg{Error: wire.Errorf(wire.CodeProtocolMismatch,
			"%sd speaks protocol %d, this client %d; use matching binaries", s.Name, wire.ProtocolVersion, m.Hello.Protocol)})
		return
	}
	// A daemon upgraded on disk says so first, to a client of any build;
	// one that is only stopping, after telling another build apart.
	refusal := s.staleRefusal()
	if refusal == nil && m.Hello.Build != s.Build {
		refusal = wire.Errorf(wire.CodeBuildMismatch,
			"%sd runs build %s but this %s is build %s; run `%s daemon restart` to serve this build, or use the matching binary",
			s.Name, s.Build, s.Name, m.Hello.Build, s.Name)
	}
	if refusal == nil {
		refusal = s.stoppingRefusal()
	}
	if refusal != nil {
		c.Send(&wire.Msg{Error: refusal})
		s.serveManage(ctx, c, uc, w, pr)
		return
	}
	if err := c.Send(&wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: s.Build, Name: s.Name, PID: os.Getpid()}}); err != nil {
		return
	}
	uc.SetReadDeadline(time.Now().Add(helloWait)) // the request follows the hello at once
	req, files, err := c.Receive()
	uc.SetReadDeadline(time.Time{})
	if err != nil {
		closeAll(files)
		s.refuse(c, err, "")
		return
	}
	if !s.admit(c, w, req) {
		closeAll(files)
		return
	}
	s.serveRequest(ctx, c, req, files, pr)
	s.release(req)
	if req.Reads() {
		s.serveReads(ctx, c, uc, pr)
	}
}

// staleRefusal is the refusal of new work by a daemon whose executable
// changed on disk, which starts its drain; nil while it has not.
func (s *Server) staleRefusal() *wire.Error {
	if !s.stale() {
		return nil
	}
	if !s.stopping.Load() {
		s.Logger.Warn("the executable changed; draining and exiting", "exe", s.Exe)
		s.drain()
	}
	return wire.Errorf(wire.CodeDaemonStale, "%sd was upgraded on disk; it is finishing its work and exiting", s.Name)
}

// stoppingRefusal is the refusal of new work by a daemon that stops; nil
// while it does not.
func (s *Server) stoppingRefusal() *wire.Error {
	if !s.stopping.Load() {
		return nil
	}
	return wire.Errorf(wire.CodeShuttingDown, "%sd is stopping", s.Name)
}

// connEnded reports whether a read failed because the connection ended
// (the client closed it, keepIdle passed, a drain closed it), not for a
// bad frame.
func connEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)
}

// keepIdle bounds how long a connection whose last request was a read
// waits for the next one.
const keepIdle = 30 * time.Second

// serveReads serves the reads (wire.Msg.Reads) that follow a read on its
// connection, one at a time, until the client closes it, keepIdle passes
// with none, or the daemon drains. Between two reads the connection waits
// as a new one does: it holds no slot, a flood may evict it, and a drain
// closes it (waitingPool.closeKept), so that a client's kept connection
// never holds up the daemon's exit. A read that comes once the daemon
// drains is refused as a new connection's hello would be: the client then
// reads in-process. A late cancel of the read before is ignored.
func (s *Server) serveReads(ctx context.Context, c *wire.Conn, uc *net.UnixConn, pr *peer) {
	idleUntil := time.Now().Add(s.keepIdle) // a late cancel does not renew it
	for {
		w := s.waiting.keep(uc, pr.pid)
		if s.kept != nil {
			s.kept()
		}
		if s.stopping.Load() { // a drain that began before keep could close it
			s.waiting.leave(w)
			return
		}
		uc.SetReadDeadline(idleUntil)
		req, files, err := c.Receive()
		uc.SetReadDeadline(time.Time{})
		closeAll(files)
		if !s.waiting.leave(w) {
			return // evicted, or closed by a drain
		}
		switch {
		case err == nil && req.Cancel != nil:
			continue
		case err != nil && !connEnded(err):
			s.refuse(c, err, "")
			return
		case err != nil:
			return
		}
		e := s.staleRefusal()
		if e == nil {
			e = s.stoppingRefusal()
		}
		if e != nil {
			c.Send(&wire.Msg{Error: e})
			return
		}
		if !req.Reads() {
			s.refuse(c, nil, "only a read (bindTask, listTools, getHttp) may follow a request on its connection; dial again")
			return
		}
		if !s.admit(c, w, req) {
			return
		}
		s.serveRequest(ctx, c, req, nil, pr)
		s.release(req)
		idleUntil = time.Now().Add(s.keepIdle)
	}
}

// refusePeer answers a peer it will not serve with e, after reading (and
// ignoring) its hello, so that the peer reads the refusal rather than a
// broken pipe.
func refusePeer(uc *net.UnixConn, c *wire.Conn, e *wire.Error) {
	uc.SetReadDeadline(time.Now().Add(time.Second))
	_, files, _ := c.Receive()
	closeAll(files)
	c.Send(&wire.Msg{Error: e})
}

// helloWait bounds how long a client may take to say hello and send its
// request; writeWait, how long a client may leave a frame unread.
const (
	helloWait = 5 * time.Second
	writeWait = 5 * time.Second
)

func (s *Server) refuse(c *wire.Conn, err error, msg string) {
	if errors.Is(err, io.EOF) {
		return
	}
	if err != nil {
		msg = err.Error()
	}
	s.warnf("bad frame; closing the connection", "error", msg)
	c.Send(&wire.Msg{Error: wire.Errorf(wire.CodeBadRequest, "%s", msg)})
}

// call is one running operation: its context ends when the client sends
// Cancel (with the reason) or goes away (interrupted).
type call struct {
	ctx    context.Context
	cancel context.CancelFunc
	reason atomic.Pointer[string]
}

// watch reads what the client sends while an operation runs: Cancel, and
// for an Exec whose command the client starts (sp, else nil) its Spawned
// and Exited. The connection's end cancels the operation.
func (s *Server) watch(ctx context.Context, c *wire.Conn, sp *clientSpawner) *call {
	cl := &call{}
	cl.ctx, cl.cancel = context.WithCancel(ctx)
	go func() {
		if sp != nil {
			defer close(sp.gone)
		}
		for {
			m, files, err := c.Receive()
			if err == nil && sp != nil && (m.Spawned != nil || m.Exited != nil) {
				sp.route(m, files)
				continue
			}
			closeAll(files)
			if sp != nil && errors.Is(err, wire.ErrFrame) {
				// Not its end: a frame that breaks the protocol.
				sp.faultf("the client sent a frame that cannot be read: %v", err)
			}
			if err != nil {
				r := "interrupted"
				cl.reason.CompareAndSwap(nil, &r)
				cl.cancel()
				return
			}
			if m.Cancel != nil {
				r := m.Cancel.Reason
				if r != "client_cancelled" {
					r = "interrupted"
				}
				cl.reason.CompareAndSwap(nil, &r)
				cl.cancel()
			}
		}
	}()
	return cl
}

func (cl *call) why() string {
	if r := cl.reason.Load(); r != nil {
		return *r
	}
	return "interrupted"
}

// serveRequest serves one request of the client process pr.
func (s *Server) serveRequest(ctx context.Context, c *wire.Conn, req *wire.Msg, files []*os.File, pr *peer) {
	// A request admitted to the connection pool is busy until its answer
	// is about to be sent (admit, processors).
	busy := !management(req)
	done := func() {
		if busy {
			busy = false
			s.busy.Add(-1)
		}
	}
	defer done()
	reply := func(m *wire.Msg) { c.Send(m) } // an event: Started, Progress, Diag
	answer := func(m *wire.Msg) {            // the request's last message
		done()
		c.Send(m)
	}
	fail := func(err error) {
		var we *wire.Error
		if !errors.As(err, &we) {
			we = wire.Errorf(wire.CodeInternal, "%v", err)
		}
		answer(&wire.Msg{Error: we})
	}
	switch {
	case req.Exec != nil:
		defer closeAll(files)
		if len(files) != wire.ExecFiles {
			fail(wire.Errorf(wire.CodeBadRequest, "exec needs stdin, stdout and stderr"))
			return
		}
		if !pr.alive() {
			// The process that connected is gone and another holds the
			// connection (a child connected and exited): who asks cannot
			// be told, so nothing is served — `approve` least of all.
			s.warnf("refused a command line: the process that connected has exited", "pid", pr.pid)
			fmt.Fprintf(files[2], "%s: the process that connected to %sd (pid %d) has exited; a command line is served only to the live process that connected\n", s.Name, s.Name, pr.pid)
			answer(&wire.Msg{Exit: &wire.Exit{Status: exitcode.Denied}})
			return
		}
		sp := newClientSpawner(c, pr, s.warnf)
		defer sp.close()
		cl := s.watch(ctx, c, sp)
		defer cl.cancel()
		status := s.exec(cl.ctx, req.Exec, files, sp, pr, func(id string) { reply(&wire.Msg{Started: &wire.Started{InvocationID: id}}) })
		answer(&wire.Msg{Exit: &wire.Exit{Status: status}})
	case req.GetHTTP != nil:
		h, err := s.Host.HTTPSection(ctx)
		if err != nil {
			fail(err)
			return
		}
		answer(&wire.Msg{HTTP: h})
	case req.BindTask != nil:
		task, err := s.Host.BindTask(ctx, req.BindTask.Task)
		if err != nil {
			fail(err)
			return
		}
		answer(&wire.Msg{Bound: &wire.Bound{Task: task}})
	case req.ListTools != nil:
		page, err := s.Host.ListTools(ctx, req.ListTools)
		if err != nil {
			fail(err)
			return
		}
		answer(&wire.Msg{ToolPage: page})
	case req.CallTool != nil:
		cl := s.watch(ctx, c, nil)
		defer cl.cancel()
		opts := seam.CallOptions{
			CancelReason: cl.why,
			OnStart:      func(id string) { reply(&wire.Msg{Started: &wire.Started{InvocationID: id}}) },
		}
		if req.CallTool.Progress {
			opts.OnProgress = func(p *wire.Progress) { reply(&wire.Msg{Progress: p}) }
		}
		if req.CallTool.Diag {
			opts.Diagnostics = diagWriter(reply)
		}
		s.inflight.Add(1)
		res, err := s.Host.CallTool(cl.ctx, req.CallTool, opts)
		s.inflight.Add(-1)
		if err != nil {
			fail(err)
			return
		}
		answer(&wire.Msg{CallResult: res})
	case req.WaitInvocations != nil:
		// Observing only: the client going away ends the wait, never a run.
		cl := s.watch(ctx, c, nil)
		defer cl.cancel()
		w := req.WaitInvocations
		if w.TimeoutMs < 0 || w.TimeoutMs > wire.MaxWaitTimeoutMs {
			fail(wire.Errorf(wire.CodeInvalidArgument, "the timeout %dms is out of bounds (0 to %dms)", w.TimeoutMs, wire.MaxWaitTimeoutMs))
			return
		}
		res, err := s.Host.WaitInvocations(cl.ctx, w.Task, w.IDs, time.Duration(w.TimeoutMs)*time.Millisecond)
		if err != nil {
			fail(err)
			return
		}
		answer(&wire.Msg{WaitResult: res})
	case req.Settle != nil:
		if err := s.Host.Core().SettleNow(); err != nil {
			fail(err)
			return
		}
		answer(&wire.Msg{Settled: &wire.Settled{}})
	case req.Status != nil:
		answer(&wire.Msg{Daemon: s.status()})
	case req.Stop != nil:
		answer(&wire.Msg{Stopping: &wire.Stopping{}})
		s.Stop()
	default:
		fail(wire.Errorf(wire.CodeBadRequest, "not a request"))
	}
}

// diagWriter sends each diagnostics line as a Diag event.
type diagWriter func(*wire.Msg)

func (w diagWriter) Write(p []byte) (int, error) {
	w(&wire.Msg{Diag: &wire.Diag{Line: string(p)}})
	return len(p), nil
}

// exec runs one command line of the CLI on the daemon's core, with the
// client's streams, directory and environment, and returns its status.
func (s *Server) exec(ctx context.Context, e *wire.Exec, files []*os.File, sp invoke.Spawner, caller *peer, onStart func(string)) int {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	// The command line must mean the same files here as in the client: a
	// daemon started with another environment (RUKH_HOME, XDG_*) that
	// listens on this client's socket would run it on another store.
	if p, err := paths.Resolve(s.Name, lookupEnv(e.Env)); err != nil || !sameDirs(p, s.Paths) {
		fmt.Fprintf(files[2], "%s: %sd (pid %d) serves %s, but this %s's environment names %s; start %sd with the same %s or XDG_* variables, or run `%s daemon stop`\n",
			s.Name, s.Name, os.Getpid(), dirs(s.Paths, nil), s.Name, dirs(p, err), s.Name, paths.HomeEnv(s.Name), s.Name)
		return exitcode.TempFail
	}
	if s.Run == nil {
		fmt.Fprintf(files[2], "%s: %sd runs no command lines (it was started without a runner)\n", s.Name, s.Name)
		return exitcode.Software
	}
	out, errOut := &pipeWatch{w: files[1]}, &pipeWatch{w: files[2]}
	status := s.Run(ctx, &CommandLine{
		Args: e.Args, Dir: e.Dir, Env: e.Env,
		In: files[0], Out: out, Err: errOut,
		Host:         s.Host,
		Paths:        s.Paths,
		OnInvocation: onStart,
		Spawner:      sp,
		CallerPID:    caller.pid,
		CallerAlive:  caller.alive,
		HostNote:     fmt.Sprintf("daemon: %sd pid %d at %s", s.Name, os.Getpid(), s.Paths.Socket(s.Name)),
	})
	if out.broken.Load() || errOut.broken.Load() {
		// In-process, the write would have killed the CLI with SIGPIPE;
		// the client ends so (thin.Forward).
		return exitcode.BrokenPipe
	}
	return status
}

// pipeWatch is a client's stream as the daemon writes to it: it notes a
// write that failed because its reader went away (EPIPE), which the
// daemon, unlike the CLI in-process, survives. A command is given the
// file itself (File), as in-process: a terminal stays its terminal, and
// its output is not copied through the daemon.
type pipeWatch struct {
	w      *os.File
	broken atomic.Bool
}

func (p *pipeWatch) File() *os.File { return p.w }

func (p *pipeWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.broken.Store(true)
	}
	return n, err
}

// sameDirs reports whether a and b name the same directories, however
// spelled (a symlinked home).
func sameDirs(a, b paths.Paths) bool {
	return sameDir(a.Data, b.Data) && sameDir(a.Config, b.Config) && sameDir(a.Runtime, b.Runtime)
}

// sameDir reports whether x and y are the same directory, or would be
// once created.
func sameDir(x, y string) bool {
	if x == y {
		return true
	}
	fx, errx := os.Stat(x)
	fy, erry := os.Stat(y)
	switch {
	case errx == nil && erry == nil:
		return os.SameFile(fx, fy)
	case errors.Is(errx, fs.ErrNotExist) && errors.Is(erry, fs.ErrNotExist) && filepath.Base(x) == filepath.Base(y):
		return filepath.Dir(x) != x && sameDir(filepath.Dir(x), filepath.Dir(y))
	}
	return false
}

// dirs describes p for a message, or the error that p could not be
// resolved.
func dirs(p paths.Paths, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("data %s, config %s, runtime %s", p.Data, p.Config, p.Runtime)
}

// lookupEnv looks a variable up in env ("KEY=value" pairs; the last wins).
var lookupEnv = envpolicy.Lookup

func (s *Server) status() *wire.DaemonStatus {
	rev, err := s.Host.Core().ActiveRevision()
	st := &wire.DaemonStatus{
		PID: os.Getpid(), Build: s.Build, StartedUnix: s.started.Unix(), Socket: s.Paths.Socket(s.Name),
		Activated: s.Activated, Revision: rev, Connections: int(s.conns.Load()) - 1, InFlight: int(s.inflight.Load()) + s.Host.DetachedRunning(),
		RSSBytes: rss(), Draining: s.stopping.Load(),
	}
	if err != nil {
		st.StoreError = err.Error()
	}
	if since, err := s.Host.Core().StoreWriteFailure(); err != nil {
		st.StoreWriteError, st.StoreWriteFailingUnix = err.Error(), since.Unix()
	}
	st.PendingOutcomes = invoke.PendingOutcomes(s.Paths.Data)
	return st
}

// rss reads the daemon's resident set size.
func rss() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	fmt.Sscan(string(data), &size, &res)
	return res * int64(os.Getpagesize())
}

// sameUserNamespace reports whether process pid is in the daemon's user
// namespace. A peer whose namespace cannot be read is not. (The caller
// checks after that the pid is still its peer's.)
func sameUserNamespace(pid int) bool {
	own, err1 := os.Readlink("/proc/self/ns/user")
	peer, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	return err1 == nil && err2 == nil && own == peer
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
