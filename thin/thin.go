// Package thin is the client side of rukhd: it dials the daemon's socket,
// checks who answers, and carries one operation — a whole command line
// with the caller's terminal, or one MCP list or call — over the wire
// protocol. It imports nothing of the core, so it cannot run anything
// itself.
package thin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// HelloTimeout bounds the dial and the hello exchange: a daemon that does
// not answer within it is hung, and the client says so instead of
// waiting.
const HelloTimeout = 3 * time.Second

// ErrNoDaemon means no daemon listens on the socket (it does not exist,
// or nothing accepts on it): the caller runs in-process instead.
var ErrNoDaemon = errors.New("no daemon answers")

// Error is a failure to reach or keep the daemon, with what to do.
type Error struct {
	Name   string // the CLI's name, e.g. "rukh": its daemon is NAMEd
	Socket string
	Op     string // what failed: "dial", "hello", "call"
	Err    error
	// InvocationID is the invocation that was running when the daemon
	// went away, if one had started.
	InvocationID string
}

func (e *Error) Error() string {
	daemon := "the daemon"
	if e.Name != "" {
		daemon = e.Name + "d"
	}
	msg := fmt.Sprintf("%s at %s: %s: %v", daemon, e.Socket, e.Op, e.Err)
	if e.InvocationID != "" {
		msg += fmt.Sprintf(" (invocation %s was running; its outcome is recorded when the daemon restarts)", e.InvocationID)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Dialer reaches the daemon of one CLI.
type Dialer struct {
	Socket string // the socket's path
	Name   string // the CLI's name
	Build  string // this binary's build id
}

// Session is one connection to the daemon after a successful hello.
type Session struct {
	c      *wire.Conn
	socket string
	name   string     // the CLI's
	Daemon wire.Hello // what the daemon said of itself
	// refused is a daemon's build_mismatch, for a session that may still
	// send Status or Stop (Manage).
	refused *wire.Error
}

// Connect is the one daemon-or-local policy of every client — the CLI's
// Forward and `rukh mcp`'s choice per operation (client.Auto): it dials
// the daemon, and a nil Session with a nil error means "run in-process":
// no daemon answers, or the one that does is draining (its executable
// was upgraded, or it is stopping) and leaves the work to the in-process
// core, which waits for the store's lock like any other contender. A
// daemon that refuses this client otherwise (another build, busy) is the
// error: never a silent fallback that would wait for a lock that daemon
// holds.
func (d *Dialer) Connect(ctx context.Context) (*Session, error) {
	return d.connect(ctx, nil)
}

// Request is Connect with req sent right behind the hello (request): the
// request spends no round trip waiting for the daemon's hello. A nil
// Session with a nil error means "run in-process", and then nothing of
// req was acted on: the daemon reads a request only once it accepted the
// hello. A Session's request is in flight: Await its answer.
func (d *Dialer) Request(ctx context.Context, req *wire.Msg) (*Session, error) {
	return d.connect(ctx, &request{msg: req})
}

// connect is Connect, with first (when set) sent right behind the hello.
func (d *Dialer) connect(ctx context.Context, first *request) (*Session, error) {
	s, err := d.dial(ctx, false, first)
	var we *wire.Error
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, ErrNoDaemon):
		return nil, nil
	case errors.As(err, &we) && (we.Code == wire.CodeDaemonStale || we.Code == wire.CodeShuttingDown):
		return nil, nil
	}
	return nil, err
}

// Dial connects and exchanges hellos. It returns ErrNoDaemon when no
// daemon listens, *wire.Error when the daemon refuses this client (another
// build, a daemon that is stopping), and *Error when the socket is not the
// user's own or the daemon does not answer in time.
func (d *Dialer) Dial(ctx context.Context) (*Session, error) { return d.dial(ctx, false, nil) }

// Manage sends one Status or Stop request and returns the daemon's
// answer. Unlike Dial it also reaches a daemon of another build, which
// refuses work with build_mismatch but still answers these two on the
// same connection: `daemon status|stop|restart` must work across builds.
func (d *Dialer) Manage(ctx context.Context, req *wire.Msg) (*wire.Msg, error) {
	s, err := d.dial(ctx, true, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	m, err := s.Do(ctx, req, nil, nil, nil)
	if err != nil && s.refused != nil {
		return nil, s.refused // a daemon that answers nothing after refusing
	}
	return m, err
}

// request is a request sent right behind the hello, before the daemon's
// answer to it is read (Forward's Exec): the daemon reads a request only
// once it has accepted the hello, so a refusal still comes first and
// nothing of the request is acted on, and the request spends no round
// trip waiting. waiting runs once it is sent, while the daemon answers.
type request struct {
	msg     *wire.Msg
	files   []*os.File
	waiting func()
}

// dial is Dial; with otherBuild, a refusal that still takes a Status or
// Stop (manageable: another build, a drain) leaves the session open,
// with the refusal in s.refused. first, when set, is sent behind the
// hello (request), and the session's request is then in flight: await
// its answer.
func (d *Dialer) dial(ctx context.Context, otherBuild bool, first *request) (*Session, error) {
	fi, err := os.Lstat(d.Socket)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoDaemon
	}
	if err != nil {
		return nil, &Error{Name: d.Name, Socket: d.Socket, Op: "dial", Err: err}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, &Error{Name: d.Name, Socket: d.Socket, Op: "dial", Err: fmt.Errorf("the socket belongs to uid %d, not to you; remove it", st.Uid)}
	}
	ctx, cancel := context.WithTimeout(ctx, HelloTimeout)
	defer cancel()
	uc, err := wire.Dial(d.Socket)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, ErrNoDaemon
		}
		return nil, &Error{Name: d.Name, Socket: d.Socket, Op: "dial", Err: err}
	}
	if err := checkPeer(uc); err != nil {
		uc.Close()
		return nil, &Error{Name: d.Name, Socket: d.Socket, Op: "dial", Err: err}
	}
	s := &Session{c: wire.NewConn(uc), socket: d.Socket, name: d.Name}
	deadline, _ := ctx.Deadline()
	uc.SetDeadline(deadline)
	err = s.c.Send(&wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: d.Build, Name: d.Name, PID: os.Getpid()}})
	if err == nil && first != nil {
		err = s.c.Send(first.msg, first.files...)
		if err == nil && first.waiting != nil {
			first.waiting()
		}
	}
	var m *wire.Msg
	if err == nil {
		m, _, err = s.c.Receive()
	} else if rm, _, rerr := s.c.Receive(); rerr == nil && rm.Error != nil {
		// The daemon refused before it read the hello or the request
		// (it is busy, or of another build): its answer is what to
		// report, not the broken pipe.
		m, err = rm, nil
	}
	uc.SetDeadline(time.Time{})
	switch {
	case err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)):
		// The daemon went away as it accepted (killed, or exiting): none
		// answers, and the store's lock is free, or soon will be.
		s.c.Close()
		return nil, ErrNoDaemon
	case err != nil:
		s.c.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no answer within %s; the daemon is hung: see `%s daemon status`, or kill it", HelloTimeout, d.Name)
		}
		return nil, &Error{Name: d.Name, Socket: d.Socket, Op: "hello", Err: err}
	case m.Error != nil && otherBuild && manageable(m.Error.Code):
		s.refused = m.Error
		return s, nil
	case m.Error != nil:
		s.c.Close()
		return nil, m.Error
	case m.Hello == nil:
		s.c.Close()
		return nil, &Error{Name: d.Name, Socket: d.Socket, Op: "hello", Err: errors.New("the daemon answered with something else than hello")}
	}
	s.Daemon = *m.Hello
	return s, nil
}

// manageable reports whether a daemon that refused work with code still
// answers one Status or Stop on the same connection: one of another
// build, and one that drains.
func manageable(code string) bool {
	return code == wire.CodeBuildMismatch || code == wire.CodeShuttingDown || code == wire.CodeDaemonStale
}

// checkPeer refuses a daemon that runs as another user.
func checkPeer(c wire.Socket) error {
	uid, _, err := wire.PeerCred(c)
	if err != nil {
		return err
	}
	if uid != os.Getuid() {
		return fmt.Errorf("the daemon runs as uid %d, not as you", uid)
	}
	return nil
}

// Close ends the session.
func (s *Session) Close() error { return s.c.Close() }

// DoWithin is Do for a request that must be answered within d: a kept
// session's read (client.Auto), which skips the hello that would
// otherwise tell a hung daemon. No answer within d is an *Error that
// wraps os.ErrDeadlineExceeded, and the session is then of no further
// use.
func (s *Session) DoWithin(ctx context.Context, req *wire.Msg, d time.Duration) (*wire.Msg, error) {
	s.c.SetReadDeadline(time.Now().Add(d))
	defer s.c.SetReadDeadline(time.Time{})
	return s.Do(ctx, req, nil, nil, nil)
}

// Do sends one request (with files, for Exec) and returns the daemon's
// final message, passing events to onEvent as they come. When ctx ends
// it sends Cancel with cancelReason() once and keeps waiting for the
// final message: the daemon stops the work, finalizes it and answers. A
// daemon that goes away first is an *Error naming the invocation that was
// running.
func (s *Session) Do(ctx context.Context, req *wire.Msg, files []*os.File, onEvent func(*wire.Msg), cancelReason func() string) (*wire.Msg, error) {
	return s.do(ctx, req, files, onEvent, cancelReason, nil)
}

// do is Do; for an Exec, ch starts the command the daemon asks for
// (Spawn events).
func (s *Session) do(ctx context.Context, req *wire.Msg, files []*os.File, onEvent func(*wire.Msg), cancelReason func() string, ch *child) (*wire.Msg, error) {
	if err := s.c.Send(req, files...); err != nil {
		return nil, &Error{Name: s.name, Socket: s.socket, Op: "send", Err: err}
	}
	return s.await(ctx, onEvent, cancelReason, ch)
}

// Await is Do for the request Request sent behind the hello.
func (s *Session) Await(ctx context.Context, onEvent func(*wire.Msg), cancelReason func() string) (*wire.Msg, error) {
	return s.await(ctx, onEvent, cancelReason, nil)
}

// await is do once the request was sent: it reads events until the
// daemon's final message.
func (s *Session) await(ctx context.Context, onEvent func(*wire.Msg), cancelReason func() string, ch *child) (*wire.Msg, error) {
	var once sync.Once
	stop := context.AfterFunc(ctx, func() {
		once.Do(func() {
			reason := "interrupted"
			if cancelReason != nil {
				reason = cancelReason()
			}
			s.c.Send(&wire.Msg{Cancel: &wire.Cancel{Reason: reason}})
		})
	})
	defer stop()
	var invocation string
	for {
		m, got, err := s.c.Receive()
		if err != nil {
			return nil, &Error{Name: s.name, Socket: s.socket, Op: "call", Err: fmt.Errorf("the daemon went away: %w", err), InvocationID: invocation}
		}
		if m.Spawn != nil && ch != nil {
			ch.start(s.c, m.Spawn, got)
			continue
		}
		closeFiles(got)
		switch {
		case m.Started != nil, m.Progress != nil, m.Diag != nil:
			ch.catch() // a call that is not just starting its command
			if m.Started != nil {
				invocation = m.Started.InvocationID
			}
			if onEvent != nil {
				onEvent(m)
			}
		case m.Error != nil:
			return nil, m.Error
		default:
			return m, nil
		}
	}
}
