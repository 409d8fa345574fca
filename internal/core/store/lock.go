package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// LockSuffix names the store's lock file: store.db.lock beside store.db.
//
// bbolt's own lock wait polls flock(LOCK_NB) every 50 ms, so under
// contention a waiter only gets in when its poll happens to land in a gap
// between other holders: a burst of calls starves some of them until they
// time out. Open therefore first takes this file's lock with a blocking
// flock — the kernel wakes waiters as soon as the lock is released — and
// only then opens the bbolt file, whose lock is free by then unless
// something that does not know the lock file holds it. The lock file is
// never removed: removing it would let two processes lock two different
// files.
const LockSuffix = ".lock"

// sidecarLock takes the lock file of the store at path (abs): shared for a
// read-only open, exclusive otherwise, waiting at most timeout. The
// returned file holds the lock until it is closed; nil with a nil error
// means a read-only open could not open the lock file (a read-only
// directory) and relies on bbolt's lock alone.
//
// When the timeout fires first the call returns *LockedError at once; the
// flock it started stays blocked in a goroutine and releases the lock as
// soon as it gets it, so an abandoned wait never holds up the queue.
func sidecarLock(path string, readOnly bool, timeout time.Duration) (*os.File, error) {
	name := path + LockSuffix
	f, err := openFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil && readOnly {
		f, err = openFile(name, os.O_RDONLY, 0)
		if err != nil {
			return nil, nil
		}
	}
	if err != nil {
		return nil, &UnavailableError{Path: name, Err: err}
	}
	how := syscall.LOCK_EX
	if readOnly {
		how = syscall.LOCK_SH
	}
	fd := int(f.Fd())
	// Uncontended: no goroutine, no timer.
	switch err := flock(fd, how|syscall.LOCK_NB); {
	case err == nil:
		return f, nil
	case !errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	got := make(chan error, 1)
	go func() { got <- flock(fd, how) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		return f, nil
	case <-timer.C:
		go func() {
			<-got
			f.Close() // releases the lock if the wait got it
		}()
		return nil, &LockedError{Path: path}
	}
}

// flock is flock(2), restarted when a signal interrupts it.
func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// statStore reports a missing store file for a read-only open, which
// must not create it (nor its lock file).
func statStore(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no store at %s: %w", path, err)
	}
	return nil
}
