package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// The helper started with a gate forks nothing until the gate opens (the
// host writes one byte once the call's begin record is durable); a gate
// closed unopened (the call refused, the host gone) ends it with
// GateClosed and nothing run. Every profile gates the same way.
func TestGate(t *testing.T) {
	for _, profile := range []string{sandbox.Host, sandbox.Restricted} {
		for _, open := range []bool{true, false} {
			name := profile + "/closed"
			if open {
				name = profile + "/opened"
			}
			t.Run(name, func(t *testing.T) {
				dir := testhome.TempDir(t)
				ran := filepath.Join(dir, "ran")
				gr, gw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer gw.Close()
				spec := sandbox.Spec{Profile: profile, GateFD: 3}
				cmd := exec.Command(helper)
				cmd.Args = spec.Args(helper, []string{"/bin/sh", "sh", "-c", `echo ran > "$1"`, "sh", ran})
				cmd.ExtraFiles = []*os.File{gr}
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				gr.Close()
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

				waitAtGate(t, cmd.Process.Pid)
				if kids := children(t, cmd.Process.Pid); kids != "" {
					t.Fatalf("the helper forked %s before its gate opened", kids)
				}
				if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the command ran before the gate opened (%v)", err)
				}
				if open {
					if _, err := gw.Write([]byte{'g'}); err != nil {
						t.Fatal(err)
					}
				}
				gw.Close()
				err = cmd.Wait()
				_, statErr := os.Stat(ran)
				switch {
				case open && (err != nil || statErr != nil):
					t.Fatalf("gate opened: the helper exited with %v and the command's mark is %v; want 0 and the mark", err, statErr)
				case !open && cmd.ProcessState.ExitCode() != sandbox.GateClosed:
					t.Fatalf("gate closed: the helper exited with %v, want status %d", err, sandbox.GateClosed)
				case !open && !errors.Is(statErr, os.ErrNotExist):
					t.Fatalf("gate closed: the command ran (%v)", statErr)
				}
			})
		}
	}
}

// waitAtGate waits until process pid blocks in read(2) (the gate), for
// at most superviseHang.
func waitAtGate(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(superviseHang)
	for {
		// /proc/PID/syscall: the number of the system call it blocks in,
		// then its arguments; read(2) is 0 on x86-64, 63 on arm64.
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
		if err == nil {
			f := strings.Fields(string(data))
			if len(f) > 1 && (f[0] == "0" || f[0] == "63") && f[1] == "0x3" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper (pid %d) did not block reading its gate within %s (/proc/PID/syscall: %q, %v)", pid, superviseHang, data, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// children is what /proc says process pid has forked, or "".
func children(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
