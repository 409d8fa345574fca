// Package fds keeps descriptors a process inherited from reaching the
// commands it runs.
package fds

import "golang.org/x/sys/unix"

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
