package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `make build` on a machine without a C compiler fails saying which
// packages to install, and builds nothing.
func TestNoCompiler(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	out := filepath.Join(t.TempDir(), "bin", "rukh-sandbox")
	var stderr strings.Builder
	if status := run([]string{"-o", out}, &stderr); status != 1 {
		t.Errorf("mksandbox without a compiler exits %d, want 1", status)
	}
	want := "mksandbox: rukh-sandbox needs a C compiler, and there is no \"cc\""
	if got := stderr.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, "Debian/Ubuntu: apt-get install gcc linux-libc-dev") {
		t.Errorf("mksandbox says %q; want %q… and the packages to install", got, want)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

// An output given as an argument, not with -o, is refused: it would
// otherwise build ./rukh-sandbox where the caller did not ask.
func TestArgumentIsRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var stderr strings.Builder
	if status := run([]string{filepath.Join(dir, "out")}, &stderr); status != 2 {
		t.Errorf("mksandbox PATH exits %d, want 2", status)
	}
	if want := "unexpected argument"; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "-o PATH") {
		t.Errorf("mksandbox PATH says %q; want %q and -o PATH", stderr.String(), want)
	}
	for _, name := range []string{"rukh-sandbox", "out"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written", name)
		}
	}
}
