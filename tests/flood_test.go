package tests

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// Management answers under floods (issue 26, item 2): connections that
// hold a slot without using it — idle, silent after hello, or holding half
// of a 4 MiB frame — however many and however often renewed, never keep
// `daemon status` or a call from a client that says what it wants at once
// from being served. Before, 1,100 idle connections made every status and
// call answer `busy`, and 16 half-sent frames "the daemon holds as many
// frame bytes as it may".
func TestFlood(t *testing.T) {
	b := dtBuild(t)
	for _, tc := range []struct {
		name  string
		conns int
		hold  func(floodConn, string) error
	}{
		{"IdleConnections", 1100, func(floodConn, string) error { return nil }},
		{"SilentHellos", 1100, floodHello},
		{"HalfSentFrames", 16, func(c floodConn, build string) error {
			if err := floodHello(c, build); err != nil {
				return err
			}
			return floodHalfFrame(c.sock)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := dtNewHome(t, b)
			h.startDaemon(b.rukhd, b.build)
			f := startFlood(t, h, tc.conns, tc.hold)
			f.established(t)
			// What the owner and a client that sends whole frames see,
			// while the flood renews every connection the daemon closes.
			for range 3 {
				st := h.status()
				if st.Build != b.build {
					t.Fatalf("daemon status under the flood: build %q", st.Build)
				}
				if out := h.must("ppid"); strings.TrimSpace(out) == "" {
					t.Fatal("rukh ppid under the flood printed nothing")
				}
			}
			f.stop(t)
			t.Logf("%d flood connections made, %d closed by the daemon", f.made.Load(), f.closed.Load())
			h.stopByCLI()
		})
	}
}

// floodConn is one of a flood's connections.
type floodConn struct {
	*wire.Conn
	sock *os.File
}

func floodHello(c floodConn, build string) error {
	if err := c.Send(&wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: build, Name: "rukh"}}); err != nil {
		return err
	}
	m, _, err := c.Receive()
	if err == nil && m.Hello == nil {
		err = errors.New("no hello")
	}
	return err
}

// floodHalfFrame announces a frame of wire.MaxFrame bytes and sends half.
func floodHalfFrame(sock *os.File) error {
	half := make([]byte, 4+wire.MaxFrame/2)
	binary.BigEndian.PutUint32(half, wire.MaxFrame)
	_, err := sock.Write(half)
	return err
}

// A flood keeps n connections to h's daemon, each renewed when the daemon
// closes it.
type flood struct {
	done   chan struct{}
	wg     sync.WaitGroup
	first  sync.WaitGroup // each connection's first attempt ended
	made   atomic.Int64
	closed atomic.Int64
}

func startFlood(t *testing.T, h *dtHome, n int, hold func(floodConn, string) error) *flood {
	f := &flood{done: make(chan struct{})}
	f.wg.Add(n)
	f.first.Add(n)
	for range n {
		go func() {
			defer f.wg.Done()
			var once sync.Once
			defer once.Do(f.first.Done)
			for {
				f.connect(h, hold, func() { once.Do(f.first.Done) })
				select {
				case <-f.done:
					return
				default:
				}
			}
		}()
	}
	t.Cleanup(func() { f.stop(t) })
	return f
}

// connect makes one connection, holds it as hold says, calls held, and
// returns once the daemon has closed it or the flood stops.
func (f *flood) connect(h *dtHome, hold func(floodConn, string) error, held func()) {
	sock, err := wire.Dial(h.sock())
	if err != nil {
		// The listener's backlog is full: an attacker retries.
		select {
		case <-f.done:
		case <-time.After(10 * time.Millisecond):
		}
		return
	}
	f.made.Add(1)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-f.done:
			sock.Close()
		case <-stopped:
		}
	}()
	sock.SetDeadline(time.Now().Add(dtHangGuard))
	err = hold(floodConn{wire.NewConn(sock), sock}, h.b.build)
	held()
	if err == nil {
		var b [1]byte
		sock.Read(b[:]) // until the daemon closes it, or the flood stops
	}
	sock.Close()
	f.closed.Add(1)
}

// established waits until every connection has been held (or refused)
// once.
func (f *flood) established(t *testing.T) {
	t.Helper()
	ok := make(chan struct{})
	go func() { f.first.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(dtHangGuard):
		t.Fatalf("the flood's connections were not all tried within %s", dtHangGuard)
	}
}

func (f *flood) stop(t *testing.T) {
	select {
	case <-f.done:
		return
	default:
	}
	close(f.done)
	ok := make(chan struct{})
	go func() { f.wg.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(dtHangGuard):
		t.Errorf("the flood's connections did not end within %s of its stop", dtHangGuard)
	}
}
