package store

import (
	"errors"
	"fmt"
	"time"
)

// Journaler is a Provider that can append invocation records to a
// journal (journal.go) instead of committing them to bbolt: a Store
// opened with Options.Journal, and a Held while it holds one. Both
// methods return ErrNotJournaled when the record must be committed with
// Batch instead.
type Journaler interface {
	JournalBegin(inv *Invocation, max int, alive func(*Invocation) bool) error
	JournalFinish(id string, f *Finish, at time.Time) (bool, error)
}

var (
	_ Journaler = (*Store)(nil)
	_ Journaler = (*Held)(nil)
)

// errHostGone stops a journaled admission that found an open record
// whose host is gone: resolving it is a write, for Batch.
var errHostGone = errors.New("an open invocation's host is gone")

// errFull stops a journaled admission whose task is at its limit: the
// refusal, and whatever may free a slot first, is Batch's.
var errFull = errors.New("the task is at its limit")

// JournalBegin admits inv against its task's limit of max open
// invocations and records it, as BeginInvocation does, and returns once
// its begin record is durable in the journal. It returns ErrNotJournaled,
// having recorded nothing, when the store keeps no journal, the record
// does not fit, the journal failed, an open record's host is gone
// (alive reports false) or the task is at its limit: then
// BeginInvocation, in Batch, does it all (and refuses with *BusyError).
func (s *Store) JournalBegin(inv *Invocation, max int, alive func(*Invocation) bool) error {
	j := s.j
	if j == nil {
		return ErrNotJournaled
	}
	if !validInvocationID(inv.ID) {
		return fmt.Errorf("invocation id %q is not 32 hex characters", inv.ID)
	}
	// Nothing is appended for a store file that is no longer the store,
	// as nothing is committed to one (identity.go).
	if err := s.identity(); err != nil {
		return err
	}
	inv.Outcome, inv.FinishedAt = "", time.Time{}
	rec := *inv
	e := journalEntry{begin: &rec}
	data, err := e.encode()
	if err != nil {
		return err
	}
	j.mu.Lock()
	if j.err != nil || !j.fits(len(data)) {
		j.mu.Unlock()
		return ErrNotJournaled
	}
	if err := s.admitJournaled(inv, max, alive); err != nil {
		j.mu.Unlock()
		if errors.Is(err, errHostGone) || errors.Is(err, errFull) {
			return ErrNotJournaled
		}
		return err
	}
	seq, err := s.append(e, data)
	j.mu.Unlock()
	if err != nil {
		return ErrNotJournaled
	}
	if err := j.sync(seq); err != nil {
		// Not durable: take it back, unless a fold has made it so. The
		// caller commits it again with Batch, whose commit records this
		// generation as folded, so the entry counts for nothing even if
		// it reached the disk.
		j.mu.Lock()
		folded := j.folded >= seq
		if !folded {
			for i := range j.pending {
				if j.pending[i].begin == e.begin {
					j.pending = append(j.pending[:i:i], j.pending[i+1:]...)
					break
				}
			}
		}
		j.mu.Unlock()
		if !folded {
			return ErrNotJournaled
		}
	}
	return s.ackJournaled()
}

// JournalFinish commits the outcome f of an open invocation, as Finish
// does, and returns once it is durable in the journal: false, changing
// nothing, when the invocation already has an outcome. It returns
// ErrNotJournaled, as JournalBegin does, for Finish in Batch to commit
// it; an outcome appended before the journal failed is folded by that
// same commit, which then finds it there.
func (s *Store) JournalFinish(id string, f *Finish, at time.Time) (bool, error) {
	j := s.j
	if j == nil {
		return false, ErrNotJournaled
	}
	if f.Outcome == "" {
		return false, errors.New("an outcome is required")
	}
	if len(f.Effects) > MaxEffects {
		return false, fmt.Errorf("%d effects; a record keeps at most %d", len(f.Effects), MaxEffects)
	}
	if err := s.identity(); err != nil {
		return false, err
	}
	e := journalEntry{id: id, finish: f, at: nanos(at)}
	data, err := e.encode()
	if err != nil {
		return false, err
	}
	j.mu.Lock()
	if j.err != nil || !j.fits(len(data)) {
		j.mu.Unlock()
		return false, ErrNotJournaled
	}
	open, err := s.openJournaled(id)
	if err != nil || !open {
		j.mu.Unlock()
		return false, err
	}
	seq, err := s.append(e, data)
	j.mu.Unlock()
	if err != nil {
		return false, ErrNotJournaled
	}
	if err := j.sync(seq); err != nil {
		j.mu.Lock()
		folded := j.folded >= seq
		j.mu.Unlock()
		if !folded {
			return false, ErrNotJournaled
		}
	}
	return true, s.ackJournaled()
}

// append writes e (data) to the journal and keeps it pending, waking the
// folder once enough are. The caller holds the journal's lock. A write
// that fails stops the journal.
func (s *Store) append(e journalEntry, data []byte) (uint64, error) {
	j := s.j
	seq, err := j.write(data)
	if err != nil {
		j.err = err
		return 0, err
	}
	j.pending = append(j.pending, e)
	if len(j.pending) >= FoldAfter {
		select {
		case j.wake <- struct{}{}:
		default:
		}
	}
	return seq, nil
}

// admitJournaled is BeginInvocation's admission over the store and the
// journal's pending entries, without writing: inv's task must have fewer
// than max open invocations (errFull otherwise), and every open one a
// live host (errHostGone otherwise). The caller holds the journal's lock.
func (s *Store) admitJournaled(inv *Invocation, max int, alive func(*Invocation) bool) error {
	return s.runTx(txMode{locked: true}, func(tx *Tx) error {
		finished := tx.pendingOutcomes()
		running := 0
		count := func(rec *Invocation) error { // an open one
			switch {
			case rec.ID == inv.ID:
				return fmt.Errorf("invocation %s already exists", inv.ID)
			case !alive(rec):
				return errHostGone
			case rec.Task == inv.Task:
				running++
			}
			return nil
		}
		records, open, err := tx.invBuckets()
		if err != nil {
			return err
		}
		if open != nil {
			err = open.ForEach(func(_, v []byte) error {
				rec, err := tx.invocationAt(records, v)
				if err != nil || finished[rec.ID] != nil {
					return err
				}
				return count(rec)
			})
			if err != nil {
				return err
			}
		}
		if err := tx.pendingOpen(finished, count); err != nil {
			return err
		}
		if running >= max {
			// Batch decides: it commits the outcomes saved aside first
			// (invoke's settlePending), which may free a slot.
			return errFull
		}
		return nil
	})
}

// openJournaled reports whether invocation id is open, in the store and
// the journal's pending entries. The caller holds the journal's lock.
func (s *Store) openJournaled(id string) (bool, error) {
	var open bool
	err := s.runTx(txMode{locked: true}, func(tx *Tx) error {
		inv, err := tx.openInvocation(id)
		open = inv != nil
		return err
	})
	return open, err
}

// ackJournaled acknowledges what the journal made durable: only while
// the store's file is still the store at its path (identity.go), and the
// journal's the journal. A journal removed or replaced is folded into the
// store at once, and no more is appended to it.
func (s *Store) ackJournaled() error {
	if err := s.identity(); err != nil {
		return err
	}
	j := s.j
	what, err := j.moved()
	if err == nil && what == "" {
		return nil
	}
	j.mu.Lock()
	if j.err == nil {
		if err == nil {
			err = fmt.Errorf("%s %s", j.path, what)
		}
		j.err = err
	}
	j.mu.Unlock()
	return s.fold(txMode{})
}

// fold applies the journal's pending entries to the store, when there
// are any, in a write transaction of their own (runTx).
func (s *Store) fold(mode txMode) error {
	j := s.j
	if j == nil {
		return nil
	}
	j.mu.Lock()
	dirty := j.dirty()
	j.mu.Unlock()
	if !dirty {
		return nil
	}
	mode.write = true
	return s.runTx(mode, func(*Tx) error { return nil })
}

// startFolder has the journal folded in the background whenever
// FoldAfter entries are pending.
func (s *Store) startFolder() {
	j := s.j
	j.wake, j.stop, j.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(j.done)
		for {
			select {
			case <-j.stop:
				return
			case <-j.wake:
				_ = s.fold(txMode{}) // a failed fold leaves the entries pending, durable in the journal
			}
		}
	}()
}

// closeJournal stops the folder, folds what is pending (what a failed
// fold leaves stays in the journal, for the next open to apply) and
// closes the journal's file.
func (s *Store) closeJournal() {
	j := s.j
	if j == nil {
		return
	}
	j.closing.Do(func() {
		close(j.stop)
		<-j.done
		_ = s.fold(txMode{})
		j.f.Close()
	})
}
