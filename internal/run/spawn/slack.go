package spawn

import (
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A host of calls (rukhd, the one-shot core) runs with a timer slack of
// HostTimerSlack: the kernel may wake any of its threads from a timed
// sleep up to that much late. The Go runtime's monitor thread (sysmon)
// sleeps 20 µs at a time while the process is busy, and with Linux's
// default slack of 50 µs it woke about 17 times in each call through
// rukhd, a fifth of the daemon's CPU on two cores. A millisecond late is
// nothing to the host's own timers, which bound waits of seconds. Its
// commands are started with the default back (startFiles): an extension
// runs as it would from the user's shell (docs/adr/0021-host-timer-slack.md).
const (
	HostTimerSlack    = time.Millisecond
	defaultTimerSlack = 50 * time.Microsecond // Linux's, for a thread of a normal process
)

// A thread's slack can be set only by that thread (or by a process with
// CAP_SYS_NICE), and the monitor thread exists before main. A process
// gets the slack of the thread that forked it, and keeps it across
// execve, in all its threads; so a host is given it by what starts it.

// WithHostTimerSlack runs start, which starts a host process (a fork, or
// this process's execve), on a thread whose timer slack is
// HostTimerSlack, so that the process it starts runs with that slack in
// every thread. The thread gets its own slack back after.
func WithHostTimerSlack(start func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore := setThreadSlack(HostTimerSlack)
	defer restore()
	return start()
}

// setThreadSlack sets this thread's timer slack to d and returns what
// sets it back; it does nothing if the kernel does not say what it was.
// The caller has locked the goroutine to its thread.
func setThreadSlack(d time.Duration) (restore func()) {
	was, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || time.Duration(was) == d {
		return func() {}
	}
	if unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(d), 0, 0, 0) != nil {
		return func() {}
	}
	return func() { unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(was), 0, 0, 0) }
}

// isHost reports whether this process runs with HostTimerSlack. Every
// thread has the process's slack, but while a fork of startFiles or
// WithHostTimerSlack holds it on its locked thread.
var isHost = sync.OnceValue(func() bool {
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	return err == nil && time.Duration(slack) == HostTimerSlack
})

// forkAsCommand runs fork, which forks a command, so that the command
// starts with the default timer slack when this process is a host.
func forkAsCommand(fork func()) {
	if !isHost() {
		fork()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore := setThreadSlack(defaultTimerSlack)
	defer restore()
	fork()
}
