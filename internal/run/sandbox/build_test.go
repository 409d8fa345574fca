package sandbox_test

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

// Without a C compiler, or without the kernel headers the helper
// includes, Build says which packages to install instead of exec's
// `"cc": executable file not found`.
func TestBuildSaysWhatToInstall(t *testing.T) {
	dir := t.TempDir()
	// A compiler that has no kernel headers, as gcc and clang say it.
	fake := func(name, says string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho \""+says+"\" >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, cc string
		want           []string
	}{
		{"no cc on PATH", t.TempDir(), "", []string{"rukh-sandbox needs a C compiler", `there is no "cc"`, "apt-get install gcc linux-libc-dev"}},
		{"no such CC", os.Getenv("PATH"), "no-such-cc", []string{"rukh-sandbox needs a C compiler", `"no-such-cc"`, "apt-get install gcc linux-libc-dev", "set $CC"}},
		{"gcc without headers", os.Getenv("PATH"), fake("gcc", "rukh-sandbox.c:43:10: fatal error: linux/audit.h: No such file or directory"),
			[]string{"rukh-sandbox needs the Linux kernel headers", "did not find linux/audit.h", "apt-get install linux-libc-dev"}},
		{"clang without headers", os.Getenv("PATH"), fake("clang", "rukh-sandbox.c:41:10: fatal error: 'asm/ioctls.h' file not found"),
			[]string{"did not find asm/ioctls.h", "apt-get install linux-libc-dev"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			t.Setenv("CC", tc.cc)
			err := sandbox.Build(filepath.Join(t.TempDir(), "rukh-sandbox"))
			var ce *sandbox.CompilerError
			if !errors.As(err, &ce) {
				t.Fatalf("Build = %v; want a *CompilerError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Build says %q; want it to say %q", err, w)
				}
			}
		})
	}
	// Any other failure of the compiler is reported as it is.
	t.Setenv("CC", fake("broken", "internal compiler error"))
	err := sandbox.Build(filepath.Join(t.TempDir(), "rukh-sandbox"))
	var ce *sandbox.CompilerError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "internal compiler error") {
		t.Errorf("a compiler that fails otherwise: %v; want its own output", err)
	}
}

// TestBuildStripped checks that the helper Build gives (make build's, the
// .deb's, an embedder's) is stripped: no symbol table and no debugging
// sections, which lintian reports as unstripped-binary-or-object.
func TestBuildStripped(t *testing.T) {
	f, err := elf.Open(helper)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB || strings.HasPrefix(s.Name, ".debug") {
			t.Errorf("%s has section %s (%v): it is not stripped", helper, s.Name, s.Type)
		}
	}
}

// $CC may carry flags of its own, as make allows: "cc -O1" is the
// compiler cc, given -O1.
func TestBuildWithFlagsInCC(t *testing.T) {
	t.Setenv("CC", "cc -O1")
	dst := filepath.Join(t.TempDir(), "rukh-sandbox")
	if err := sandbox.Build(dst); err != nil {
		t.Fatalf("Build with CC=%q: %v", "cc -O1", err)
	}
	if _, err := elf.Open(dst); err != nil {
		t.Errorf("%s: %v", dst, err)
	}
}
