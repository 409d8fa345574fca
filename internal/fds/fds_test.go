package fds_test

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/fds"
)

// TestPipe: the parent's end is non-blocking and in the poller (it takes
// a deadline), the child's end is blocking and not (it takes none), both
// close on exec, and bytes go from the writer to the reader either way.
func TestPipe(t *testing.T) {
	for _, childReads := range []bool{false, true} {
		parent, child, err := fds.Pipe(childReads)
		if err != nil {
			t.Fatal(err)
		}
		check := func(f *os.File, what string, nonblock bool) {
			t.Helper()
			rc, err := f.SyscallConn() // f.Fd() would make it blocking
			if err != nil {
				t.Fatal(err)
			}
			var flags, fdFlags int
			var ferr error
			if err := rc.Control(func(fd uintptr) {
				if flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
					fdFlags, ferr = unix.FcntlInt(fd, unix.F_GETFD, 0)
				}
			}); err != nil || ferr != nil {
				t.Fatal(err, ferr)
			}
			if got := flags&unix.O_NONBLOCK != 0; got != nonblock {
				t.Errorf("childReads=%v: the %s end is non-blocking: %v, want %v", childReads, what, got, nonblock)
			}
			if fdFlags&unix.FD_CLOEXEC == 0 {
				t.Errorf("childReads=%v: the %s end is not close-on-exec", childReads, what)
			}
		}
		check(parent, "parent's", true)
		check(child, "child's", false)
		if err := parent.SetDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("childReads=%v: the parent's end takes no deadline (%v): it is not in the poller", childReads, err)
		}
		if err := child.SetDeadline(time.Now().Add(time.Minute)); !errors.Is(err, os.ErrNoDeadline) {
			t.Errorf("childReads=%v: the child's end took a deadline (%v): it is in the poller", childReads, err)
		}
		r, w := parent, child
		if childReads {
			r, w = child, parent
		}
		if _, err := w.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if got, err := io.ReadAll(r); err != nil || string(got) != "hello" {
			t.Errorf("childReads=%v: read %q, %v", childReads, got, err)
		}
		r.Close()
	}
}
