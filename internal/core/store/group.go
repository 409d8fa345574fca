package store

import (
	"errors"
	"sync"
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
	lead chan struct{}    // closed when this call is to lead
	done chan batchResult // its outcome, once its transaction has ended
	// told is set, by the leader only, once done has its value.
	told bool
}

// batchResult is a call's outcome: its error, or the value its fn
// panicked with, which Batch raises again in the caller's goroutine.
type batchResult struct {
	err      error
	panicked any
}

func (c *batchCall) tell(r batchResult) {
	c.told = true
	c.done <- r
}

// Batch runs fn in a read-write transaction that may hold other Batch
// calls made at the same time, and returns once that transaction has
// committed (nil) or fn's own error. Calls of one transaction run one
// after another and each sees the writes of those before it, so a check
// a call makes (a concurrency limit) holds over the whole group.
//
// fn may run more than once: when a call of the group fails, the
// transaction is rolled back; the calls before it are run again together
// and committed, the failing call is run again alone, after them, to
// return its own error, and the calls after it are run again as a group
// of their own. So fn must compute whatever it reports afresh on each
// run, as a function of the transaction alone. A call whose fn panics is
// not run again: the panic is raised again in its own caller, and the
// others go on as after a failure. A failure of the commit itself (a full
// disk, damage bbolt met on the way) is every call's.
func (s *Store) Batch(fn func(*Tx) error) error {
	g := &s.group
	c := &batchCall{fn: fn, lead: make(chan struct{}), done: make(chan batchResult, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	if g.leading {
		hook := g.onQueue
		g.mu.Unlock()
		if hook != nil {
			hook()
		}
		select {
		case r := <-c.done:
			return r.get()
		case <-c.lead:
		}
	} else {
		g.leading = true
		g.mu.Unlock()
	}
	g.mu.Lock()
	n := min(len(g.waiting), MaxGroup)
	calls := append([]*batchCall(nil), g.waiting[:n]...)
	rest := copy(g.waiting, g.waiting[n:])
	clear(g.waiting[rest:]) // no finished call stays reachable
	g.waiting = g.waiting[:rest]
	g.mu.Unlock()
	s.lead(calls)
	return (<-c.done).get()
}

func (r batchResult) get() error {
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.err
}

// lead commits calls, then hands the lead to the next queued call, or
// gives it up. Whatever happens on the way, every call is told an
// outcome and the lead is passed on: a call is never left waiting.
func (s *Store) lead(calls []*batchCall) {
	g := &s.group
	defer func() {
		for _, c := range calls {
			if !c.told {
				c.tell(batchResult{err: errors.New("the store's group commit ended before this call's transaction did")})
			}
		}
		g.mu.Lock()
		if len(g.waiting) > 0 {
			close(g.waiting[0].lead)
		} else {
			g.leading = false
		}
		g.mu.Unlock()
	}()
	s.runGroup(calls)
}

// errCallFailed rolls a group's transaction back when one of its calls
// failed; errCallPanicked, when its fn panicked.
var (
	errCallFailed   = errors.New("a call of the group failed")
	errCallPanicked = errors.New("a call of the group panicked")
)

// runGroup commits calls in one transaction and tells each its outcome.
func (s *Store) runGroup(calls []*batchCall) {
	if len(calls) == 0 {
		return
	}
	if hook := s.group.onRun; hook != nil {
		hook(len(calls))
	}
	failed, ferr := -1, error(nil)
	var panicked any
	err := s.runTx(txMode{write: true}, func(tx *Tx) error {
		for i, c := range calls {
			if err, p := runCall(c.fn, tx); p != nil {
				failed, panicked = i, p
				return errCallPanicked
			} else if err != nil {
				failed, ferr = i, err
				return errCallFailed
			}
		}
		return nil
	})
	switch {
	case err == nil:
		for _, c := range calls {
			c.tell(batchResult{})
		}
	case failed >= 0 && len(calls) == 1 && panicked == nil:
		calls[0].tell(batchResult{err: ferr})
	case failed >= 0:
		// The calls before it succeeded on this same state: commit them;
		// then the failing call alone, after them, for its own error (it
		// meets what it met in the group); then the rest afresh.
		s.runGroup(calls[:failed])
		if panicked != nil {
			calls[failed].tell(batchResult{panicked: panicked})
		} else {
			s.runGroup(calls[failed : failed+1])
		}
		s.runGroup(calls[failed+1:])
	default:
		for _, c := range calls {
			c.tell(batchResult{err: err})
		}
	}
}

// boltPanic is a panic of bbolt's that runCall recovered and raises
// again: raised from runCall, it would no longer look like bbolt's to
// fromBolt, which looks at where a panic began.
type boltPanic struct{ r any }

// runCall runs fn in tx. A panic from fn's own code is returned, for its
// caller to raise; one from bbolt (damage met reading the file) goes on
// to Store.run, which makes it the *CorruptError of the transaction.
func runCall(fn func(*Tx) error, tx *Tx) (err error, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			if fromBolt(r) {
				panic(boltPanic{r})
			}
			panicked = r
		}
	}()
	return fn(tx), nil
}
