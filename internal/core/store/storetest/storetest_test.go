package storetest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// fakeTB records what Open asks of its test.
type fakeTB struct {
	testing.TB
	dir      string
	cleanups []func()
	errs     []string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) TempDir() string   { return f.dir }
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestOpenChecksAndCloses(t *testing.T) {
	f := &fakeTB{TB: t, dir: t.TempDir()}
	s := storetest.Open(f)
	if err := s.Update(func(tx *store.Tx) error {
		_, err := tx.AppendAudit(&store.AuditEntry{Op: "test"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	f.cleanup()
	if len(f.errs) != 0 {
		t.Fatalf("a consistent store was reported: %q", f.errs)
	}
	// The cleanup released the lock.
	s2, err := store.Open(s.Path(), store.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

func TestOpenReportsProblems(t *testing.T) {
	f := &fakeTB{TB: t, dir: t.TempDir()}
	s := storetest.Open(f)
	s.Close() // Check cannot run on a closed store
	f.cleanup()
	if len(f.errs) == 0 {
		t.Fatal("the cleanup reported nothing")
	}
}
