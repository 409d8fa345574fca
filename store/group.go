package store

import (
	"errors"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// MaxGroup is the most write transactions of Batch that one commit holds.
const MaxGroup = 64

// group commits concurrent Batch calls of one Store together: the first
// caller to find no commit under way leads, taking every call queued
// behind it (at most MaxGroup) into one bbolt transaction, and hands the
// lead to the next queued call when that transaction has committed. A
// call that finds nothing under way commits alone at once, so a lone
// writer waits for nobody; a call that arrives while a commit is under
// way waits for that commit, as it would for bbolt's writer lock, and
// then shares the next one and its fsyncs with everything that queued
// meanwhile. Nothing is acknowledged before the commit that holds it is
// durable.
type group struct {
	mu      sync.Mutex
	waiting []*batchCall // queued, in arrival order; waiting[0] leads next
	leading bool         // a leader is running a transaction
	onQueue func()       // tests: a call queued behind a running leader
	onRun   func(n int)  // tests: a transaction of n calls is about to run
}

type batchCall struct {
	fn   func(*Tx) error
	lead chan struct{} // closed when this call is to lead
	done chan error    // its outcome, once its transaction has ended
}

// Batch runs fn in a read-write transaction that may hold other Batch
// calls made at the same time, and returns once that transaction has
// committed (nil) or fn's own error. Calls of one transaction run one
// after another and each sees the writes of those before it, so a check
// a call makes (a concurrency limit) holds over the whole group.
//
// fn may run more than once: when a call of the group fails, the
// transaction is rolled back, the failing call is run again alone to
// return its own error, and the rest are run again together. So fn must
// compute whatever it reports afresh on each run, as a function of the
// transaction alone. A failure of the commit itself (a full disk) is
// every call's.
func (s *Store) Batch(fn func(*Tx) error) error {
	g := &s.group
	c := &batchCall{fn: fn, lead: make(chan struct{}), done: make(chan error, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	if g.leading {
		hook := g.onQueue
		g.mu.Unlock()
		if hook != nil {
			hook()
		}
		select {
		case err := <-c.done:
			return err
		case <-c.lead:
		}
	} else {
		g.leading = true
		g.mu.Unlock()
	}
	g.mu.Lock()
	n := min(len(g.waiting), MaxGroup)
	calls := append([]*batchCall(nil), g.waiting[:n]...)
	g.waiting = append(g.waiting[:0], g.waiting[n:]...)
	g.mu.Unlock()
	s.runGroup(calls)
	g.mu.Lock()
	if len(g.waiting) > 0 {
		close(g.waiting[0].lead)
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return <-c.done
}

// errCallFailed rolls a group's transaction back when one of its calls
// failed.
var errCallFailed = errors.New("a call of the group failed")

// runGroup commits calls in one transaction and tells each its outcome.
func (s *Store) runGroup(calls []*batchCall) {
	if hook := s.group.onRun; hook != nil {
		hook(len(calls))
	}
	if len(calls) == 1 {
		c := calls[0]
		c.done <- s.Update(c.fn)
		return
	}
	failed := -1
	err := s.run(true, func(btx *bolt.Tx) error {
		tx := &Tx{tx: btx, s: s}
		for i, c := range calls {
			if err := c.fn(tx); err != nil {
				failed = i
				return errCallFailed
			}
		}
		return nil
	})
	switch {
	case err == nil:
		for _, c := range calls {
			c.done <- nil
		}
	case failed >= 0 && errors.Is(err, errCallFailed):
		s.runGroup(calls[failed : failed+1])
		s.runGroup(append(calls[:failed:failed], calls[failed+1:]...))
	default:
		for _, c := range calls {
			c.done <- err
		}
	}
}
