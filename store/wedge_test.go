package store

import (
	"errors"
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
	want := "the store at " + s.path + " is damaged: bbolt could not end a transaction on it after: bbolt failed reading it: page 7 already freed; " + Recovery
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
