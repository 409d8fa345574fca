// Package storetest opens throwaway stores for tests and checks them
// when the test ends.
package storetest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// Timeout is the lock timeout of stores opened by Open: short, so a test
// that leaks a lock fails fast instead of hanging.
const Timeout = 200 * time.Millisecond

// Open opens a fresh store in t.TempDir(). When the test ends it checks
// the store (see Check), reporting problems as test errors, and closes
// it.
func Open(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "rukh.db"), store.Options{Timeout: Timeout})
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() {
		if err := Check(s); err != nil {
			t.Errorf("storetest: the store is inconsistent at the end of the test:\n%v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close: %v", err)
		}
	})
	return s
}

// Check reports every consistency problem of s: bbolt's page-level check
// and Rukh's invariants (store.Tx.Check), or nil.
func Check(s *store.Store) error {
	return s.Check()
}
