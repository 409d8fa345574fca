// Package fds keeps descriptors a process inherited from reaching the
// commands it runs, and makes the pipes it gives them.
package fds

import (
	"os"

	"golang.org/x/sys/unix"
)

// MarkInherited marks every descriptor from 3 up close-on-exec. A CLI
// calls it first thing, before it opens anything of its own: whatever the
// caller left open without close-on-exec (`exec 7>file; rukh …`) then
// never reaches an extension, which gets exactly 0, 1, 2 and its channel.
func MarkInherited() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: mark each open descriptor.
	for fd := 3; fd < 1024; fd++ {
		unix.CloseOnExec(fd)
	}
}

// Pipe returns a pipe between this process and a command it starts: the
// parent's end is in Go's poller, as os.Pipe's ends are (reads and
// writes wait without a thread, and take deadlines); the child's end is
// not, since it is only passed on. os.Pipe registers both ends, and
// exec.Cmd then takes the child's end out of non-blocking mode again:
// four system calls a pipe for nothing. childReads says which end the
// child gets: the read end (true) or the write end.
func Pipe(childReads bool) (parent, child *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	pfd, cfd := p[0], p[1]
	if childReads {
		pfd, cfd = p[1], p[0]
	}
	if err := unix.SetNonblock(pfd, true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// os.NewFile adds a non-blocking descriptor to the poller and leaves a
	// blocking one out.
	return os.NewFile(uintptr(pfd), "|parent"), os.NewFile(uintptr(cfd), "|child"), nil
}
