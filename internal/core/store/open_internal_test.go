package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckOpened: the file bbolt opened is read again only when it is
// not the file ensureStoreFile checked under the same lock; a file made
// since, or put in its place, is checked and its damage is a
// *CorruptError.
func TestCheckOpened(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "store.db")
	f, id := writeOpen(t, bad, make([]byte, 8192)) // zeroed meta pages
	_, otherID := writeOpen(t, filepath.Join(dir, "other"), nil)

	if got, err := checkOpened(bad, f, id); err != nil || got != id {
		t.Errorf("the file checked already: %v, %v; want its id %v and no second check", got, err, id)
	}
	for name, checked := range map[string]fileID{"a file made just now": {}, "another file checked": otherID} {
		_, err := checkOpened(bad, f, checked)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Path != bad {
			t.Errorf("%s: %v, want a *CorruptError for %s", name, err, bad)
		}
	}
	if _, err := checkOpened(bad, nil, id); err == nil {
		t.Error("no file from bbolt: no error")
	}
}

// TestOpenFile: the store's files are opened blocking and close on exec,
// with os.OpenFile's errors. (That they stay out of the poller shows only
// in the system calls: os.OpenFile leaves a regular file blocking too.)
func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	f, err := openFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("flags %#o, %v: want a blocking file", fl, err)
	}
	if fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || fd&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#o, %v: want close-on-exec", fd, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	_, err = openFile(filepath.Join(dir, "missing"), os.O_RDONLY, 0)
	var pe *os.PathError
	if !errors.Is(err, os.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("a missing file: %v, want an *os.PathError of open that is os.ErrNotExist", err)
	}
}

// writeOpen writes data to a new file at path and returns it open, with
// its device and inode; it is closed when t ends.
func writeOpen(t *testing.T, path string, data []byte) (*os.File, fileID) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	id, err := statID(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, id
}
