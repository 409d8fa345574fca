package store_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// activeIn is the active revision of the closed store at path.
func activeIn(t *testing.T, path string) uint64 {
	t.Helper()
	s, err := store.Open(path, store.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n uint64
	if err := s.View(func(tx *store.Tx) error {
		n, err = tx.ActiveNumber()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// requireReplaced requires err to be the *ReplacedError for path saying
// what, with the open file saved aside.
func requireReplaced(t *testing.T, err error, path, what string) *store.ReplacedError {
	t.Helper()
	var r *store.ReplacedError
	if !errors.As(err, &r) || r.Path != path || r.What != what || !store.Unwritable(err) {
		t.Fatalf("err = %v, want a *ReplacedError: %s %s", err, path, what)
	}
	if r.Recovered != path+store.RecoveredSuffix || !strings.Contains(err.Error(), "saved in "+r.Recovered) {
		t.Fatalf("the open file was not saved aside: %v", err)
	}
	return r
}

// TestHeldStoreRemovedOrReplaced removes store.db under a held store, or
// puts a directory or another file in its place, before a write and while
// one commits: the write is not acknowledged (*ReplacedError, which
// Unwritable counts), neither is any after it, nothing is written over
// what is at the path now, and what the open file held — every
// acknowledged change — is saved beside it. Before, every commit went on
// succeeding into the unlinked file, and all of it was lost when the
// daemon stopped.
func TestHeldStoreRemovedOrReplaced(t *testing.T) {
	for _, tc := range []struct {
		name, what string
		replace    func(t *testing.T, path string)
		duringTx   bool
	}{
		{"removed", "was removed", func(t *testing.T, path string) { os.Remove(path) }, false},
		{"removed while it commits", "was removed", func(t *testing.T, path string) { os.Remove(path) }, true},
		{"replaced by a directory", "was replaced by a directory", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced by another file", "was replaced by another file", func(t *testing.T, path string) {
			if err := os.WriteFile(path+".other", []byte("other"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".other", path); err != nil {
				t.Fatal(err)
			}
		}, true},
		// Still linked, under another name: only the path says so.
		{"moved aside", "was removed", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced by a symlink to itself", "was replaced by something that is not a regular file", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(path+".old", path); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, s := openPath(t)
			h := store.NewHeld(s)
			t.Cleanup(func() { h.Release() })
			rels := []*store.Release{release("acme.deploy", "1.0.0")}
			publish(t, s, "first", rels, "deploy status")
			if err := h.Replaced(); err != nil {
				t.Fatalf("Replaced on an intact store: %v", err)
			}
			if !tc.duringTx {
				tc.replace(t, path)
			}
			err := h.Batch(func(tx *store.Tx) error {
				if tc.duringTx {
					tc.replace(t, path)
				}
				_, err := tx.PublishRevision(candidate(1, "second", rels, "deploy status"))
				return err
			})
			r := requireReplaced(t, err, path, tc.what)
			if !strings.Contains(err.Error(), "while rukhd had it open") || !strings.Contains(err.Error(), "daemon stop") {
				t.Errorf("the message does not say who had it open and what to do: %v", err)
			}
			// Every later write is refused, status sees it, and the copy
			// is made once.
			if err := h.Update(func(*store.Tx) error { return nil }); !errors.Is(err, r) && !errors.As(err, new(*store.ReplacedError)) {
				t.Errorf("a later write: %v", err)
			}
			if err := h.Replaced(); err == nil {
				t.Error("Replaced says nothing")
			}
			if _, err := os.Stat(path + store.RecoveredSuffix + ".1"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a second copy was made: %v", err)
			}
			// The copy holds every acknowledged change (revision 1); a
			// change refused before it began is not in it.
			got := activeIn(t, r.Recovered)
			if got < 1 || !tc.duringTx && got != 1 {
				t.Errorf("the copy's active revision is %d", got)
			}
			// What is at the path now is left as it is.
			if tc.what == "was replaced by another file" {
				if b, _ := os.ReadFile(path); string(b) != "other" {
					t.Errorf("the file now at the path was written: %q", b)
				}
			}
		})
	}
}

// TestFilesStoreRemovedWhileItCommits: the in-process host's store (open,
// one transaction, close) removed while its one write commits does not
// acknowledge the write either.
func TestFilesStoreRemovedWhileItCommits(t *testing.T) {
	path, s := openPath(t)
	publish(t, s, "first", []*store.Release{release("acme.deploy", "1.0.0")}, "deploy status")
	s.Close()
	err := store.Files{Path: path}.Update(func(*store.Tx) error { return os.Remove(path) })
	r := requireReplaced(t, err, path, "was removed")
	if !strings.Contains(err.Error(), "while this rukh command had it open") {
		t.Errorf("the message does not say who had it open: %v", err)
	}
	if got := activeIn(t, r.Recovered); got != 1 {
		t.Errorf("the copy's active revision is %d, want 1", got)
	}
}
