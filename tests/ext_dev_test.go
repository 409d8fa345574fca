package tests

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// `rukh ext dev DIR` installs DIR pinned by its digest, then again each
// time it changes, replacing its previous install; a change that breaks
// the release is reported and the last good one stays; Ctrl-C ends it.
func TestExtDev(t *testing.T) {
	rukh, _ := hostBinaries(t)
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "hello")
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "RUKH_HOME="+home)
	newCmd := exec.Command(rukh, "ext", "new", "acme.hello", "--lang", "python")
	newCmd.Dir, newCmd.Env = dir, env
	if out, err := newCmd.CombinedOutput(); err != nil {
		t.Fatalf("ext new: %v: %s", err, out)
	}

	dev := exec.Command(rukh, "ext", "dev", rel)
	dev.Env = env
	stdout, err := dev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := dev.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(io.MultiReader(stdout))
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	errLines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			errLines <- sc.Text()
		}
		close(errLines)
	}()
	go func() { dev.Wait(); close(exited) }()
	t.Cleanup(func() { dev.Process.Kill(); <-exited })
	next := func(ch <-chan string, prefix string) string {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-ch:
				if !ok {
					t.Fatalf("ext dev ended before it said %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("ext dev did not say %q within 30 s", prefix)
			}
		}
	}
	digest := func() string {
		m, err := trust.BuildManifest(rel)
		if err != nil {
			t.Fatal(err)
		}
		return m.Digest()
	}
	if l := next(lines, "installed acme.hello 0.1.0"); !strings.Contains(l, digest()) {
		t.Fatalf("first install: %q, want digest %s", l, digest())
	}
	next(errLines, "watching ")

	run := func(args ...string) string {
		c := exec.Command(rukh, args...)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			t.Fatalf("rukh %v: %v", args, err)
		}
		return string(out)
	}
	// An edit: installed again, and it is what runs.
	prog := filepath.Join(rel, "bin", "hello")
	src, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(prog, []byte(strings.Replace(string(src), `"Hello, %s!"`, `"Hi, %s!"`, 1)), 0o755)
	if l := next(lines, "installed acme.hello 0.1.0"); !strings.Contains(l, digest()) {
		t.Fatalf("after the edit: %q, want digest %s", l, digest())
	}
	if out := run("hello", "Ada"); out != "Hi, Ada!\n" {
		t.Errorf("after the edit the command says %q", out)
	}
	var releases []struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(run("ext", "list", "--json")), &releases); err != nil || len(releases) != 1 {
		t.Errorf("releases after two dev installs: %+v (%v); want the newest only", releases, err)
	}
	// A break: reported, the last good release stays.
	desc := filepath.Join(rel, "rukh-extension.json")
	good, _ := os.ReadFile(desc)
	os.WriteFile(desc, []byte(`{"schema": "rukh.extension/2"}`), 0o644)
	next(errLines, "rukh: "+rel+" is not installed; fix it and save again")
	if out := run("hello", "Ada"); out != "Hi, Ada!\n" {
		t.Errorf("after a broken save the command says %q", out)
	}
	// Restored, it is the release already installed: nothing to do.
	os.WriteFile(desc, good, 0o644)

	dev.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("ext dev did not end within 30 s of Ctrl-C")
	}
}
