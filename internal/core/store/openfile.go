package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openFile is os.OpenFile for the store's own files (store.db, its lock
// file), which it reads and writes with blocking system calls. os.OpenFile
// offers every file it opens to Go's poller: on Linux it makes the file
// non-blocking, asks epoll to watch it, which refuses a regular file, and
// makes it blocking again; five system calls more per open, and a call
// without a daemon opens these files six times. A file made with
// os.NewFile from a blocking descriptor stays out of the poller at the
// cost of one fcntl. perm is the permission bits only (no setuid,
// setgid or sticky bit), which is all the store asks for.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
