package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// beaconHang bounds a wait for a notification: a hang guard, never a
// budget.
const beaconHang = 15 * time.Second

func next(t *testing.T, ch <-chan uint64, what string) uint64 {
	t.Helper()
	select {
	case n, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the channel closed", what)
		}
		return n
	case <-time.After(beaconHang):
		t.Fatalf("%s: no revision reported within %s", what, beaconHang)
		return 0
	}
}

// Every revision published after WatchRevisions starts is reported, by
// number, whichever store handle published it; writes that publish
// nothing (a record) are not; a reader behind gets the newest number
// only; the channel closes when ctx ends.
func TestWatchRevisions(t *testing.T) {
	path, s := openPath(t)
	defer s.Close()
	publish(t, s, "before", []*store.Release{release("acme.a", "1.0.0")}, "a run")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := store.WatchRevisions(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	n := publish(t, s, "one", []*store.Release{release("acme.a", "1.0.1")}, "a run")
	if got := next(t, ch, "after one publish"); got != n {
		t.Errorf("reported %d, want %d", got, n)
	}

	// A write that publishes nothing changes no beacon; the next publish
	// is what comes next.
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.PutRelease(release("acme.b", "1.0.0")) })
	n = publish(t, s, "two", []*store.Release{release("acme.a", "1.0.2")}, "a run")
	if got := next(t, ch, "after a release and a publish"); got != n {
		t.Errorf("reported %d, want %d (nothing for the release alone)", got, n)
	}

	// Three revisions while nobody reads: the newest is reported, never
	// an older one after it.
	var last uint64
	for _, v := range []string{"1.0.3", "1.0.4", "1.0.5"} {
		last = publish(t, s, "burst", []*store.Release{release("acme.a", v)}, "a run")
	}
	for got := next(t, ch, "after a burst"); got != last; got = next(t, ch, "after a burst") {
		if got > last {
			t.Fatalf("reported %d, after the last revision %d", got, last)
		}
	}

	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			// One may have been in flight; the close follows.
			if _, ok := <-ch; ok {
				t.Error("reports after ctx ended")
			}
		}
	case <-time.After(beaconHang):
		t.Fatal("the channel did not close after ctx ended")
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(path), store.BeaconDir, store.BeaconFile))
	if err != nil || string(data) != "6\n" {
		t.Errorf("beacon %q, %v; want the last revision, 6", data, err)
	}
}

// A watcher on a data directory it cannot make fails, saying why.
func TestWatchRevisionsUnwatchable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, store.BeaconDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.WatchRevisions(context.Background(), filepath.Join(dir, "rukh.db"))
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("err %v", err)
	}
}
