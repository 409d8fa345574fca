package store

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A damaged store file must be an error, never a crash. bbolt trusts the
// file: it follows page pointers through its memory map without bounds
// checks and panics on what it finds inconsistent. So every use of bbolt
// here runs with debug.SetPanicOnFault on its goroutine, which turns a
// fault reading the map (a pointer past the file's end) into a panic, and
// recovers the panics that come from bbolt, or from reading its map, as a
// *CorruptError. A panic from anywhere else is a bug and is not hidden.
//
// What recovery cannot catch — a loop through a cycle of page pointers,
// or a fault in the goroutine bbolt's own Check starts — is kept from
// happening by checking the file with plain reads first (verify.go):
// quickly at every open, fully when it looks inconsistent and in Check.

// damaged is the *CorruptError for damage found in the file at path.
func damaged(path string, err error) *CorruptError {
	return &CorruptError{Path: path, Err: err}
}

// fromBolt reports whether the panic value r came from bbolt or from a
// fault reading memory: a fault at a real address (SetPanicOnFault's
// runtime error, which has an Addr method) can only be bbolt's map inside
// a transaction, and any other panic counts when the function that raised
// it is bbolt's. It must be called from the deferred function that
// recovered r, so that the stack still shows where the panic began.
func fromBolt(r any) bool {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		return true
	}
	if _, ok := r.(boltPanic); ok {
		return true
	}
	pcs := make([]uintptr, 128)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt")
		}
		if !more {
			return false
		}
	}
}

// panicError describes a panic recovered from bbolt reading the file at
// path by what a full check of the file finds there: the runtime's words
// ("index out of range", "nil pointer dereference") tell the owner
// nothing. A check that finds nothing (bbolt tripped on what the check
// does not look at) says where the reading stopped, as bbolt's panic
// says.
func panicError(path string, r any) error {
	if bp, ok := r.(boltPanic); ok {
		r = bp.r
	}
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		if err := checkFile(f, true, true); err != nil {
			return err
		}
	}
	if msg, ok := r.(string); ok {
		return fmt.Errorf("bbolt could not read it: %s", msg) // bbolt's own words: "page 7 already freed"
	}
	return errors.New("bbolt could not follow its pages, though a check of them finds nothing wrong")
}

// openBolt is bolt.Open for the store at path, with the damage bbolt
// finds, or panics on, as a *CorruptError. It returns the device and inode
// of the file bbolt has open. The caller checked the file at path with
// plain reads before (ensureStoreFile), and keeps it open until openBolt
// returns; checked is its device and inode. When bbolt opened that same
// file it is not read again: every writer of store.db holds the lock file
// (or bbolt's, on a read-only open without one), and the caller holds it
// too. Any other file bbolt has (one made just now, or one put at the path
// since) is checked once bbolt has it and its lock; a problem there is a
// *CorruptError too, and the file is closed again.
func openBolt(path string, checked fileID, opts *bolt.Options) (db *bolt.DB, id fileID, err error) {
	var file *os.File
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := openFile(name, flag, perm)
		file = f
		return f, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !fromBolt(r) {
				panic(r)
			}
			if file != nil {
				file.Close() // and its lock, which bbolt took
			}
			db, err = nil, damaged(path, panicError(path, r))
		}
	}()
	db, err = bolt.Open(path, 0o600, opts)
	switch {
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, id, damaged(path, fmt.Errorf("bbolt cannot open it: %w", err))
	case err != nil:
		return nil, id, err
	}
	if id, err = checkOpened(path, file, checked); err != nil {
		db.Close()
		return nil, id, err
	}
	return db, id, nil
}

// checkOpened returns the device and inode of f, the file bbolt just
// opened at path (under its lock), and checks it before any transaction
// reads it unless it is the file checked already.
func checkOpened(path string, f *os.File, checked fileID) (fileID, error) {
	if f == nil {
		return fileID{}, fmt.Errorf("open the store at %s: bbolt opened no file", path)
	}
	id, err := statID(f)
	if err != nil {
		return fileID{}, fmt.Errorf("open the store at %s: %w", path, err)
	}
	if id == checked {
		return id, nil
	}
	if err := checkFile(f, false, false); err != nil {
		return fileID{}, damaged(path, err)
	}
	return id, nil
}

// run runs fn in one bbolt transaction, read-write when writable: fn's
// error rolls it back, nil commits it (a read transaction is always
// rolled back). A panic from bbolt, or a fault reading its map, is
// recovered as a *CorruptError after the transaction is rolled back; if
// even the rollback fails, or Begin itself panicked, bbolt may still hold
// its locks, so the store is wedged: every later transaction fails at once and Close leaves
// bbolt alone. A panic from anywhere else is passed on, after the
// rollback.
func (s *Store) run(writable bool, fn func(*bolt.Tx) error) (err error) {
	return s.runTx(txMode{write: writable}, func(tx *Tx) error { return fn(tx.tx) })
}

// txMode says how runTx runs a transaction.
type txMode struct {
	write bool
	// locked: the caller holds the journal's lock already (a journaled
	// admission reads under it).
	locked bool
	// anyFile: skip the identity checks, to fold the journal into a
	// store file that was removed before saving it aside; the journal
	// is left as it is (its entries also serve a store put back from an
	// older copy, should the copy not be made).
	anyFile bool
}

// runTx is run, with the journal (journal.go), and one Tx for all of
// the transaction: a write transaction holds the journal's lock from its
// begin, applies the entries not yet folded before fn, in the Tx fn
// gets, and starts the journal's next generation once its commit is
// durable; a read transaction's Tx holds the entries not yet folded when
// it began (Tx.pend).
func (s *Store) runTx(mode txMode, fn func(*Tx) error) (err error) {
	if w := s.wedged.Load(); w != nil {
		return w
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var btx *bolt.Tx
	defer func() {
		r := recover()
		if r != nil && btx == nil {
			// Begin itself failed half-way: bbolt takes its meta lock and
			// its map lock (and, to write, its writer lock) before it
			// reads the meta page, and a panic there leaves them held,
			// for a read as much as for a write.
			s.wedge(r)
		}
		if btx != nil && btx.DB() != nil && !rollback(btx) {
			s.wedge(r)
		}
		if r == nil {
			return
		}
		if !fromBolt(r) {
			panic(r)
		}
		err = damaged(s.path, panicError(s.path, r))
	}()
	if mode.write && !mode.anyFile {
		// Nothing is written to a file that is no longer the store
		// (identity.go).
		if err := s.identity(); err != nil {
			return err
		}
	}
	j := s.j
	unlock := func() {}
	if j != nil && !mode.locked {
		j.mu.Lock()
		held := true
		unlock = func() {
			if held {
				held = false
				j.mu.Unlock()
			}
		}
		defer unlock()
	}
	btx, err = s.db.Begin(mode.write)
	if err != nil {
		return err
	}
	tx := &Tx{tx: btx, s: s}
	folding := false
	if j != nil {
		switch {
		case !mode.write:
			// The snapshot is consistent with btx; later appends go past
			// its capacity and a fold replaces the slice, so it needs no
			// lock, and a read holds none while fn runs.
			tx.pend = j.pending[:len(j.pending):len(j.pending)]
			unlock()
		case j.dirty():
			folding = true
			err = applyEntries(tx, j.pending, j.head.gen)
		}
	}
	if err == nil {
		err = fn(tx)
	}
	if err != nil || !mode.write {
		if rerr := btx.Rollback(); err == nil {
			err = rerr
		}
		return s.named(err)
	}
	if err := btx.Commit(); err != nil {
		return s.named(err)
	}
	if folding && !mode.anyFile {
		failpoint("fold-committed")
		j.reset()
	}
	unlock() // before the identity check, which may save the store aside
	if mode.anyFile {
		return nil
	}
	// Committed to the open file; acknowledged only if that file is still
	// the store at its path.
	return s.identity()
}

// rollback rolls btx back and reports whether it ended.
func rollback(btx *bolt.Tx) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_ = btx.Rollback()
	return btx.DB() == nil
}

// wedge marks the store as unusable after a transaction could not be
// ended.
func (s *Store) wedge(r any) {
	cause := errors.New("bbolt could not end a transaction on it")
	if r != nil {
		cause = fmt.Errorf("%w after: %w", cause, panicError(s.path, r))
	}
	s.wedged.CompareAndSwap(nil, damaged(s.path, cause))
}

// named gives a *CorruptError in err the store's path.
func (s *Store) named(err error) error {
	var ce *CorruptError
	if errors.As(err, &ce) && ce.Path == "" {
		ce.Path = s.path
	}
	return err
}

// closeBolt closes bbolt's file unless the store is wedged: then bbolt's
// Close would wait forever for the writer lock the failed transaction
// holds, and the file stays open (and locked) until the process ends.
func (s *Store) closeBolt() (err error) {
	if s.wedged.Load() != nil {
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !fromBolt(r) {
				panic(r)
			}
			err = damaged(s.path, panicError(s.path, r))
		}
	}()
	return s.db.Close()
}
