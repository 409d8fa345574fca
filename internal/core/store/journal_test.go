package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

func alive(*store.Invocation) bool { return true }
func gone(*store.Invocation) bool  { return false }

// journalInv is the begin record of invocation n of task.
func journalInv(n int, task string) *store.Invocation {
	return &store.Invocation{
		ID: fmt.Sprintf("%032x", n), Identity: "acme.deploy/status", Digest: digest("r"), Revision: 1,
		Transport: "mcp", Task: task, PID: os.Getpid(), StartedAt: t0.Add(time.Duration(n) * time.Second),
	}
}

// openJournaled opens a store at a fresh path with a journal.
func openJournaled(t *testing.T) (string, *store.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rukh.db")
	s, err := store.Open(path, store.Options{Timeout: time.Second, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	return path, s
}

// invocations reads every record, newest first, as a map by id; an id
// found twice fails the test.
func invocations(t *testing.T, s *store.Store) map[string]*store.Invocation {
	t.Helper()
	out := map[string]*store.Invocation{}
	err := s.View(func(tx *store.Tx) error {
		all, err := tx.Invocations(0)
		for _, inv := range all {
			if out[inv.ID] != nil {
				t.Errorf("invocation %s is recorded twice", inv.ID)
			}
			out[inv.ID] = inv
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// storeBytes is the store file's content: what bbolt committed.
func storeBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJournaledRecords: with a journal, a begin record and an outcome are
// durable without a commit to the store file, every read sees them, and
// they are in the store once it is closed and opened again.
func TestJournaledRecords(t *testing.T) {
	path, s := openJournaled(t)
	before := storeBytes(t, path)

	a, b := journalInv(1, "agent"), journalInv(2, "agent")
	for _, inv := range []*store.Invocation{a, b} {
		if err := s.JournalBegin(inv, 8, alive); err != nil {
			t.Fatalf("JournalBegin %s: %v", inv.ID, err)
		}
	}
	if ok, err := s.JournalFinish(a.ID, &store.Finish{Outcome: "succeeded", ExitStatus: 0, Detail: "done"}, t0.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("JournalFinish = %v, %v; want true, nil", ok, err)
	}
	// The first outcome stands.
	if ok, err := s.JournalFinish(a.ID, &store.Finish{Outcome: "failed"}, t0); err != nil || ok {
		t.Fatalf("a second JournalFinish = %v, %v; want false, nil", ok, err)
	}
	if ok, err := s.JournalFinish(fmt.Sprintf("%032x", 99), &store.Finish{Outcome: "failed"}, t0); err != nil || ok {
		t.Fatalf("JournalFinish of an unknown invocation = %v, %v; want false, nil", ok, err)
	}
	if !bytes.Equal(before, storeBytes(t, path)) {
		t.Error("the store file changed: the records were committed to bbolt, not journaled")
	}

	check := func(s *store.Store, when string) {
		t.Helper()
		got := invocations(t, s)
		if len(got) != 2 {
			t.Fatalf("%s: %d invocations, want 2", when, len(got))
		}
		if ga := got[a.ID]; ga.Outcome != "succeeded" || ga.Detail != "done" || !ga.FinishedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("%s: %s is %+v, want succeeded at %v", when, a.ID, ga, t0.Add(time.Minute))
		}
		if gb := got[b.ID]; !gb.Open() || gb.Task != "agent" {
			t.Errorf("%s: %s is %+v, want open under task agent", when, b.ID, gb)
		}
		err := s.View(func(tx *store.Tx) error {
			all, err := tx.Invocations(0)
			if err == nil && (len(all) != 2 || all[0].ID != b.ID) {
				t.Errorf("%s: Invocations = %d records, newest %s; want 2, newest %s", when, len(all), all[0].ID, b.ID)
			}
			inv, err := tx.InvocationByID(a.ID)
			if err == nil && (inv == nil || inv.Outcome != "succeeded") {
				t.Errorf("%s: InvocationByID(%s) = %+v, want it succeeded", when, a.ID, inv)
			}
			found, err := tx.FindInvocation(b.ID)
			if err == nil && (found == nil || found.ID != b.ID) {
				t.Errorf("%s: FindInvocation(%s) = %+v", when, b.ID, found)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(s, "journaled")
	s = reopen(t, s, path)
	defer s.Close()
	check(s, "after Close and Open")
}

// reopen closes s and opens the store at path again, without a journal,
// and checks it.
func reopen(t *testing.T, s *store.Store, path string) *store.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.Check(s); err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s
}

// TestJournaledAdmission: a journaled admission counts the store's open
// records and the journal's, and leaves a full task, and an admission
// that must resolve a lost host, to BeginInvocation.
func TestJournaledAdmission(t *testing.T) {
	_, s := openJournaled(t)
	defer s.Close()
	// One open record in the store itself, one in the journal.
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.BeginInvocation(journalInv(1, "agent"), 8, alive, t0) })
	if err := s.JournalBegin(journalInv(2, "agent"), 8, alive); err != nil {
		t.Fatal(err)
	}
	// A full task is Batch's to refuse (after settling saved outcomes,
	// which may free a slot): it counts the journal's records too.
	if err := s.JournalBegin(journalInv(3, "agent"), 2, alive); !errors.Is(err, store.ErrNotJournaled) {
		t.Fatalf("a third call under a limit of 2 = %v, want ErrNotJournaled", err)
	}
	var busy *store.BusyError
	if err := s.Batch(func(tx *store.Tx) error { return tx.BeginInvocation(journalInv(3, "agent"), 2, alive, t0) }); !errors.As(err, &busy) || busy.Max != 2 {
		t.Fatalf("the same call in Batch = %v, want *BusyError", err)
	}
	if err := s.JournalBegin(journalInv(3, "other"), 1, alive); err != nil {
		t.Fatalf("another task's call = %v", err)
	}
	if err := s.JournalBegin(journalInv(2, "other"), 8, alive); err == nil {
		t.Fatal("a second begin of the same id was admitted")
	}
	// An outcome in the journal frees the slot.
	if ok, err := s.JournalFinish(journalInv(1, "agent").ID, &store.Finish{Outcome: "succeeded"}, t0); !ok || err != nil {
		t.Fatalf("JournalFinish = %v, %v", ok, err)
	}
	if err := s.JournalBegin(journalInv(4, "agent"), 2, alive); err != nil {
		t.Fatalf("a call after one finished = %v", err)
	}
	// A gone host is resolved by a write: not here.
	if err := s.JournalBegin(journalInv(5, "agent"), 8, gone); !errors.Is(err, store.ErrNotJournaled) {
		t.Fatalf("with a host gone = %v, want ErrNotJournaled", err)
	}
	// BeginInvocation, in a write transaction, sees the journal's records
	// (folded first) and resolves them.
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.BeginInvocation(journalInv(5, "agent"), 8, gone, t0) })
	got := invocations(t, s)
	if len(got) != 5 {
		t.Fatalf("%d invocations, want 5", len(got))
	}
	for _, n := range []int{2, 3, 4} {
		if inv := got[journalInv(n, "").ID]; inv.Outcome != "execution_failed" || inv.Reason != "host_lost" {
			t.Errorf("invocation %d is %s/%s, want execution_failed/host_lost", n, inv.Outcome, inv.Reason)
		}
	}
	if inv := got[journalInv(1, "").ID]; inv.Outcome != "succeeded" {
		t.Errorf("invocation 1 is %s, want succeeded", inv.Outcome)
	}
}

// TestWithoutJournal: a store opened without Options.Journal appends
// nothing; a record too large for an entry goes to the store.
func TestWithoutJournal(t *testing.T) {
	_, plain := openPath(t)
	defer plain.Close()
	if err := plain.JournalBegin(journalInv(1, "agent"), 8, alive); !errors.Is(err, store.ErrNotJournaled) {
		t.Fatalf("JournalBegin without a journal = %v, want ErrNotJournaled", err)
	}
	if _, err := plain.JournalFinish(journalInv(1, "agent").ID, &store.Finish{Outcome: "succeeded"}, t0); !errors.Is(err, store.ErrNotJournaled) {
		t.Fatalf("JournalFinish without a journal = %v, want ErrNotJournaled", err)
	}
	_, s := openJournaled(t)
	defer s.Close()
	big := journalInv(2, "agent")
	big.Identity = string(bytes.Repeat([]byte("x"), 40<<10))
	if err := s.JournalBegin(big, 8, alive); !errors.Is(err, store.ErrNotJournaled) {
		t.Fatalf("a 40 KiB record = %v, want ErrNotJournaled", err)
	}
}

// TestJournalFillsAndFolds: a journal that fills is folded by the write
// that takes the record instead, and then takes entries again; every
// record is there once.
func TestJournalFillsAndFolds(t *testing.T) {
	path, s := openJournaled(t)
	n := 0
	fallbacks := 0
	detail := string(bytes.Repeat([]byte("d"), 20<<10))
	for n < 150 {
		n++
		inv := journalInv(n, "agent")
		inv.Identity = detail // 20 KiB an entry: the journal fills before FoldAfter
		err := s.JournalBegin(inv, 1<<20, alive)
		if errors.Is(err, store.ErrNotJournaled) {
			fallbacks++
			err = s.Batch(func(tx *store.Tx) error { return tx.BeginInvocation(inv, 1<<20, alive, t0) })
		}
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
	}
	got := invocations(t, s)
	if len(got) != n {
		t.Fatalf("%d invocations, want %d", len(got), n)
	}
	s = reopen(t, s, path)
	defer s.Close()
	if got := invocations(t, s); len(got) != n {
		t.Fatalf("after reopening: %d invocations, want %d", len(got), n)
	}
	if fallbacks == 0 {
		t.Fatalf("none of %d begins of 20 KiB found the journal full", n)
	}
}

// TestReadOnlyOpenOfAJournal: a read-only open refuses a store whose
// journal holds what it has not folded (*UnfoldedError); Files.View
// applies it with a read-write open and reads it all.
func TestReadOnlyOpenOfAJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rukh.db")
	p := startHelper(t, "journal-and-hang", path, true)
	p.kill(t)

	_, err := store.Open(path, store.Options{Timeout: time.Second, ReadOnly: true})
	var unfolded *store.UnfoldedError
	if !errors.As(err, &unfolded) || unfolded.Path != path+store.JournalSuffix {
		t.Fatalf("a read-only open = %v, want *UnfoldedError naming %s", err, path+store.JournalSuffix)
	}
	var n int
	err = store.Files{Path: path}.View(func(tx *store.Tx) error {
		all, err := tx.Invocations(0)
		n = len(all)
		return err
	})
	if err != nil || n != 3 {
		t.Fatalf("Files.View = %d invocations, %v; want 3", n, err)
	}
	s, err := store.Open(path, store.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("a read-only open after the journal was applied: %v", err)
	}
	s.Close()
}

// TestJournalOfAnotherStore: a journal beside a store that is not its
// own (the store was replaced by a new one) is set aside, not applied,
// and a new one is made.
func TestJournalOfAnotherStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rukh.db")
	p := startHelper(t, "journal-and-hang", path, true)
	p.kill(t)
	journal := path + store.JournalSuffix
	old, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(path, store.Options{Timeout: time.Second, Recreate: true, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := invocations(t, s); len(got) != 0 {
		t.Errorf("the new store has %d invocations from another store's journal", len(got))
	}
	aside, err := os.ReadFile(journal + ".aside")
	if err != nil || !bytes.Equal(aside, old) {
		t.Fatalf("the other store's journal was not set aside whole (%v)", err)
	}
	if err := s.JournalBegin(journalInv(9, "agent"), 8, alive); err != nil {
		t.Fatalf("the new journal: %v", err)
	}
}

// TestStoreRemovedUnderAJournal: when the store file is removed under a
// journaled store, the record being appended is not acknowledged, and
// the copy saved aside holds every record acknowledged before it.
func TestStoreRemovedUnderAJournal(t *testing.T) {
	path, s := openJournaled(t)
	defer s.Close()
	if err := s.JournalBegin(journalInv(1, "agent"), 8, alive); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.JournalFinish(journalInv(1, "").ID, &store.Finish{Outcome: "succeeded"}, t0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var replaced *store.ReplacedError
	if err := s.JournalBegin(journalInv(2, "agent"), 8, alive); !errors.As(err, &replaced) || replaced.Recovered == "" {
		t.Fatalf("JournalBegin after the store was removed = %v, want *ReplacedError with a copy", err)
	}
	s.Close()
	if err := os.Rename(replaced.Recovered, path); err != nil {
		t.Fatal(err)
	}
	back, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	got := invocations(t, back)
	if inv := got[journalInv(1, "").ID]; inv == nil || inv.Outcome != "succeeded" {
		t.Fatalf("the recovered store holds %+v, want invocation 1 succeeded", inv)
	}
	if err := storetest.Check(back); err != nil {
		t.Fatal(err)
	}
}

// TestJournalRemovedUnderAStore: a journal removed while the store is
// open has what it held folded into the store at once; nothing more is
// appended to it, and nothing acknowledged is lost.
func TestJournalRemovedUnderAStore(t *testing.T) {
	path, s := openJournaled(t)
	defer s.Close()
	if err := s.JournalBegin(journalInv(1, "agent"), 8, alive); err != nil {
		t.Fatal(err)
	}
	before := storeBytes(t, path)
	if err := os.Remove(path + store.JournalSuffix); err != nil {
		t.Fatal(err)
	}
	if err := s.JournalBegin(journalInv(2, "agent"), 8, alive); err != nil {
		t.Fatalf("the append that finds its journal removed: %v", err)
	}
	if bytes.Equal(before, storeBytes(t, path)) {
		t.Fatal("the store file did not change: the removed journal's records were not folded into it")
	}
	if err := s.JournalBegin(journalInv(3, "agent"), 8, alive); !errors.Is(err, store.ErrNotJournaled) {
		t.Fatalf("an append after = %v, want ErrNotJournaled", err)
	}
	if _, err := os.Lstat(path + store.JournalSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the removed journal is back: %v", err)
	}
	if got := invocations(t, s); len(got) != 2 {
		t.Fatalf("%d invocations, want 2", len(got))
	}
}

// TestLostHeaderAfterAFold simulates a power cut after a fold: the fold's
// commit is on the disk, and so are entries appended after it that were
// never acknowledged, but not the journal's new header. The next daemon
// starts the same generation number again; what it acknowledges is
// replayed after its own kill, and the lost header's entries, although
// they lie right after its own, are not.
func TestLostHeaderAfterAFold(t *testing.T) {
	path, s := openJournaled(t)
	journal := path + store.JournalSuffix
	for n := 1; n <= 3; n++ {
		if err := s.JournalBegin(journalInv(n, "agent"), 1<<20, alive); err != nil {
			t.Fatal(err)
		}
	}
	oldHeader := make([]byte, 64)
	copy(oldHeader, storeBytes(t, journal))
	mustUpdate(t, s, func(*store.Tx) error { return nil }) // folds the three
	for n := 100; n < 120; n++ {                           // never acknowledged: the power went
		if err := s.JournalBegin(journalInv(n, "agent"), 1<<20, alive); err != nil {
			t.Fatal(err)
		}
	}
	disk := storeBytes(t, journal)
	copy(disk, oldHeader) // the new header never reached the disk
	committed := storeBytes(t, path)
	s.Close()
	if err := os.WriteFile(journal, disk, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, committed, 0o600); err != nil {
		t.Fatal(err)
	}

	// The next daemon: the same generation number, its own entries over
	// the first of the lost ones.
	s, err := store.Open(path, store.Options{Timeout: time.Second, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := invocations(t, s); len(got) != 3 {
		t.Fatalf("on reopening: %d invocations, want the 3 folded", len(got))
	}
	for n := 200; n < 205; n++ {
		if err := s.JournalBegin(journalInv(n, "agent"), 1<<20, alive); err != nil {
			t.Fatal(err)
		}
	}
	killedJournal, killedStore := storeBytes(t, journal), storeBytes(t, path) // killed here
	s.Close()
	if err := os.WriteFile(journal, killedJournal, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, killedStore, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := invocations(t, s)
	for id := range got {
		if id >= fmt.Sprintf("%032x", 100) && id < fmt.Sprintf("%032x", 120) {
			t.Errorf("an entry written under the lost header is replayed: %s", id)
		}
	}
	if len(got) != 8 {
		t.Fatalf("%d invocations, want the 3 folded and the 5 acknowledged", len(got))
	}
}

// TestRetentionAcrossFolds: the last MaxFinishedInvocations finished
// records are kept, exactly, however many begin records one transaction
// holds: a fold of the journal, a Batch of several calls. (bbolt's
// Bucket.Stats counts what was committed before the transaction, so
// each begin of one pruned the same excess again.)
func TestRetentionAcrossFolds(t *testing.T) {
	path, s := openJournaled(t)
	n := 0
	call := func() {
		t.Helper()
		n++
		inv := journalInv(n, "agent")
		if err := s.JournalBegin(inv, 1<<20, alive); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.JournalFinish(inv.ID, &store.Finish{Outcome: "succeeded"}, t0); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	for range store.MaxFinishedInvocations + 300 {
		call()
	}
	// A Batch-like transaction of many begins, after the journal's.
	mustUpdate(t, s, func(tx *store.Tx) error {
		for range 40 {
			n++
			inv := journalInv(n, "agent")
			if err := tx.BeginInvocation(inv, 1<<20, alive, t0); err != nil {
				return err
			}
			if _, err := tx.FinishInvocation(inv.ID, "succeeded", "", 0, "", t0); err != nil {
				return err
			}
		}
		return nil
	})
	for range 100 {
		call()
	}
	s = reopen(t, s, path)
	defer s.Close()
	// One more begin prunes what the last transactions left beyond it.
	mustUpdate(t, s, func(tx *store.Tx) error { n++; return tx.BeginInvocation(journalInv(n, "agent"), 8, alive, t0) })
	got := invocations(t, s)
	finished, newest := 0, 0
	for id, inv := range got {
		if !inv.Open() {
			finished++
		}
		var k int
		fmt.Sscanf(id, "%x", &k)
		newest = max(newest, k)
	}
	if finished != store.MaxFinishedInvocations || newest != n {
		t.Fatalf("%d finished records kept, the newest %d; want %d, the newest %d", finished, newest, store.MaxFinishedInvocations, n)
	}
	for k := n - store.MaxFinishedInvocations; k < n; k++ {
		if got[journalInv(k, "").ID] == nil {
			t.Fatalf("invocation %d, one of the last %d, was pruned", k, store.MaxFinishedInvocations)
		}
	}
}

// killedJournal records six begin records and the outcome of the first
// in a journaled store, and leaves its files as a killed daemon would:
// nothing folded. It returns the store's path and the journal's bytes
// with the offsets at which its entries start.
func killedJournal(t *testing.T) (path string, journal []byte, entries []int) {
	t.Helper()
	path, s := openJournaled(t)
	for n := 1; n <= 6; n++ {
		if err := s.JournalBegin(journalInv(n, "agent"), 1<<20, alive); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.JournalFinish(journalInv(1, "agent").ID, &store.Finish{Outcome: "succeeded"}, t0); err != nil {
		t.Fatal(err)
	}
	journal, committed := storeBytes(t, path+store.JournalSuffix), storeBytes(t, path)
	s.Close()
	if err := os.WriteFile(path, committed, 0o600); err != nil {
		t.Fatal(err)
	}
	for off := 64; binary.BigEndian.Uint32(journal[off:]) != 0; off += 16 + int(binary.BigEndian.Uint32(journal[off:])) {
		entries = append(entries, off)
	}
	if len(entries) != 7 {
		t.Fatalf("the journal holds %d entries, want 7", len(entries))
	}
	return path, journal, entries
}

// TestJournalGap: unreadable bytes between whole entries of a journal (a
// block the disk lost) cost only the entries in them. Every whole entry
// after them is applied too, after a copy of the journal is kept beside
// it for the owner (JournalCopies, which rukh doctor lists): never
// silently cut short. A torn last entry, which every crash may leave, is
// no gap. The open that applies it may be a daemon's (Journal), which
// then starts the journal over.
func TestJournalGap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(journal []byte, entries []int) []byte
		lost    []int // the calls whose begin record is lost
		copies  int
		journal bool // opened as rukhd opens it
	}{
		{"an entry's bytes flipped", func(b []byte, e []int) []byte { b[e[2]+20] ^= 0xff; return b }, []int{3}, 1, false},
		{"an entry zeroed", func(b []byte, e []int) []byte { clear(b[e[2]:e[3]]); return b }, []int{3}, 1, false},
		{"two entries zeroed, from within the first", func(b []byte, e []int) []byte { clear(b[e[1]+3 : e[3]]); return b }, []int{2, 3}, 1, false},
		{"an entry zeroed, opened by rukhd", func(b []byte, e []int) []byte { clear(b[e[2]:e[3]]); return b }, []int{3}, 1, true},
		{"the first entry's head zeroed", func(b []byte, e []int) []byte { clear(b[e[0] : e[0]+16]); return b }, []int{1}, 1, false},
		{"the first entry's salt flipped", func(b []byte, e []int) []byte { b[e[0]+9] ^= 0xff; return b }, []int{1}, 1, false},
		{"a torn last entry", func(b []byte, e []int) []byte { clear(b[e[6]+20 : e[6]+30]); return b }, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, journal, entries := killedJournal(t)
			damaged := tc.damage(journal, entries)
			if err := os.WriteFile(path+store.JournalSuffix, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			opts := store.Options{Timeout: time.Second, Journal: tc.journal}
			s, err := store.Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := invocations(t, s)
			if tc.journal {
				// rukhd's open started the journal over: a call after the
				// gap is journaled and read like any other.
				if err := s.JournalBegin(journalInv(7, "agent"), 1<<20, alive); err != nil {
					t.Fatal(err)
				}
				if got = invocations(t, s); got[journalInv(7, "agent").ID] == nil {
					t.Error("a call journaled after the gap is not read")
				}
			}
			s.Close()
			checkGapRecords(t, got, tc.lost, tc.journal)
			copies := store.JournalCopies(path)
			if len(copies) != tc.copies {
				t.Fatalf("journals kept aside: %q, want %d", copies, tc.copies)
			}
			if tc.copies > 0 {
				if kept := storeBytes(t, copies[0]); !bytes.Equal(kept, damaged) {
					t.Error("the copy kept aside is not the damaged journal, whole")
				}
			}
			// A second open applies nothing more and keeps no other copy.
			s, err = store.Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if again := invocations(t, s); len(again) != len(got) {
				t.Errorf("a second open finds %d invocations, the first %d", len(again), len(got))
			}
			if again := store.JournalCopies(path); len(again) != tc.copies {
				t.Errorf("a second open leaves %q aside", again)
			}
		})
	}
}

// checkGapRecords checks that every call but the lost ones is recorded,
// and that the first call's outcome, written after the gap, is applied.
func checkGapRecords(t *testing.T, got map[string]*store.Invocation, lost []int, extra bool) {
	t.Helper()
	want := 6 - len(lost)
	if extra {
		want++
	}
	for n := 1; n <= 6; n++ {
		inv, ok := got[journalInv(n, "agent").ID]
		if slices.Contains(lost, n) {
			if ok {
				t.Errorf("invocation %d, whose entry is damaged, is recorded", n)
			}
		} else if !ok {
			t.Errorf("invocation %d is lost", n)
		} else if n == 1 && lost != nil && (inv == nil || inv.Outcome != "succeeded") {
			t.Errorf("the first call's outcome, written after the gap, is not applied: %+v", inv)
		}
	}
	if len(got) != want {
		t.Errorf("%d invocations, want %d", len(got), want)
	}
}

// TestJournalGapWithoutRoom: when no copy of a journal with a gap can be
// kept (ten copies exist already), the open fails saying so and applies
// nothing, and the journal is left as it was; once there is room, the
// next open keeps the copy and applies it. Nothing is lost either way.
func TestJournalGapWithoutRoom(t *testing.T) {
	path, journal, entries := killedJournal(t)
	clear(journal[entries[2]:entries[3]])
	if err := os.WriteFile(path+store.JournalSuffix, journal, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		name := path + store.JournalSuffix + ".aside"
		if i > 0 {
			name += fmt.Sprintf(".%d", i)
		}
		if err := os.WriteFile(name, []byte("an earlier copy"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := storeBytes(t, path)
	_, err := store.Open(path, store.Options{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "nothing of it is applied until one can") || !strings.Contains(err.Error(), "nine numbered copies exist already") {
		t.Fatalf("open with no room for a copy: %v", err)
	}
	if !bytes.Equal(storeBytes(t, path), before) || !bytes.Equal(storeBytes(t, path+store.JournalSuffix), journal) {
		t.Fatal("the refused open changed the store or the journal")
	}
	for _, c := range store.JournalCopies(path)[:3] {
		if err := os.Remove(c); err != nil {
			t.Fatal(err)
		}
	}
	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkGapRecords(t, invocations(t, s), []int{3}, false)
	if copies := store.JournalCopies(path); len(copies) != 8 {
		t.Errorf("%d copies, want the 7 left and the new one", len(copies))
	}
}
