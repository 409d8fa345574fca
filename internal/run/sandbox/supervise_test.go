package sandbox_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// escape starts what a command must not leave behind: a process that
// calls setsid() and execs with an empty environment (out of the
// command's group and session, without RUKH_INVOCATION_ID), and an orphan
// (its parent exits at once). It prints their pids, then "ready".
const escape = `setsid env -i /bin/sleep 300 & echo $!
( /bin/sleep 301 & echo $! )
`

// superviseHang bounds every wait here: a hang guard, never a budget.
const superviseHang = 15 * time.Second

// supervised is the helper started with a command.
type supervised struct {
	*exec.Cmd
	in io.WriteCloser // the command's stdin
}

// startedWith runs the helper under spec with script as the command
// (/bin/sh -c), in a process group of its own unless fg, and returns it,
// the pids the script printed before "ready", and the rest of its output.
func startedWith(t *testing.T, spec sandbox.Spec, fg bool, script string) (supervised, []int, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(helper)
	cmd.Args = spec.Args(helper, []string{"/bin/sh", "sh", "-c", script})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !fg, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A pipe of its own, read with a deadline: a process left holding it
	// cannot hang the test.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out.SetReadDeadline(time.Now().Add(superviseHang))
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(spawn.Kill); cmd.Wait(); out.Close() })
	r := bufio.NewReader(out)
	return supervised{cmd, in}, readPIDs(t, r), r
}

// readPIDs reads the pids a script prints, one a line, up to "ready".
func readPIDs(t *testing.T, r *bufio.Reader) []int { return readPIDsN(t, r, 0) }

// readPIDsN is readPIDs for output that has at least n pids, some of
// which may come after "ready" (other writers share the pipe).
func readPIDsN(t *testing.T, r *bufio.Reader, n int) []int {
	t.Helper()
	var pids []int
	ready := false
	for !ready || len(pids) < n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the command ended before it was ready: %v (%q, pids %v)", err, line, pids)
		}
		line = strings.TrimSpace(line)
		if line == "ready" {
			ready = true
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("the command printed %q", line)
		}
		pids = append(pids, pid)
	}
	return pids
}

// gone fails for every pid that still names a process: the helper kills
// and reaps all the command started before it exits itself, so once it
// has, nothing is left to wait for.
func gone(t *testing.T, pids []int, when string) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: pid %d is still there (kill 0: %v)", when, pid, err)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func profiles(t *testing.T) []sandbox.Spec {
	specs := []sandbox.Spec{{Profile: sandbox.Host}, {Profile: sandbox.Restricted}}
	if landlockABI() >= 4 {
		specs = append(specs, strictSpec(t, nil, nil))
	} else if os.Getenv("CI") != "" {
		t.Fatalf("Landlock ABI %d: strict is unavailable on this CI machine", landlockABI())
	}
	return specs
}

// Nothing a command starts outlives it, under every profile: what called
// setsid() and cleared its environment, and what its parent left behind,
// are killed when the command exits, and the helper exits with the
// command's own status (ADR 0004; issue: a command outlives its call).
func TestSuperviseEndsDescendants(t *testing.T) {
	for _, spec := range profiles(t) {
		t.Run(spec.Profile, func(t *testing.T) {
			// The command waits for a line on stdin, then exits 3.
			cmd, pids, _ := startedWith(t, spec, false, escape+"echo ready; read line; exit 3")
			if len(pids) != 2 {
				t.Fatalf("pids %v", pids)
			}
			for _, pid := range pids {
				if err := syscall.Kill(pid, 0); err != nil {
					t.Fatalf("pid %d should run while the command does: %v", pid, err)
				}
			}
			io.WriteString(cmd.in, "\n")
			if got := spawn.ExitStatus(cmd.Wait()); got != 3 {
				t.Errorf("status %d, want the command's 3", got)
			}
			gone(t, pids, "after the command exited")
		})
	}
}

// The helper exits as the command did: the same exit code, or killed by
// the same signal.
func TestSuperviseExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int // spawn.ExitStatus
	}{
		{"exit 0", 0}, {"exit 3", 3}, {"exit 255", 255},
		{"kill -TERM $$", 128 + 15}, {"kill -INT $$", 128 + 2}, {"kill -SEGV $$", 128 + 11}, {"kill -KILL $$", 128 + 9},
	} {
		cmd := exec.Command(helper, "host", "--", "/bin/sh", "sh", "-c", tc.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if got := spawn.ExitStatus(cmd.Run()); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.script, got, tc.want)
		}
	}
}

// A kill -9 of the host ends what its command started: the helper gets a
// parent-death signal it can act on, kills it all and exits.
func TestSuperviseHostDies(t *testing.T) {
	for _, spec := range profiles(t) {
		t.Run(spec.Profile, func(t *testing.T) {
			// The host is a shell that starts the helper and prints its pid.
			inner := strings.Join(spec.Args(helper, []string{"/bin/sh", "sh", "-c", escape + "echo ready; exec /bin/sleep 302"}), "' '")
			host := exec.Command("/bin/sh", "-c", "'"+inner+"' & echo $!; wait")
			host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			out, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			out.SetReadDeadline(time.Now().Add(superviseHang))
			host.Stdout = w
			err = host.Start()
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(-host.Process.Pid, syscall.SIGKILL); host.Wait(); out.Close() })
			r := bufio.NewReader(out)
			// The host's line (the helper's pid) may come before or after
			// the command's "ready".
			pids := readPIDsN(t, r, 3)
			if len(pids) != 3 {
				t.Fatalf("pids %v: want the helper's and the command's two", pids)
			}
			host.Process.Kill() // kill -9 of the host alone
			host.Wait()
			// The helper's pid (the host's line) and the command's lines
			// share one pipe, in no fixed order: wait for each of the
			// three to be gone.
			for _, pid := range pids {
				if err := testhome.ExitOf(pid, superviseHang); err != nil {
					t.Errorf("pid %d (the helper or what its command started) outlived the host: %v", pid, err)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if rest, _ := io.ReadAll(r); len(rest) != 0 {
				t.Errorf("more output: %q", rest)
			}
		})
	}
}

// Signals reach the command as they would without the helper. In a
// group of its own the host signals the group and the command gets each
// signal once; in the caller's job (not a group leader) the host signals
// the helper, which passes it on; spawn.Kill kills everything at once.
func TestSuperviseSignals(t *testing.T) {
	const trap = "trap 'echo term; exit 7' TERM\n"
	t.Run("group", func(t *testing.T) {
		cmd, _, r := startedWith(t, sandbox.Spec{Profile: sandbox.Host}, false, trap+"echo ready; /bin/sleep 303 & wait")
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		rest, _ := io.ReadAll(r)
		if got := spawn.ExitStatus(cmd.Wait()); got != 7 || string(rest) != "term\n" {
			t.Errorf("status %d, output %q; want 7 and one term", got, rest)
		}
	})
	t.Run("job", func(t *testing.T) {
		cmd, _, r := startedWith(t, sandbox.Spec{Profile: sandbox.Host}, true, trap+"echo ready; /bin/sleep 303 & wait")
		cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(r)
		if got := spawn.ExitStatus(cmd.Wait()); got != 7 || string(rest) != "term\n" {
			t.Errorf("status %d, output %q; want 7 and one term", got, rest)
		}
	})
	t.Run("kill", func(t *testing.T) {
		cmd, pids, _ := startedWith(t, sandbox.Spec{Profile: sandbox.Host}, false, "trap '' TERM\n"+escape+"echo ready; exec /bin/sleep 304")
		cmd.Process.Signal(spawn.Kill)
		if got := spawn.ExitStatus(cmd.Wait()); got != 128+9 {
			t.Errorf("status %d, want %d (killed)", got, 128+9)
		}
		gone(t, pids, "after spawn.Kill")
	})
}

// The host profile's probe checks what supervision needs.
func TestSuperviseProbe(t *testing.T) {
	_, rep, status := run(t, sandbox.Spec{Profile: sandbox.Host, Probe: true}, "env")
	if status != 0 || rep != "" {
		t.Errorf("host probe: exit %d, report %q", status, rep)
	}
}

// The helper holds none of the call's descriptors: the host reads the end
// of the command's output when the command closes it, not when the
// helper exits.
func TestSuperviseHoldsNothing(t *testing.T) {
	cmd, _, r := startedWith(t, sandbox.Spec{Profile: sandbox.Host}, false, "echo ready; exec >&- 2>&-; read line")
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Fatalf("output: %q, %v", rest, err)
	}
	// Only now does the command end.
	io.WriteString(cmd.in, "\n")
	if got := spawn.ExitStatus(cmd.Wait()); got != 0 {
		t.Errorf("status %d", got)
	}
}
