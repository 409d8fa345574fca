package store

import "sync"

// Held is the Provider of a long-lived host (rukhd): it keeps one Store
// open, and so holds its lock, until Release; from then on it opens the
// file for each transaction as Files does. A daemon that drains (its
// executable was upgraded, it was told to stop) releases its store at
// once, so that the calls it still runs and the new build's calls share
// the lock transaction by transaction instead of the new ones waiting out
// the drain.
type Held struct {
	mu    sync.RWMutex // held for reading by every transaction
	s     *Store       // nil once released
	files Files
}

var _ Provider = (*Held)(nil)

// NewHeld returns a Held that keeps s open.
func NewHeld(s *Store) *Held {
	return &Held{s: s, files: Files{Path: s.Path()}}
}

// View runs fn in a read transaction of the held store, or of the file
// opened for it once released.
func (h *Held) View(fn func(*Tx) error) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.s != nil {
		return h.s.View(fn)
	}
	return h.files.View(fn)
}

// Update runs fn in one read-write transaction, as View does.
func (h *Held) Update(fn func(*Tx) error) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.s != nil {
		return h.s.Update(fn)
	}
	return h.files.Update(fn)
}

// Holding reports whether the store is still held open.
func (h *Held) Holding() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.s != nil
}

// Release closes the held store, and frees its lock, once the
// transactions in progress have ended; it is safe to call more than once.
func (h *Held) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return nil
	}
	err := h.s.Close()
	h.s = nil
	return err
}
