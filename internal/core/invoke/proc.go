package invoke

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/rukh-cli/rukh/internal/release/extproto"
)

// procStart returns a process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat), which together with the pid identifies a
// process even after its pid is reused.
func procStart(pid int) (uint64, bool) {
	n, _, ok := procStat(pid)
	return n, ok
}

// procStat returns a process's start time and state (field 3: R, S, Z, …).
func procStat(pid int) (start uint64, state string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, "", false
	}
	n, err := strconv.ParseUint(fields[19], 10, 64)
	return n, fields[0], err == nil
}

// selfStart is this process's start time, read once: it never changes,
// and every call's record and outcome reserve carry it. A read that
// fails is tried again at the next call.
func selfStart() uint64 {
	if n := selfStartTicks.Load(); n != 0 {
		return n
	}
	n, _ := procStart(os.Getpid())
	selfStartTicks.Store(n)
	return n
}

var selfStartTicks atomic.Uint64

// processAlive reports whether the host process that opened an invocation
// record still runs: a host that exited but was not reaped yet (a zombie)
// runs no more. This process runs, by definition: a host of many calls
// (rukhd) asks of its own records and reserves at every admission, and
// reading /proc for each of them was a tenth of its CPU under 50
// concurrent calls (docs/benchmarks.md, issue 28).
func processAlive(pid int, start uint64) bool {
	if pid == os.Getpid() && start != 0 && start == selfStart() {
		return true
	}
	n, state, ok := procStat(pid)
	return ok && n == start && state != "Z" && state != "X"
}

// reap kills every process of this user whose environment carries
// RUKH_INVOCATION_ID=id.
func reap(id string) {
	marker := []byte(extproto.EnvInvocationID + "=" + id + "\x00")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append(env, 0), marker) {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
