package client

import (
	"context"
	"errors"
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

// keptSessions are a client's idle daemon connections, newest last.
type keptSessions struct {
	mu   sync.Mutex
	idle []keptSession
}

type keptSession struct {
	s     *thin.Session
	since time.Time
}

// take returns the newest kept session used within keptFor, closing the
// older ones, or nil.
func (k *keptSessions) take() *thin.Session {
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.idle) > 0 {
		last := k.idle[len(k.idle)-1]
		k.idle = k.idle[:len(k.idle)-1]
		if time.Since(last.since) < keptFor {
			return last.s
		}
		last.s.Close()
	}
	return nil
}

// put keeps s for the next read, or closes it when maxKept are kept.
func (k *keptSessions) put(s *thin.Session) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.idle) >= maxKept {
		s.Close()
		return
	}
	k.idle = append(k.idle, keptSession{s, time.Now()})
}

// read runs the read req (wire.Msg.Reads) on the daemon, on a kept
// session when there is one, and keeps the session once answered; answer
// takes the daemon's final message apart. When no daemon answers, local
// runs it here, as do does.
func read[T any](ctx context.Context, a *Auto, req *wire.Msg, answer func(*wire.Msg) (T, error), local func() (T, error)) (T, error) {
	for s := a.kept.take(); s != nil; s = a.kept.take() {
		// A read is answered at once. One that is not within the bound of
		// a hello is asked again on a new connection, whose hello then
		// tells a hung daemon (thin.HelloTimeout).
		m, err := s.DoWithin(ctx, req, thin.HelloTimeout)
		if gone(err) {
			s.Close() // closed by the daemon meanwhile, or no answer: ask again
			continue
		}
		return answered(&a.kept, s, m, err, answer)
	}
	return do(ctx, a, req, func(s *thin.Session) (T, error) {
		m, err := s.Await(ctx, nil, nil)
		return answered(&a.kept, s, m, err, answer)
	}, local)
}

// answered takes apart the daemon's answer m (or err) to a read on s, and
// keeps s in k when the answer was what a read is answered with.
func answered[T any](k *keptSessions, s *thin.Session, m *wire.Msg, err error, answer func(*wire.Msg) (T, error)) (T, error) {
	var v T
	if err == nil {
		v, err = answer(m)
	}
	if err == nil {
		k.put(s)
	} else {
		s.Close()
	}
	return v, err
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
