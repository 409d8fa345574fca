//go:build unix

package trust

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// openNoFollow opens the release file p (slash-separated, relative to
// root) for reading without following a symbolic link at any component
// (openat with O_NOFOLLOW, directories with O_DIRECTORY) and without
// blocking: it opens with O_NONBLOCK, so a named pipe or device swapped in
// for the file opens at once instead of waiting for a writer, and it
// refuses anything that is not a regular file before the descriptor
// leaves this function. The returned file is in blocking mode.
//
// os.Root alone is not enough: it keeps every open inside the root but
// follows symbolic links that stay inside it, and opens FIFOs blocking.
func openNoFollow(root *os.Root, p string) (*os.File, error) {
	dir, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var oerr error
	if err := rc.Control(func(dfd uintptr) { fd, oerr = openatChain(int(dfd), p) }); err != nil {
		return nil, err
	}
	if oerr != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: oerr}
	}
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, &notRegularError{kind: kindOfMode(uint32(st.Mode) & syscall.S_IFMT)}
	}
	// A regular file: reads never block anyway, but leave nothing
	// surprising on the descriptor.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openatChain opens p below the directory dfd one component at a time.
func openatChain(dfd int, p string) (int, error) {
	cur := dfd
	parts := strings.Split(p, "/")
	for i, part := range parts {
		flags := syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= syscall.O_DIRECTORY
		} else {
			flags |= syscall.O_NONBLOCK | syscall.O_NOCTTY
		}
		var fd int
		var err error
		for {
			fd, err = syscall.Openat(cur, part, flags, 0)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if cur != dfd {
			syscall.Close(cur)
		}
		if err != nil {
			if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EMLINK) {
				return -1, errLink
			}
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstat(fd, st)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func kindOfMode(m uint32) string {
	switch m {
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFIFO:
		return "a named pipe"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "a device"
	case syscall.S_IFLNK:
		return "a symbolic link"
	}
	return "a special file"
}
