package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

// TestRestrictedHidesTheHome: under restricted, the directories the host
// names (the home's data, config and runtime directories) are empty and
// read-only for the command, the directory kept inside them (its
// release) is there read-only, and the rest of the files are as they
// were (issue 25: a restricted command wrote the store directly).
func TestRestrictedHidesTheHome(t *testing.T) {
	home := t.TempDir()
	data, config := filepath.Join(home, "data"), filepath.Join(home, "config")
	release := filepath.Join(data, "releases", "abc")
	other := filepath.Join(home, "other")
	for _, d := range []string{release, config, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{filepath.Join(data, "store.db"): "store", filepath.Join(config, "profile.json"): "profile",
		filepath.Join(release, "prog"): "release", filepath.Join(other, "f"): "other"} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	spec := sandbox.Spec{Profile: sandbox.Restricted, Hide: []string{data, config}, Keep: []string{release}}
	for _, tc := range []struct {
		what string
		args []string
		want string
	}{
		{"read", []string{filepath.Join(data, "store.db")}, "error: open " + filepath.Join(data, "store.db") + ": no such file or directory"},
		{"read", []string{filepath.Join(config, "profile.json")}, "error: open " + filepath.Join(config, "profile.json") + ": no such file or directory"},
		{"write", []string{filepath.Join(data, "store.db")}, "error: open " + filepath.Join(data, "store.db") + ": read-only file system"},
		{"read", []string{filepath.Join(release, "prog")}, "ok: release"},
		{"write", []string{filepath.Join(release, "new")}, "error: open " + filepath.Join(release, "new") + ": read-only file system"},
		{"read", []string{filepath.Join(other, "f")}, "ok: other"},
		{"write", []string{filepath.Join(other, "g")}, "ok: "},
		{"ids", nil, fmt.Sprintf("ok: uid %d gid %d map %d %d 1", os.Getuid(), os.Getgid(), os.Getuid(), os.Getuid())},
		{"pdeathsig", nil, "ok: 9"},
	} {
		out, report, status := run(t, spec, tc.what, tc.args...)
		if out != tc.want || report != "" || status != 0 {
			t.Errorf("%s %v: %q (report %q, exit %d); want %q", tc.what, tc.args, out, report, status, tc.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(data, "store.db")); err != nil || string(b) != "store" {
		t.Errorf("the store after the calls: %q, %v", b, err)
	}
}

// TestRestrictedCannotSignalOut: a restricted command may signal its own
// children but no process outside its call, its helper included; host may
// (issue 25: a command killed or stopped its helper to leave or hold its
// call).
func TestRestrictedCannotSignalOut(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	pid := fmt.Sprint(sleeper.Process.Pid)
	for _, tc := range []struct {
		profile, want string
	}{{sandbox.Host, "ok: "}, {sandbox.Restricted, "error: operation not permitted"}} {
		out, report, _ := run(t, sandbox.Spec{Profile: tc.profile}, "signal", pid)
		if out != tc.want {
			t.Errorf("%s: signal another process: %q (report %q); want %q", tc.profile, out, report, tc.want)
		}
	}
}

// TestRestrictedRefusedWithoutNamespaces: where the command cannot have a
// user and mount namespace of its own (here: the helper runs inside a
// strict command, whose filter refuses unshare, as a kernel that gives an
// unprivileged user none would), restricted is refused, never run with
// the home in sight.
func TestRestrictedRefusedWithoutNamespaces(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	self, _ := os.Executable()
	inner := (&sandbox.Spec{Profile: sandbox.Restricted, Hide: []string{dir}, ReportFD: reportFD}).Args(helper, []string{self, "probe"})
	outer := &sandbox.Spec{Profile: sandbox.Strict, ReadOnly: append([]string{filepath.Dir(helper), filepath.Dir(self), dir}, sandbox.SystemReadOnly...)}
	cmd := exec.Command(helper)
	cmd.Args = outer.Args(helper, append([]string{helper}, inner...))
	cmd.Env = append(os.Environ(), envProbe+"=read")
	cmd.ExtraFiles = make([]*os.File, reportFD-3+1)
	cmd.ExtraFiles[reportFD-3] = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	w.Close()
	report := make([]byte, 4096)
	n, _ := r.Read(report)
	want := "enforcement unavailable: a user and mount namespace of the command's own (unprivileged user namespaces disabled?): operation not permitted"
	if got := strings.TrimSpace(string(report[:n])); got != want || err == nil {
		t.Errorf("restricted inside strict: %v, output %q, report %q; want refused with %q", err, out, got, want)
	}
}
