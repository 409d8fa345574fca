package store

import (
	"cmp"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/rukh-cli/rukh/internal/cliname"
)

// Held is the Provider of a long-lived host (rukhd): it keeps one Store
// open, and so holds its lock, until Release; from then on it opens the
// file for each transaction as Files does. A daemon that drains (its
// executable was upgraded, it was told to stop) releases its store at
// once, so that the calls it still runs and the new build's calls share
// the lock transaction by transaction instead of the new ones waiting out
// the drain.
type Held struct {
	mu    sync.Mutex
	s     *Store        // nil once released
	n     int           // transactions running on s
	idle  chan struct{} // closed when n drops to 0 after Release
	files Files
	lazy  bool // Hold's: s is opened by the first transaction
}

var _ Provider = (*Held)(nil)

// NewHeld returns a Held that keeps s open.
func NewHeld(s *Store) *Held {
	s.holder = cliname.Daemon()
	return &Held{s: s, files: Files{Path: s.Path()}}
}

// Hold returns a Held of the store at f.Path that its first transaction
// opens read-write: a one-shot command line's start, which then resolves,
// admits and begins its call on one open of the store (one wait for its
// lock, one look at the file) instead of one per transaction, and
// releases it before the command runs. A store that does not exist yet
// is not created by reading, and one that cannot be opened read-write is
// not held: transactions then run as f runs them, with f's answers.
func Hold(f Files) *Held { return &Held{files: f, lazy: true} }

// Replaced reports, without writing, whether the held store's file was
// removed or replaced at its path (*ReplacedError, Store.Replaced); nil
// once released, when each transaction opens the path afresh.
func (h *Held) Replaced() error {
	s, err := h.acquire()
	if err != nil {
		return err
	}
	if s != nil {
		defer h.done()
		return s.Replaced()
	}
	return nil
}

// acquire returns the held store, counting one more transaction on it, or
// nil once released. A Hold's first acquire opens the store; if its lock
// was not had within the timeout, that is the transaction's error (Files
// would only wait as long again).
func (h *Held) acquire() (*Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lazy {
		h.lazy = false
		if _, err := os.Stat(h.files.Path); err == nil {
			s, err := Open(h.files.Path, Options{Timeout: h.files.timeout()})
			if le := (*LockedError)(nil); errors.As(err, &le) {
				return nil, err
			}
			h.s = s
		}
	}
	if h.s != nil {
		h.n++
	}
	return h.s, nil
}

// done ends a transaction acquire counted.
func (h *Held) done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n--
	if h.n == 0 && h.idle != nil {
		close(h.idle)
		h.idle = nil
	}
}

// View runs fn in a read transaction of the held store, or of the file
// opened for it once released.
func (h *Held) View(fn func(*Tx) error) error {
	s, err := h.acquire()
	if err != nil {
		return err
	}
	if s != nil {
		defer h.done()
		return s.View(fn)
	}
	return h.files.View(fn)
}

// Update runs fn in one read-write transaction, as View does.
func (h *Held) Update(fn func(*Tx) error) error {
	s, err := h.acquire()
	if err != nil {
		return err
	}
	if s != nil {
		defer h.done()
		return s.Update(fn)
	}
	return h.files.Update(fn)
}

// Batch runs fn as Store.Batch on the held store, so that concurrent
// calls share commits; once released, as Files does.
func (h *Held) Batch(fn func(*Tx) error) error {
	s, err := h.acquire()
	if err != nil {
		return err
	}
	if s != nil {
		defer h.done()
		return s.Batch(fn)
	}
	return h.files.Batch(fn)
}

// Holding reports whether the store is still held open.
func (h *Held) Holding() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s != nil
}

// Release stops holding the store: later transactions open the file each
// time, and the held Store is closed, freeing its lock, once the
// transactions running on it have ended (a transaction begun inside
// another is counted too, so none waits for its own). It is safe to call
// more than once.
func (h *Held) Release() error {
	h.mu.Lock()
	h.lazy = false // a Hold that never opened the store never will
	s := h.s
	if s == nil {
		h.mu.Unlock()
		return nil
	}
	h.s = nil
	var idle chan struct{}
	if h.n > 0 {
		idle = make(chan struct{})
		h.idle = idle
	}
	h.mu.Unlock()
	if idle != nil {
		<-idle
	}
	return s.Close()
}

// JournalBegin appends a begin record to the held store's journal
// (Store.JournalBegin); ErrNotJournaled once released.
func (h *Held) JournalBegin(inv *Invocation, max int, alive func(*Invocation) bool) error {
	s, err := h.acquire()
	if err != nil || s == nil {
		return cmp.Or(err, ErrNotJournaled)
	}
	defer h.done()
	return s.JournalBegin(inv, max, alive)
}

// JournalFinish appends an outcome to the held store's journal
// (Store.JournalFinish); ErrNotJournaled once released.
func (h *Held) JournalFinish(id string, f *Finish, at time.Time) (bool, error) {
	s, err := h.acquire()
	if err != nil || s == nil {
		return false, cmp.Or(err, ErrNotJournaled)
	}
	defer h.done()
	return s.JournalFinish(id, f, at)
}
