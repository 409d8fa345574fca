package daemon

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// peer is the process at the other end of a connection: the one that
// connected, named by a pidfd the daemon takes at accept and keeps for the
// connection's life. A connection outlives the process that opened it (a
// child connects, says hello and exits, and its parent goes on with the
// socket), and a pid number outlives its process (it is reused); the
// pidfd does neither. What the daemon decides from who its peer is — a
// command line is served, `approve` runs below no command, a process is
// the client's child — it decides while the pidfd shows the peer alive.
type peer struct {
	pid   int // in the daemon's pid namespace, as the pidfd named it at accept
	pidfd *os.File
}

// errPeerGone is why a connection whose process exited before the daemon
// could name it is not served: nobody reads the answer, and no live
// process could be checked.
var errPeerGone = errors.New("the process that connected has exited")

// peerPidfdOpt is SO_PEERPIDFD (Linux 6.5); a test sets another option
// to have the daemon take the fallback.
var peerPidfdOpt = unix.SO_PEERPIDFD

// takePeer names the process at the other end of c, whose SO_PEERCRED pid
// is credPID, by a pidfd: SO_PEERPIDFD, the kernel's own record of the
// process that connected. A kernel without it (before 6.5) gets
// pidfd_open(credPID) and a check that the process it opened started no
// later than the connection was accepted, read again once the pidfd is
// held: it cannot tell the peer from a process that took the peer's pid
// after the peer exited between its connect and this accept (the pid
// space must wrap in that window).
func takePeer(c syscall.Conn, credPID int) (*peer, error) {
	accepted := bootTicks()
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, serr := -1, error(nil)
	if err := raw.Control(func(s uintptr) {
		fd, serr = unix.GetsockoptInt(int(s), unix.SOL_SOCKET, peerPidfdOpt)
	}); err != nil {
		return nil, err
	}
	var pidfd *os.File
	switch {
	case serr == nil:
		pidfd = os.NewFile(uintptr(fd), "peer-pidfd")
	case errors.Is(serr, unix.ENOPROTOOPT):
		if credPID <= 0 {
			return nil, errPeerGone
		}
		fd, err := unix.PidfdOpen(credPID, unix.PIDFD_NONBLOCK)
		if errors.Is(err, unix.ESRCH) {
			return nil, errPeerGone
		} else if err != nil {
			return nil, fmt.Errorf("pidfd_open: %w", err)
		}
		pidfd = os.NewFile(uintptr(fd), "peer-pidfd")
		st, err := readStat(credPID)
		if err != nil || st.start > accepted || pidfdExited(pidfd) {
			pidfd.Close()
			return nil, errPeerGone
		}
	default:
		// A peer that was reaped gets no pidfd before Linux 6.16.
		return nil, fmt.Errorf("%w (SO_PEERPIDFD: %v)", errPeerGone, serr)
	}
	pid, err := pidfdPid(pidfd)
	switch {
	case err != nil:
		pidfd.Close()
		return nil, err
	case pid == -1 || pidfdExited(pidfd):
		pidfd.Close()
		return nil, errPeerGone
	case pid == 0 || pid != credPID:
		pidfd.Close()
		return nil, fmt.Errorf("the process that connected (pid %d to the kernel, %d by its credentials) is outside the daemon's pid namespace", pid, credPID)
	}
	return &peer{pid: pid, pidfd: pidfd}, nil
}

// bootTicks is the time since boot in the unit of /proc/PID/stat's start
// time (USER_HZ, 100 a second on Linux).
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return ^uint64(0)
	}
	return uint64(ts.Sec)*100 + uint64(ts.Nsec)/10_000_000
}

// alive reports whether the process that connected is still running.
func (p *peer) alive() bool { return !pidfdExited(p.pidfd) }

func (p *peer) close() { p.pidfd.Close() }

// verifyChild checks that pidfd, which the client sent with Spawned,
// names a child of the peer, and returns its pid. The kernel says the
// process's pid and parent in one call (pidfdInfo); where it cannot, the
// pid is read from the pidfd, then the process's parent from /proc, then
// the pid again: a process that was not reaped in between still holds its
// number, so the parent read is its own (a zombie counts: a command that
// exits at once is still the client's child until the client reaps it).
// The peer is then checked to be alive, so the parent's number was the
// peer's too.
// claimed, the pid the client sent, must be the same; it is used for
// nothing else.
func (p *peer) verifyChild(pidfd *os.File, claimed int) (int, error) {
	pid, parent, fromKernel := pidfdInfo(pidfd)
	if !fromKernel {
		var err error
		if pid, err = pidfdPid(pidfd); err != nil {
			return 0, err
		}
	}
	switch {
	case pid == -1:
		return 0, errors.New("the process it names has already been reaped")
	case pid == 0:
		return 0, errors.New("the process it names is outside the daemon's pid namespace")
	case claimed != pid:
		return 0, fmt.Errorf("it says pid %d, but its pidfd names pid %d", claimed, pid)
	}
	if !fromKernel {
		st, err := readStat(pid)
		if err != nil {
			return 0, err
		}
		if again, err := pidfdPid(pidfd); err != nil || again != pid {
			return 0, fmt.Errorf("pid %d was reaped while it was checked", pid)
		}
		parent = st.ppid
	}
	if parent != p.pid {
		return 0, fmt.Errorf("pid %d is not a child of the client (pid %d): its parent is pid %d", pid, p.pid, parent)
	}
	if !p.alive() {
		return 0, errors.New("the client exited")
	}
	return pid, nil
}
