package client

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/thin"
)

// A long-lived client keeps the daemon connections of its finished reads
// (wire.Msg.Reads: bindTask, listTools, getHttp) and sends its next read
// on one of them: a page of tools or the HTTP adapter's section then costs
// one round trip, not a dial, the daemon's peer checks and a hello too.
// The daemon closes a kept connection after 30 s without a read, when it
// drains, and when a flood needs the place; a read that finds its kept
// connection closed is sent again on a new one, which is harmless since
// a read changes nothing. Calls always dial: a call must never be sent
// twice.
const (
	// maxKept bounds the idle connections a client keeps: enough for the
	// reads an HTTP adapter's callers make at once, few against the
	// daemon's 512 waiting places.
	maxKept = 16
	// keptFor is how long a client uses a kept connection after its last
	// read: well within the daemon's 30 s, so that a read seldom meets a
	// connection the daemon is closing.
	keptFor = 10 * time.Second
)

// keptSessions are a client's idle daemon connections, oldest first.
type keptSessions struct {
	mu   sync.Mutex
	idle []keptSession
}

type keptSession struct {
	s     *thin.Session
	since time.Time
}

// take returns the newest kept session, or nil; it first closes those
// unused for keptFor.
func (k *keptSessions) take() *thin.Session {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expireLocked()
	if len(k.idle) == 0 {
		return nil
	}
	last := k.idle[len(k.idle)-1]
	k.idle[len(k.idle)-1] = keptSession{}
	k.idle = k.idle[:len(k.idle)-1]
	return last.s
}

// put keeps s for the next read, or closes it when maxKept are kept; it
// first closes those unused for keptFor.
func (k *keptSessions) put(s *thin.Session) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.expireLocked()
	if len(k.idle) >= maxKept {
		s.Close()
		return
	}
	k.idle = append(k.idle, keptSession{s, time.Now()})
}

// expireLocked closes the sessions unused for keptFor (the oldest come
// first).
func (k *keptSessions) expireLocked() {
	n := 0
	for n < len(k.idle) && time.Since(k.idle[n].since) >= keptFor {
		k.idle[n].s.Close()
		n++
	}
	k.idle = append(k.idle[:0], k.idle[n:]...)
}

// closeAll closes every kept session: their daemon does not answer.
func (k *keptSessions) closeAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ks := range k.idle {
		ks.s.Close()
	}
	k.idle = nil
}

// read runs the read req (wire.Msg.Reads) on the daemon, on a kept
// session when there is one, and keeps the session once answered; answer
// takes the daemon's final message apart. When no daemon answers, local
// runs it here, as do does.
func read[T any](ctx context.Context, a *Auto, req *wire.Msg, answer func(*wire.Msg) (T, error), local func() (T, error)) (T, error) {
	for s := a.kept.take(); s != nil; s = a.kept.take() {
		// A read is answered at once. One that is not within the bound of
		// a hello is asked again, once, on a new connection, whose hello
		// then tells a hung daemon (thin.HelloTimeout); the other kept
		// sessions are of the same daemon, and are dropped with it.
		m, err := s.DoWithin(ctx, req, thin.HelloTimeout)
		if err == nil {
			var v T
			if v, err = answer(m); err == nil {
				a.kept.put(s)
				return v, nil
			}
		}
		s.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			a.kept.closeAll()
			break
		}
		if !gone(err) {
			var zero T
			return zero, err
		}
		// Closed by the daemon meanwhile (its idle limit, a drain, a
		// restart): ask again.
	}
	return do(ctx, a, req, func(s *thin.Session) (T, error) {
		m, err := s.Await(ctx, nil, nil)
		if err != nil {
			var zero T
			return zero, err
		}
		return answer(m)
	}, local, &a.kept)
}

// gone reports whether a read on a kept session failed because the
// daemon no longer serves it: it closed the connection, or refused the
// read as it drains.
func gone(err error) bool {
	var te *thin.Error
	var we *wire.Error
	return errors.As(err, &te) ||
		errors.As(err, &we) && (we.Code == wire.CodeDaemonStale || we.Code == wire.CodeShuttingDown)
}
