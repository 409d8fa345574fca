package store

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// Provider gives the core its store one transaction at a time. The
// in-process host opens the file for each operation and closes it after
// (Files), so it never holds the lock across a user-visible wait; rukhd
// holds one open Store for its whole life. *Store is a Provider.
type Provider interface {
	// View runs fn in a read transaction. A Provider whose store does not
	// exist yet passes a nil Tx rather than creating the file by reading.
	View(fn func(*Tx) error) error
	// Update runs fn in one read-write transaction.
	Update(fn func(*Tx) error) error
	// Batch runs fn in a read-write transaction that may hold other
	// concurrent Batch calls (Store.Batch): fn may run more than once.
	Batch(fn func(*Tx) error) error
}

// Files is the Provider of the in-process host: it opens the store at
// Path for each transaction, waiting at most Timeout for its lock (0:
// FilesTimeout), and closes it before returning.
type Files struct {
	Path    string
	Timeout time.Duration
}

// FilesTimeout is how long Files waits for the store's lock when its
// Timeout is zero. Waiters queue (Open), so behind a burst of a few
// hundred calls a short transaction can wait seconds; an owner command
// waits in the same queue as the calls, never less, and the wait stays
// bounded.
const FilesTimeout = 10 * time.Second

func (f Files) timeout() time.Duration {
	if f.Timeout <= 0 {
		return FilesTimeout
	}
	return f.Timeout
}

var (
	_ Provider = Files{}
	_ Provider = (*Store)(nil)
)

// View opens the store read-only for fn; a missing store is a nil Tx in a
// new home, and a *MissingError where an earlier store left releases or
// saved outcomes (an empty answer would hide that the store is lost). A
// store an older build wrote is migrated first (a read-write open, once),
// so that the first read after an upgrade — `ext list`, a tool listing —
// does not fail for want of an owner change. So is a store beside a
// journal a killed daemon left (UnfoldedError): the read-write open
// applies it.
func (f Files) View(fn func(*Tx) error) error {
	if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
		if lost := lostStore(f.Path); lost != nil {
			return lost
		}
		return fn(nil)
	}
	s, err := Open(f.Path, Options{Timeout: f.timeout(), ReadOnly: true})
	if oe, ue := (*OldError)(nil), (*UnfoldedError)(nil); errors.As(err, &oe) || errors.As(err, &ue) {
		var m *Store
		if m, err = Open(f.Path, Options{Timeout: f.timeout()}); err == nil {
			m.Close()
			s, err = Open(f.Path, Options{Timeout: f.timeout(), ReadOnly: true})
		}
	}
	if err != nil {
		return err
	}
	defer s.Close()
	return s.View(fn)
}

// Update opens (or creates) the store for fn.
func (f Files) Update(fn func(*Tx) error) error {
	s, err := Open(f.Path, Options{Timeout: f.timeout()})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Update(fn)
}

// Batch is Update: a store opened for one transaction has no other calls
// to share it with (in-process hosts each hold the file's lock in turn).
func (f Files) Batch(fn func(*Tx) error) error { return f.Update(fn) }
