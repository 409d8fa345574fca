package invoke

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The pending-outcomes directory keeps a reserve of allocated disk space;
// a save that finds the disk full frees it and is written, so an outcome
// the store could not take is still kept.
func TestReserveForFullDisk(t *testing.T) {
	c := New(t.TempDir())
	c.keepReserve()
	reserve := filepath.Join(c.DataDir, PendingDir, reserveName)
	var st syscall.Stat_t
	if err := syscall.Stat(reserve, &st); err != nil || st.Blocks*512 < reserveSize {
		t.Fatalf("the reserve: %v, %d bytes allocated; want %d", err, st.Blocks*512, reserveSize)
	}
	full := true
	testHookSave = func() error {
		if _, err := os.Stat(reserve); err == nil && full {
			return &os.PathError{Op: "write", Path: "pending", Err: syscall.ENOSPC}
		}
		return nil
	}
	t.Cleanup(func() { testHookSave = func() error { return nil } })
	name, err := c.savePending(&pendingOutcome{ID: "0123456789abcdef0123456789abcdef", Outcome: "succeeded"})
	if err != nil {
		t.Fatalf("a save on a full disk with a reserve: %v", err)
	}
	if _, err := os.Stat(name); err != nil {
		t.Errorf("the saved outcome: %v", err)
	}
	if _, err := os.Stat(reserve); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reserve was not given up: %v", err)
	}
	// The space the reserve held serves the saves that follow.
	_, err = c.savePending(&pendingOutcome{ID: "1123456789abcdef0123456789abcdef", Outcome: "succeeded"})
	if err != nil {
		t.Errorf("a second save once the reserve is gone and the disk has room: %v", err)
	}
	full = false
	c.keepReserve()
	if _, err := os.Stat(reserve); err != nil {
		t.Errorf("the reserve was not made again: %v", err)
	}
}
