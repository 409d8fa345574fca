package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWedgedStore: once a transaction could not be ended (bbolt may still
// hold its writer lock), every later transaction fails at once with the
// damage, and Close returns without waiting for bbolt.
func TestWedgedStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rukh.db")
	s, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Hold bbolt's writer lock, as a transaction that never ended would.
	btx, err := s.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	defer btx.Rollback()
	s.wedge("page 7 already freed")
	want := "the store at " + s.path + " is damaged: bbolt could not end a transaction on it after: bbolt could not read it: page 7 already freed; " + Recovery()
	for _, fn := range []func(func(*Tx) error) error{s.View, s.Update} {
		done := make(chan error, 1)
		go func() { done <- fn(func(*Tx) error { return nil }) }()
		select {
		case err := <-done:
			var ce *CorruptError
			if !errors.As(err, &ce) || err.Error() != want {
				t.Fatalf("err = %v, want %q", err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a transaction on a wedged store waits")
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil && !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close of a wedged store waits for bbolt")
	}
}

// TestTruncatedUnderOpenStore: the file of an open store (a daemon's) is
// truncated under it. Reading its map then faults inside bbolt's Begin,
// which has taken bbolt's meta and map locks; the read is the damage, and
// so is every transaction after it, at once, and Close returns — nothing
// waits on the locks the failed Begin left held.
func TestTruncatedUnderOpenStore(t *testing.T) {
	for _, size := range []int64{0, 100, 4096} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rukh.db")
			s, err := Open(path, Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			for i, fn := range []func(func(*Tx) error) error{s.View, s.View, s.Update, s.View} {
				done := make(chan error, 1)
				go func() { done <- fn(func(tx *Tx) error { _, err := tx.ActiveNumber(); return err }) }()
				select {
				case err := <-done:
					var ce *CorruptError
					if !errors.As(err, &ce) {
						t.Fatalf("transaction %d: err = %v, want *CorruptError", i, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("transaction %d on a truncated store still waits after 10 s", i)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("Close of a truncated store still waits after 10 s")
			}
		})
	}
}

// A damage found inside a check (a record's own *CorruptError, joined with
// others) is said once: the outer error names the store and the recovery.
func TestNestedDamageSaidOnce(t *testing.T) {
	inner := errors.Join(
		&CorruptError{Bucket: "routes", Key: "3", Err: errors.New("bad route")},
		&CorruptError{Bucket: "revisions", Key: "2", Err: errors.New("bad profile")})
	got := (&CorruptError{Path: "/s.db", Err: inner}).Error()
	want := "the store at /s.db is damaged: record routes/3 is corrupt: bad route\nrecord revisions/2 is corrupt: bad profile; " + Recovery()
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
