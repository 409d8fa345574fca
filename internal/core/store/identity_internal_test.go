package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// statNoTimes reads what lstat and fstat read of a file's type, device,
// inode and link count, for every kind of file the store's path may come
// to name.
func TestStatNoTimesAgreesWithLstat(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store.db")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(file, filepath.Join(dir, "second")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"store.db", "dir", "link", "fifo"} {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		want := fileStat{mode: fi.Mode().Type(), id: fileID{uint64(st.Dev), st.Ino}, nlink: uint32(st.Nlink)}
		if want.mode&(os.ModeNamedPipe) != 0 {
			want.mode = os.ModeIrregular // what moved() counts as not a regular file
		}
		got, err := statNoTimes(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW)
		if err != nil || got != want {
			t.Errorf("%s: statNoTimes = %+v, %v; lstat says %+v", name, got, err, want)
		}
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := statID(f)
	fi, _ := f.Stat()
	if st := fi.Sys().(*syscall.Stat_t); err != nil || id != (fileID{uint64(st.Dev), st.Ino}) {
		t.Errorf("statID = %+v, %v; fstat says dev %d ino %d", id, err, st.Dev, st.Ino)
	}
	if _, err := statNoTimes(unix.AT_FDCWD, filepath.Join(dir, "missing"), unix.AT_SYMLINK_NOFOLLOW); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not-exist", err)
	}
}
