package tests

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// runIn runs exe with args in a home of its own (no daemon) and returns
// what it printed and its exit status.
func runIn(t *testing.T, home, exe string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %s: %v", exe, strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestOneShotChosen: with no daemon, the thin rukh runs a command line
// whose first word names no built-in command in the one-shot core beside
// it (docs/adr/0017-one-shot-core.md), and every other command line in
// rukhd. A stand-in rukh-oneshot that says how it was run shows which.
func TestOneShotChosen(t *testing.T) {
	rukh, rukhd := hostBinaries(t)
	dir := testhome.TempDir(t)
	for _, exe := range []string{rukh, rukhd} {
		copyExecutable(t, exe, filepath.Join(dir, filepath.Base(exe)))
	}
	testhome.WriteFiles(t, dir, map[string]string{"rukh-oneshot": "#!/bin/sh\necho \"one-shot: $*\"\n"})
	if err := os.Chmod(filepath.Join(dir, "rukh-oneshot"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(testhome.TempDir(t), "home")
	for _, tc := range []struct {
		args    []string
		oneShot bool
	}{
		{[]string{"hello", "Ada"}, true},
		{[]string{"deploy", "status", "--env", "stage"}, true},
		{[]string{"ext", "list"}, false},
		{[]string{"help", "hello"}, false},
		{[]string{"--help"}, false},
		{[]string{"__complete", "he"}, false},
		{nil, false},
	} {
		out, _ := runIn(t, home, filepath.Join(dir, "rukh"), tc.args...)
		want := "one-shot: --oneshot " + hostBuild(t) + " " + strings.Join(tc.args, " ") + "\n"
		if got := out == want; got != tc.oneShot {
			t.Errorf("rukh %s ran in the one-shot core: %v, want %v:\n%s", strings.Join(tc.args, " "), got, tc.oneShot, out)
		}
	}
	// Without it, every command line runs in rukhd, as before.
	if err := os.Remove(filepath.Join(dir, "rukh-oneshot")); err != nil {
		t.Fatal(err)
	}
	if out, code := runIn(t, home, filepath.Join(dir, "rukh"), "hello"); code != 2 || !strings.Contains(out, `unknown command "hello"`) {
		t.Errorf("rukh hello without a one-shot core: exit %d: %s", code, out)
	}
}

// TestOneShotOfAnotherBuild: the one-shot core runs a command line of
// one extension command itself when the thin client is of its build, and
// hands it to rukhd when not (one an upgrade left behind never runs
// stale code). A stand-in rukhd that says how it was run shows which.
func TestOneShotOfAnotherBuild(t *testing.T) {
	rukh, _ := hostBinaries(t)
	dir := testhome.TempDir(t)
	oneShot := filepath.Join(dir, "rukh-oneshot")
	copyExecutable(t, filepath.Join(filepath.Dir(rukh), "rukh-oneshot"), oneShot)
	testhome.WriteFiles(t, dir, map[string]string{"rukhd": "#!/bin/sh\necho \"whole core: $*\"\n"})
	if err := os.Chmod(filepath.Join(dir, "rukhd"), 0o755); err != nil {
		t.Fatal(err)
	}
	wait, p := newWaitHome(t)
	if err := os.WriteFile(filepath.Join(wait, "open"), nil, 0o600); err != nil { // gate answers at once
		t.Fatal(err)
	}
	home := filepath.Dir(p.Data)
	if out, code := runIn(t, home, oneShot, "--oneshot", hostBuild(t), "gate"); code != 0 || out != "opened" {
		t.Errorf("rukh-oneshot of the client's build: exit %d: %q, want the command's own text", code, out)
	}
	if out, _ := runIn(t, home, oneShot, "--oneshot", "another-build", "gate"); out != "whole core: --cli gate\n" {
		t.Errorf("rukh-oneshot of another build ran: %q, want it handed to rukhd", out)
	}
}

// TestOneShotHandsOff: the one-shot core has no built-in commands, so a
// command line that is not one extension command — a misspelt built-in,
// a built-in — is run by rukhd in its place, the same process, and says
// what rukhd says; run bare, it is never a daemon.
func TestOneShotHandsOff(t *testing.T) {
	rukh, _ := hostBinaries(t)
	oneShot := filepath.Join(filepath.Dir(rukh), "rukh-oneshot")
	home := filepath.Join(testhome.TempDir(t), "home")
	if out, code := runIn(t, home, rukh, "exts"); code != 2 || !strings.Contains(out, `unknown command "exts"; did you mean "ext"?`) {
		t.Errorf("rukh exts: exit %d: %s", code, out)
	}
	if out, code := runIn(t, home, oneShot, "--cli", "ext", "list"); code != 0 || !strings.Contains(out, "no releases installed") {
		t.Errorf("rukh-oneshot --cli ext list: exit %d: %s", code, out)
	}
	if out, code := runIn(t, home, oneShot); code != 2 || !strings.Contains(out, "the daemon is rukhd") {
		t.Errorf("rukh-oneshot run bare: exit %d: %s", code, out)
	}
}

// copyExecutable copies the program at src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
