package tests

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/internal/testpty"
)

// packedFiles reads a release archive: each entry's name and content.
func packedFiles(t *testing.T, archive string) (names []string, content map[string][]byte) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	content = map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, content
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		content[hdr.Name] = data
	}
}

// rukhIn runs the built rukh in dir with env and returns its stdout,
// failing the test when it fails.
func rukhIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	rukh, _ := hostBinaries(t)
	cmd := exec.Command(rukh, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rukh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// `rukh ext pack` leaves out .git and what .rukhignore names: the archive
// holds the release and nothing else. A bad line of .rukhignore stops
// the pack, naming the file and the line.
func TestPackLeavesOut(t *testing.T) {
	dir := testhome.TempDir(t)
	env := append(os.Environ(), "RUKH_HOME="+filepath.Join(dir, "home"))
	rukhIn(t, dir, env, "ext", "new", "acme.hello", "--lang", "python")
	rel := filepath.Join(dir, "hello")
	testhome.WriteFiles(t, rel, map[string]string{
		".git/HEAD":           "ref: refs/heads/main\n",
		".git/config":         "[core]\n\trepositoryformatversion = 0\n",
		".git/objects/ab/cd":  "blob",
		"NOTES.md":            "the author's notes\n",
		"bin/.hello.swp":      "vim",
		".rukhignore":         "# not for the owner\nNOTES.md\n",
		"share/greeting.txt":  "kept\n",
		"__pycache__/x.pyc":   "byte code",
		"hello_test_cache/ok": "kept too\n",
	})
	rukhIn(t, dir, env, "trust", "keygen", "acme.key")
	rukhIn(t, dir, env, "ext", "pack", "hello", "--key", "acme.key", "-o", "hello.tar.gz")
	names, _ := packedFiles(t, filepath.Join(dir, "hello.tar.gz"))
	want := []string{"rukh-release.json", "rukh-release.sig", "bin/hello", "hello_test_cache/ok", "rukh-extension.json", "share/greeting.txt", "test_hello.py"}
	if !slices.Equal(names, want) {
		t.Errorf("the archive holds %q; want %q", names, want)
	}

	if err := os.WriteFile(filepath.Join(rel, ".rukhignore"), []byte("NOTES.md\n**/*.tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rukh, _ := hostBinaries(t)
	cmd := exec.Command(rukh, "ext", "pack", "hello", "--key", "acme.key", "-o", "bad.tar.gz")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), `bad_ignore_file: ".rukhignore": line 2: "**/*.tmp" uses **`) {
		t.Errorf("ext pack with a bad .rukhignore: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.tar.gz")); err == nil {
		t.Error("ext pack wrote an archive of a release with a bad .rukhignore")
	}
}

// The Go template, built as `ext new` says (a Go workspace naming this
// checkout, go build -trimpath), packs into a release that names nothing
// of the author's machine: no file of it holds the release directory's
// path, this checkout's, the module cache's or GOROOT's, and go.work,
// which does, is not in it. Its own test passes, and the owner runs it.
func TestGoTemplateRelease(t *testing.T) {
	root := repoRoot(t)
	dir := testhome.TempDir(t)
	env := append(os.Environ(), "RUKH_HOME="+filepath.Join(dir, "author"), "GOWORK=", "GOFLAGS=")
	next := rukhIn(t, dir, env, "ext", "new", "acme.hello", "--lang", "go")
	if !strings.Contains(next, "go work init . PATH/TO/rukh") || !strings.Contains(next, "go build -trimpath -o bin/hello .") {
		t.Fatalf("ext new --lang go says:\n%s", next)
	}
	rel := filepath.Join(dir, "hello")
	goIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = rel, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goIn("work", "init", ".", root)
	goIn("build", "-trimpath", "-o", "bin/hello", ".")
	goIn("test", "./...")
	rukhIn(t, dir, env, "ext", "validate", "hello")
	rukhIn(t, dir, env, "trust", "keygen", "acme.key")
	rukhIn(t, dir, env, "ext", "pack", "hello", "--key", "acme.key", "-o", "hello.tar.gz")

	names, content := packedFiles(t, filepath.Join(dir, "hello.tar.gz"))
	want := []string{"rukh-release.json", "rukh-release.sig", "bin/hello", "go.mod", "main.go", "main_test.go", "rukh-extension.json"}
	if !slices.Equal(names, want) {
		t.Errorf("the archive holds %q; want %q", names, want)
	}
	machine := []string{dir, root}
	for _, v := range []string{"GOMODCACHE", "GOROOT", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
			machine = append(machine, p)
		}
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		machine = append(machine, real)
	}
	for _, name := range names {
		for _, p := range machine {
			if strings.Contains(string(content[name]), p) {
				t.Errorf("the packed %s holds the machine's path %s", name, p)
			}
		}
	}

	owner := append(os.Environ(), "RUKH_HOME="+filepath.Join(dir, "owner"))
	rukhIn(t, dir, owner, "trust", "add", "acme", "acme.key.pub")
	rukhIn(t, dir, owner, "ext", "install", "hello.tar.gz")
	if out := rukhIn(t, dir, owner, "hello", "Ada", "--shout"); out != "HELLO, ADA!\n" {
		t.Errorf("the owner's rukh hello Ada --shout prints %q", out)
	}
}

// Ctrl-C at a real terminal, under a job-control shell, while the python
// template's program runs: the terminal sends it SIGINT as well as rukh,
// which stops the call with SIGTERM; the program ends quietly (no
// KeyboardInterrupt traceback on the terminal) with 130, and rukh exits
// 130 with the call recorded cancelled/interrupted. On both hosts. The
// program is held in its handler by a line the test adds there, which
// says when it is reached.
func TestTemplateCtrlC(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed for a job-control shell: %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the python template runs python3:", err)
	}
	forEachHost(t, func(t *testing.T, h *testHost) {
		dir := testhome.TempDir(t)
		home := filepath.Join(dir, "home")
		env := append(os.Environ(), "RUKH_HOME="+home, "RUKH="+h.Rukh, "TERM=dumb", "PS1=", "PS2=")
		rukhIn(t, dir, env, "ext", "new", "acme.hello", "--lang", "python")
		rel := filepath.Join(dir, "hello")
		prog := filepath.Join(rel, "bin", "hello")
		src, err := os.ReadFile(prog)
		if err != nil {
			t.Fatal(err)
		}
		const at = "def greet(inputs):\n"
		if !strings.Contains(string(src), at) {
			t.Fatalf("the template has no %q to hold it at", at)
		}
		held := strings.Replace(string(src), at, at+"    print(\"held\", flush=True)\n    import time\n    time.sleep(600)\n", 1)
		if err := os.WriteFile(prog, []byte(held), 0o755); err != nil {
			t.Fatal(err)
		}
		testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
		h.serve(t, home)

		master, slave := testpty.Open(t)
		t.Cleanup(func() { master.Close() })
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "--norc", "--noprofile", "-m", "-c", `"$RUKH" hello Ada; echo "status=$?"`)
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		s := newScreen(master)
		pos := 0
		s.expect(t, &pos, "held")
		master.Write([]byte{0x03}) // Ctrl-C
		s.expect(t, &pos, "status=130")
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("the shell: %v\n%s", err, s)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the shell did not exit within 30 s of its script's end:\n%s", s)
		}
		if text := s.String(); strings.Contains(text, "Traceback") || strings.Contains(text, "KeyboardInterrupt") {
			t.Errorf("Ctrl-C showed a traceback:\n%s", text)
		}
		out := rukhIn(t, dir, env, "invocations", "list", "--json")
		var invs []struct {
			Outcome    string `json:"outcome"`
			Reason     string `json:"reason"`
			ExitStatus int    `json:"exitStatus"`
		}
		if err := json.Unmarshal([]byte(out), &invs); err != nil || len(invs) != 1 {
			t.Fatalf("invocations list: %v: %s", err, out)
		}
		if inv := invs[0]; inv.Outcome != "cancelled" || inv.Reason != "interrupted" {
			t.Errorf("the call is recorded %s/%s (program exit %d); want cancelled/interrupted", inv.Outcome, inv.Reason, inv.ExitStatus)
		}
	})
}
