package tests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A home whose socket path is too long for a Unix socket: `rukh daemon
// start` says so and what to do, in its own message (not "bind: invalid
// argument" in a log), and every command still works without a daemon.
func TestSocketPathTooLong(t *testing.T) {
	rukh, _ := hostBinaries(t)
	home := filepath.Join(t.TempDir(), strings.Repeat("h", 120))
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "RUKH_HOME="+home)

	start := exec.Command(rukh, "daemon", "start")
	start.Env = env
	out, err := start.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 75 {
		t.Fatalf("rukh daemon start: %v, want exit status 75\n%s", err, out)
	}
	sock := filepath.Join(home, "run", "rukhd.sock")
	want := "rukh: rukhd exited at once (exit status 69): rukhd: the socket " + sock + " would be " +
		strconv.Itoa(len(sock)) + " bytes long, more than the 107 a Unix socket's path may have; " +
		"give RUKH_HOME a shorter directory (or, when it is unset, XDG_RUNTIME_DIR); without a daemon, rukh works as it is\n"
	if string(out) != want {
		t.Errorf("rukh daemon start said\n%s\nwant\n%s", out, want)
	}

	list := exec.Command(rukh, "ext", "list")
	list.Env = env
	if out, err := list.CombinedOutput(); err != nil || !strings.Contains(string(out), "no releases installed") {
		t.Errorf("rukh ext list without a daemon: %v\n%s", err, out)
	}
}
