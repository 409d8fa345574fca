package tests

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/daemon"
)

// TestRukhdHelp runs the built rukhd as a person would: --help, -h and
// help print its usage on stdout and exit 0, as `rukh --help` does, and
// a flag it does not know exits 2 saying what was wrong and where the
// usage is, on stderr.
func TestRukhdHelp(t *testing.T) {
	_, rukhd := hostBinaries(t)
	run := func(args ...string) (stdout, stderr string, status int) {
		t.Helper()
		cmd := exec.Command(rukhd, args...)
		cmd.Env = append(os.Environ(), "RUKH_HOME="+t.TempDir())
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("rukhd %s: %v", strings.Join(args, " "), err)
		}
		return o.String(), e.String(), status
	}
	want := daemon.Usage("rukh", nil)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, errOut, status := run(args...)
		if status != 0 || out != want || errOut != "" {
			t.Errorf("rukhd %s: exit %d, stderr %q, stdout\n%s\nwant exit 0 and\n%s", args[0], status, errOut, out, want)
		}
	}
	if !strings.HasPrefix(want, "rukhd is the core of rukh") || !strings.Contains(want, "--idle-timeout DURATION") || !strings.Contains(want, "RUKH_DAEMON") || !strings.Contains(want, "man rukhd") {
		t.Errorf("rukhd --help:\n%s", want)
	}
	out, errOut, status := run("--bogus")
	if status != 2 || out != "" || errOut != "rukhd: flag provided but not defined: -bogus\nRun 'rukhd --help' for usage.\n" {
		t.Errorf("rukhd --bogus: exit %d, stdout %q, stderr %q", status, out, errOut)
	}
	_, errOut, status = run("serve")
	if status != 2 || !strings.HasPrefix(errOut, `rukhd: unexpected argument "serve"`) {
		t.Errorf("rukhd serve: exit %d, stderr %q", status, errOut)
	}
}
