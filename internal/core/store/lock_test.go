package store_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// A waiter gets the store as soon as its holder lets go — it is woken by
// the kernel, not by a 50 ms poll (bbolt's own wait), which under
// contention lets a waiter miss every gap between other holders until it
// times out. The kernel lists a waiter that sleeps in flock(2) in
// /proc/locks (a "->" line on the lock file's inode); a poller would never
// appear there. So: wait for that line, release, and the waiter gets in.
func TestLockWaiterWakesOnRelease(t *testing.T) {
	path, s := openPath(t)
	s.Close()
	for round := range 3 {
		holder, err := store.Open(path, store.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		opened := make(chan error, 1)
		go func() {
			w, err := store.Open(path, store.Options{Timeout: time.Minute})
			if err == nil {
				w.Close()
			}
			opened <- err
		}()
		waitBlockedFlock(t, path+store.LockSuffix)
		holder.Close()
		select {
		case err := <-opened:
			if err != nil {
				t.Fatalf("round %d: the waiter: %v", round, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the waiter did not get the store within 30 s of its release", round)
		}
	}
}

// waitBlockedFlock waits until the kernel lists a process blocked in
// flock(2) on the file at path.
func waitBlockedFlock(t *testing.T, path string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	// /proc/locks names a file major:minor:inode, the device numbers in hex.
	ino := fmt.Sprintf(":%d ", st.Ino)
	for range 3000 { // 30 s
		locks, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(locks), "\n") {
			if strings.Contains(line, "-> FLOCK") && strings.Contains(line, ino) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process blocked in flock(2) on %s after 30 s (/proc/locks)", path)
}

// Readers share the lock file; a writer waits for them, and gets in as
// soon as the last one closes.
func TestLockReadersShareWriterWaits(t *testing.T) {
	path, s := openPath(t)
	s.Close()
	r1, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := store.Open(path, store.Options{Timeout: 5 * time.Second})
		if err == nil {
			w.Close()
		}
		done <- err
	}()
	r1.Close()
	// The writer sleeps in the kernel while r2 still holds the store.
	waitBlockedFlock(t, path+store.LockSuffix)
	select {
	case err := <-done:
		t.Fatalf("the writer got in while a reader held the store: %v", err)
	default:
	}
	r2.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the writer did not get in once the readers closed")
	}
}

// A wait that timed out leaves nothing behind: when the holder lets go,
// the abandoned flock releases the lock file as soon as it gets it.
func TestLockAbandonedWaitReleases(t *testing.T) {
	path, holder := openPath(t)
	for range 3 {
		_, err := store.Open(path, store.Options{Timeout: 50 * time.Millisecond})
		var le *store.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("err = %v, want *LockedError", err)
		}
	}
	holder.Close()
	s, err := store.Open(path, store.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
	s.Close()
}

// The lock file sits beside the store, private, and is kept.
func TestLockFile(t *testing.T) {
	path, s := openPath(t)
	fi, err := os.Stat(path + store.LockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", fi.Name(), fi.Mode())
	}
	s.Close()
	if _, err := os.Stat(path + store.LockSuffix); err != nil {
		t.Errorf("the lock file went away on Close: %v", err)
	}

	// A read-only open of a missing store creates nothing.
	missing := filepath.Join(t.TempDir(), "rukh.db")
	if _, err := store.Open(missing, store.Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(missing + store.LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only open of a missing store created its lock file: %v", err)
	}
}

// A read-only store in a directory it cannot write (so no lock file can
// be created) still opens, on bbolt's lock alone.
func TestLockReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	path, s := openPath(t)
	s.Close()
	if err := os.Remove(path + store.LockSuffix); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	r, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// A process that holds bbolt's lock without the lock file (an older
// build, a bbolt tool) still bounds the wait, and the refused Open lets
// go of the lock file so the next waiter is not held up by it.
func TestLockForeignBoltHolder(t *testing.T) {
	path, s := openPath(t)
	s.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 2 {
		start := time.Now()
		_, err := store.Open(path, store.Options{Timeout: 200 * time.Millisecond})
		var le *store.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("err = %v, want *LockedError", err)
		}
		if elapsed := time.Since(start); elapsed < 200*time.Millisecond {
			t.Errorf("gave up after %v, before its 200ms timeout", elapsed)
		}
	}
}

// A held store keeps every other opener out until Release; then it opens
// the file per transaction, so it and another process take turns, and
// what either wrote the other reads.
func TestHeldRelease(t *testing.T) {
	path, s := openPath(t)
	h := store.NewHeld(s)
	t.Cleanup(func() { h.Release() })
	var le *store.LockedError
	if _, err := store.Open(path, store.Options{Timeout: 50 * time.Millisecond}); !errors.As(err, &le) {
		t.Fatalf("open while held: %v, want *LockedError", err)
	}
	if err := h.Update(func(tx *store.Tx) error { return tx.PutRelease(release("acme.one", "1.0.0")) }); err != nil {
		t.Fatal(err)
	}
	// Release waits for the transaction running on the store, then
	// closes it.
	released := make(chan error, 1)
	err := h.View(func(*store.Tx) error {
		go func() { released <- h.Release() }()
		for i := 0; h.Holding(); i++ {
			if i == 1e7 {
				t.Fatal("Release did not begin")
			}
			runtime.Gosched()
		}
		select {
		case err := <-released:
			t.Errorf("Release returned (%v) while a transaction ran on the store", err)
		default:
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := h.Release(); err != nil {
		t.Fatalf("a second Release: %v", err)
	}

	var other *store.Store
	other, err = store.Open(path, store.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("open after Release: %v", err)
	}
	err = other.Update(func(tx *store.Tx) error { return tx.PutRelease(release("acme.two", "1.0.0")) })
	other.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"acme.one", "acme.two"} {
		err := h.View(func(tx *store.Tx) error {
			_, err := tx.Release(digest(pkg + "@1.0.0"))
			return err
		})
		if err != nil {
			t.Errorf("reading %s through the released Held: %v", pkg, err)
		}
	}
}

// A Hold opens the store read-write at its first transaction and keeps
// everyone else out until Release, then runs each transaction as Files
// does. It never creates a store by reading and never opens one after
// Release; a lock it could not take within its timeout is that
// transaction's error, and the next transaction opens the file for
// itself.
func TestHold(t *testing.T) {
	t.Run("held from the first transaction until Release", func(t *testing.T) {
		path, s := openPath(t)
		s.Close()
		h := store.Hold(store.Files{Path: path})
		t.Cleanup(func() { h.Release() })
		if h.Holding() {
			t.Fatal("a Hold holds the store before its first transaction")
		}
		if err := h.View(func(tx *store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var le *store.LockedError
		if _, err := store.Open(path, store.Options{Timeout: 50 * time.Millisecond, ReadOnly: true}); !errors.As(err, &le) {
			t.Fatalf("a read-only open after a Hold's read: %v, want *LockedError", err)
		}
		if err := h.Update(func(tx *store.Tx) error { return tx.PutRelease(release("acme.one", "1.0.0")) }); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		other, err := store.Open(path, store.Options{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatalf("open after Release: %v", err)
		}
		err = other.View(func(tx *store.Tx) error {
			r, err := tx.Release(digest("acme.one@1.0.0"))
			if err == nil && r == nil {
				err = errors.New("missing")
			}
			return err
		})
		other.Close()
		if err != nil {
			t.Fatalf("the held write, read by another opener: %v", err)
		}
		if err := h.View(func(*store.Tx) error { return nil }); err != nil || h.Holding() {
			t.Fatalf("a read after Release: %v, holding %v; want one open per transaction", err, h.Holding())
		}
	})

	t.Run("no store is made by reading", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "data", "store.db")
		h := store.Hold(store.Files{Path: path})
		t.Cleanup(func() { h.Release() })
		var got *store.Tx
		err := h.View(func(tx *store.Tx) error { got = tx; return nil })
		if err != nil || got != nil || h.Holding() {
			t.Fatalf("a read of a home with no store: %v (tx %v, holding %v); want a nil Tx", err, got, h.Holding())
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the read made a store: %v", err)
		}
	})

	t.Run("released before its first transaction", func(t *testing.T) {
		path, s := openPath(t)
		s.Close()
		h := store.Hold(store.Files{Path: path})
		h.Release()
		if err := h.View(func(*store.Tx) error { return nil }); err != nil || h.Holding() {
			t.Fatalf("a read after Release: %v, holding %v", err, h.Holding())
		}
	})

	t.Run("a lock held elsewhere", func(t *testing.T) {
		path, s := openPath(t)
		h := store.Hold(store.Files{Path: path, Timeout: 100 * time.Millisecond})
		t.Cleanup(func() { h.Release() })
		var le *store.LockedError
		if err := h.View(func(*store.Tx) error { return nil }); !errors.As(err, &le) {
			t.Fatalf("a Hold's first read while another holds the store: %v, want *LockedError", err)
		}
		s.Close()
		if err := h.View(func(*store.Tx) error { return nil }); err != nil || h.Holding() {
			t.Fatalf("the next read, the store free: %v (holding %v); want one open for it", err, h.Holding())
		}
	})
}
