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
