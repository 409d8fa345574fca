package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func testInv(n int) *Invocation {
	return &Invocation{ID: fmt.Sprintf("%032x", n), Identity: "acme.deploy/status", Task: "agent", PID: os.Getpid(),
		StartedAt: time.Unix(int64(n), 0).UTC()}
}

func always(*Invocation) bool { return true }

// failSync has the journal's fdatasync run before, then fail with EIO,
// for the rest of the test.
func failSync(t *testing.T, before func()) {
	t.Helper()
	fdatasync = func(int) error {
		if before != nil {
			before()
		}
		return unix.EIO
	}
	t.Cleanup(func() { fdatasync = unix.Fdatasync })
}

// returns runs fn, failing the test if it has not returned within 10 s
// (a deadlock).
func returns(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s has not returned after 10 s", what)
	}
}

func openJournaledStore(t *testing.T) (string, *Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rukh.db")
	s, err := Open(path, Options{Timeout: time.Second, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return path, s
}

func countInvocations(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.View(func(tx *Tx) error {
		all, err := tx.Invocations(0)
		n = len(all)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFailedSync: a begin record whose fdatasync fails is not
// acknowledged and is taken back (ErrNotJournaled: Batch records it,
// once); the journal takes nothing more, since no later fdatasync
// proves anything; an outcome whose fdatasync fails stays pending and
// Batch's commit finds it there.
func TestFailedSync(t *testing.T) {
	path, s := openJournaledStore(t)
	if err := s.JournalBegin(testInv(1), 8, always); err != nil {
		t.Fatal(err)
	}
	failSync(t, nil)
	inv := testInv(2)
	if err := s.JournalBegin(inv, 8, always); !errors.Is(err, ErrNotJournaled) {
		t.Fatalf("a begin whose sync fails = %v, want ErrNotJournaled", err)
	}
	if err := s.Batch(func(tx *Tx) error { return tx.BeginInvocation(inv, 8, always, time.Now()) }); err != nil {
		t.Fatalf("Batch after it: %v", err)
	}
	fdatasync = unix.Fdatasync // the disk is fine again; the journal stays stopped
	if err := s.JournalBegin(testInv(3), 8, always); !errors.Is(err, ErrNotJournaled) {
		t.Fatalf("a begin after a failed sync = %v, want ErrNotJournaled", err)
	}
	if _, err := s.JournalFinish(testInv(1).ID, &Finish{Outcome: "succeeded"}, time.Now()); !errors.Is(err, ErrNotJournaled) {
		t.Fatalf("an outcome after a failed sync = %v, want ErrNotJournaled", err)
	}
	if n := countInvocations(t, s); n != 2 {
		t.Fatalf("%d invocations, want 2", n)
	}
	s.Close()
	s, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countInvocations(t, s); n != 2 {
		t.Fatalf("after reopening: %d invocations, want 2 (the begin taken back is not there twice)", n)
	}
}

// TestFailedSyncAfterAFold: an entry folded while its fdatasync failed
// is durable in the store and acknowledged; when the journal or the
// store was removed meanwhile, the acknowledgement's checks (which fold
// and save aside) do not wait for the journal's lock the call holds.
func TestFailedSyncAfterAFold(t *testing.T) {
	for _, remove := range []string{"", JournalSuffix} {
		t.Run("remove store.db"+remove, func(t *testing.T) {
			path, s := openJournaledStore(t)
			failSync(t, func() {
				if err := s.fold(txMode{}); err != nil {
					t.Errorf("fold: %v", err)
				}
				if err := os.Remove(path + remove); err != nil {
					t.Error(err)
				}
			})
			var err error
			returns(t, "JournalBegin", func() { err = s.JournalBegin(testInv(1), 8, always) })
			var replaced *ReplacedError
			switch {
			case remove == "" && !errors.As(err, &replaced):
				t.Fatalf("with the store removed: %v, want *ReplacedError", err)
			case remove != "" && err != nil:
				t.Fatalf("with the journal removed: %v, want it acknowledged (folded)", err)
			}
			returns(t, "Close", func() { s.Close() })
		})
	}
}

// TestNestedReads: a read inside a read or a write does not wait for
// the journal's lock.
func TestNestedReads(t *testing.T) {
	_, s := openJournaledStore(t)
	if err := s.JournalBegin(testInv(1), 8, always); err != nil {
		t.Fatal(err)
	}
	returns(t, "a View inside a View", func() {
		_ = s.View(func(*Tx) error { return s.View(func(*Tx) error { return nil }) })
	})
	returns(t, "an append inside a View", func() {
		_ = s.View(func(*Tx) error { return s.JournalBegin(testInv(2), 8, always) })
	})
	if n := countInvocations(t, s); n != 2 {
		t.Fatalf("%d invocations, want 2", n)
	}
}

// TestHeaderSum: the header's bitwise CRC is CRC-32C.
func TestHeaderSum(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("123456789"), journalHeader{tag: [16]byte{1, 2}, gen: 3, salt: 4}.bytes()[:48]} {
		if got, want := headerSum(b), crc32.Checksum(b, castagnoli()); got != want {
			t.Errorf("headerSum(%x) = %08x, want %08x", b, got, want)
		}
	}
	if got := headerSum([]byte("123456789")); got != 0xe3069283 { // the check value of CRC-32C
		t.Errorf("headerSum(123456789) = %08x, want e3069283", got)
	}
}
