package spawn

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A host of calls (rukhd, and the core process the thin client execs)
// runs with a timer slack of HostTimerSlack: the kernel may wake any of
// its threads from a timed sleep up to that much late. The Go runtime's
// monitor thread (sysmon) sleeps 20 µs at a time while the process is
// busy, and with Linux's default slack of 50 µs its wakes were a fifth of
// rukhd's CPU in a call. A millisecond late is nothing to the host's own
// timers, which bound waits of seconds. The commands a host starts get
// Linux's default back (docs/adr/0021-host-timer-slack.md).
const (
	HostTimerSlack    = time.Millisecond
	DefaultTimerSlack = 50 * time.Microsecond // Linux's, for a thread of a normal process
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
	var err error
	withThreadSlack(HostTimerSlack, func() { err = start() })
	return err
}

// hostSlack is the process's timer slack when MarkHost marked it a host;
// 0 otherwise.
var hostSlack atomic.Int64

// MarkHost records that this process is a host of calls: the commands it
// starts (Start, StartTracked) get DefaultTimerSlack, whatever its own
// slack. The core's main calls it first thing, before it starts anything.
func MarkHost() { hostSlack.Store(int64(ThreadTimerSlack())) }

// ThreadTimerSlack is the timer slack of the calling thread: the
// process's, as every thread has it unless it changed its own; 0 if the
// kernel does not say (a slack of 0 reads as the default). Another
// thread's, in /proc, is readable only with CAP_SYS_NICE.
func ThreadTimerSlack() time.Duration {
	s, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0
	}
	return time.Duration(s)
}

// forkAsCommand runs fork, which forks a command: from a host whose slack
// is not the default, on a thread set to the default for the fork.
func forkAsCommand(fork func()) {
	if s := hostSlack.Load(); s == 0 || time.Duration(s) == DefaultTimerSlack {
		fork() // no thread to lock, and so no template thread to start
		return
	}
	withThreadSlack(DefaultTimerSlack, fork)
}

// withThreadSlack runs f on a locked thread whose timer slack is d, and
// gives the thread its slack back before it unlocks it, on return, panic
// or Goexit alike. If the kernel does not say what it was, f runs with
// the slack as it is.
func withThreadSlack(d time.Duration, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	was := ThreadTimerSlack()
	if was != 0 && was != d && unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(d), 0, 0, 0) == nil {
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(was), 0, 0, 0)
	}
	f()
}
