package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// What the daemon knows of a client's processes it learns from the kernel,
// through pidfds: a pidfd names one process for as long as it is held, so
// a pid read from it, checked and then read again while the process has
// not been reaped is that process's and no reused number's. A pid number a
// client sends is only ever compared with the one its pidfd names.

// pidfdGetInfo says whether to ask the kernel about a pidfd's process
// with PIDFD_GET_INFO before reading /proc; a test turns it off to have
// the daemon take the /proc reads, which kernels before 6.13 get.
var pidfdGetInfo = true

// pidfdInfo is the pid and the parent's pid, in the daemon's pid
// namespace, of the live or exited but unreaped process pidfd names, read
// from that process in one call (PIDFD_GET_INFO, Linux 6.13). ok is false
// when the kernel does not say: an older kernel, a process reaped or in
// no namespace the daemon sees, a descriptor that is not a pidfd; the
// callers then read /proc.
func pidfdInfo(pidfd *os.File) (pid, ppid int, ok bool) {
	if !pidfdGetInfo {
		return 0, 0, false
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
	if unix.IoctlPidfdInfo(int(pidfd.Fd()), &info) != nil || info.Mask&unix.PIDFD_INFO_PID == 0 || info.Pid == 0 {
		return 0, 0, false
	}
	return int(info.Pid), int(info.Ppid), true
}

// pidfdPid is the pid, in the daemon's pid namespace, of the process
// pidfd names: from the kernel (pidfdInfo), else from /proc/self/fdinfo
// ("Pid:"); -1 once it was reaped, 0 when it is in no namespace the
// daemon sees. A descriptor that is not a pidfd has no such line and is
// an error.
func pidfdPid(pidfd *os.File) (int, error) {
	if pid, _, ok := pidfdInfo(pidfd); ok {
		return pid, nil
	}
	data, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(pidfd.Fd())))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("pidfd fdinfo: %q", line)
			}
			return pid, nil
		}
	}
	return 0, errors.New("the descriptor is not a pidfd")
}

// pidfdExited reports whether the process pidfd names has exited (a
// zombie or reaped: the pidfd is readable), or cannot be told to be alive.
func pidfdExited(pidfd *os.File) bool { return spawn.ExitedNow(int(pidfd.Fd())) }

// procStat is what /proc/PID/stat says of a process: its state letter,
// its parent, its start time (clock ticks since boot) and, for a zombie,
// its wait status.
type procStat struct {
	state     byte
	ppid      int
	start     uint64
	exitCode  int
	hasStatus bool
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')') // the command name may hold anything
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22
	// (starttime), f[49] field 52 (exit_code).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	st := procStat{state: f[0][0]}
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: ppid %q", pid, f[1])
	}
	if st.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: starttime %q", pid, f[19])
	}
	if len(f) >= 50 {
		if st.exitCode, err = strconv.Atoi(f[49]); err == nil {
			st.hasStatus = true
		}
	}
	return st, nil
}

// exitStatus is the status the kernel keeps for the exited process pidfd
// names, as a shell reports it (128+N for signal N): read from its
// /proc/PID/stat while it is a zombie (its parent has not reaped it;
// the pid is read from the pidfd before and after, so it is that
// process's), or, once it was reaped, from the pidfd itself
// (PIDFD_INFO_EXIT, Linux 6.15). ok is false when the kernel says
// neither.
func exitStatus(pidfd *os.File) (status int, ok bool) {
	if pid, err := pidfdPid(pidfd); err == nil && pid > 0 {
		st, err := readStat(pid)
		if again, err2 := pidfdPid(pidfd); err == nil && err2 == nil && again == pid && st.state == 'Z' && st.hasStatus {
			return spawn.ShellStatus(syscall.WaitStatus(st.exitCode)), true
		}
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
	if err := unix.IoctlPidfdInfo(int(pidfd.Fd()), &info); err == nil && info.Mask&unix.PIDFD_INFO_EXIT != 0 {
		return spawn.ShellStatus(syscall.WaitStatus(info.Exit_code)), true
	}
	return 0, false
}

// signalGroup sends sig to the process group whose id is the pid of the
// process pidfd names, if that process leads one: what a client starts
// outside its caller's job leads a group of its own (spawn.Group). With
// PIDFD_SIGNAL_PROCESS_GROUP (Linux 6.9) the kernel names the group by the
// pidfd's own pid, never a number, so it reaches that group or nothing,
// even after its leader was reaped. An older kernel gets kill(-pid) only
// while the pidfd shows the process alive and leading its group, checked
// before and after reading its group: the one window left is that the
// leader exits, is reaped and its whole group ends between that check and
// the kill, and the pid is then taken by a new group leader.
func signalGroup(pidfd *os.File, sig syscall.Signal) error {
	err := unix.PidfdSendSignal(int(pidfd.Fd()), sig, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP)
	if err != unix.EINVAL {
		return err
	}
	pid, err := pidfdPid(pidfd)
	if err != nil || pid <= 0 || pidfdExited(pidfd) {
		return syscall.ESRCH
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil || pgid != pid || pidfdExited(pidfd) {
		return syscall.ESRCH
	}
	return syscall.Kill(-pid, sig)
}
