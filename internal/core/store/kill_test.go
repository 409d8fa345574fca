package store_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// TestKilledInsideUpdate kills a process in the middle of a write
// transaction that has already put a release and published a revision:
// after reopening, none of it is there and the store is consistent.
func TestKilledInsideUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path, s := openPath(t)
	base := release("acme.deploy", "1.0.0")
	publish(t, s, "install", []*store.Release{base}, "deploy status")
	s.Close()

	p := startHelper(t, "hang-in-update", path, true)
	p.kill(t)

	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := storetest.Check(s); err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *store.Tx) error {
		revs, err := tx.Revisions()
		if err != nil {
			return err
		}
		rels, err := tx.Releases()
		if err != nil {
			return err
		}
		audit, err := tx.Audit(0)
		if err != nil {
			return err
		}
		if len(revs) != 1 || len(rels) != 1 || len(audit) != 1 {
			t.Errorf("after the kill: %d revisions, %d releases, %d audit entries; want 1 each", len(revs), len(rels), len(audit))
		}
		if rt, _, _ := tx.ResolveRoute([]string{"partial", "run"}); rt != nil {
			t.Errorf("a route of the killed transaction resolves: %+v", rt)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// And the store takes the next revision normally.
	publish(t, s, "next", []*store.Release{base}, "deploy status")
}

// TestKilledWhilePublishing kills a process that publishes in a loop at
// a random moment, possibly during a commit, a few times over: the store
// stays consistent and every revision is whole.
func TestKilledWhilePublishing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path, s := openPath(t)
	s.Close()
	last := uint64(0)
	for round := range 3 {
		p := startHelper(t, "publish-loop", path, true)
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		p.kill(t)

		s, err := store.Open(path, store.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := storetest.Check(s); err != nil {
			s.Close()
			t.Fatalf("round %d: %v", round, err)
		}
		err = s.View(func(tx *store.Tx) error {
			active, err := tx.ActiveRevision()
			if err != nil {
				return err
			}
			if active == nil || active.Number <= last {
				t.Fatalf("round %d: active revision %+v did not advance past %d", round, active, last)
			}
			if len(active.Routes) != 3 || len(active.Packages) != 1 {
				t.Errorf("round %d: active revision is partial: %+v", round, active)
			}
			audit, err := tx.Audit(1)
			if err != nil {
				return err
			}
			if audit[0].Seq != active.Number || audit[0].New != active.Number {
				t.Errorf("round %d: last audit entry %+v does not match revision %d", round, audit[0], active.Number)
			}
			last = active.Number
			return nil
		})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}
