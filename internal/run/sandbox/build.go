package sandbox

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed helper/rukh-sandbox.c
var helperSource []byte

// CFlags build the helper: static and freestanding (no libc, no dynamic
// loader: nothing runs before its own code), warnings on, and stripped
// (-s: no symbol table, as the Go binaries are linked with -s -w;
// -fno-ident: no .comment naming the compiler; the
// .deb ships what make build gives).
var CFlags = []string{
	"-O2", "-Wall", "-Wextra", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin",
	"-fno-stack-protector", "-fno-asynchronous-unwind-tables", "-fno-pie", "-no-pie", "-s", "-fno-ident",
}

// SourcePath is the helper's source in the repository.
const SourcePath = "internal/run/sandbox/helper/rukh-sandbox.c"

// Build compiles the helper (this package's copy of its source) for this
// machine's architecture to dst with $CC (default cc).
func Build(dst string) error { return BuildSource(helperSource, dst) }

// BuildSource is Build of the helper's source src (a tree's SourcePath).
// Without a C compiler, or without the kernel headers, the error is a
// *CompilerError that says what to install.
func BuildSource(src []byte, dst string) error {
	// $CC may carry flags of its own ("gcc -m64"), as make allows.
	cc, ccFlags := "cc", []string(nil)
	if f := strings.Fields(os.Getenv("CC")); len(f) > 0 {
		cc, ccFlags = f[0], f[1:]
	}
	if _, err := exec.LookPath(cc); err != nil {
		return &CompilerError{Helper: filepath.Base(dst), CC: cc, Err: err}
	}
	dir, err := os.MkdirTemp("", "rukh-sandbox-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "rukh-sandbox.c")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return err
	}
	args := append(append(append([]string{}, ccFlags...), CFlags...), "-o", dst, file)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		if cerr := compilerError(dst, cc, out, err); cerr != nil {
			return cerr
		}
		return fmt.Errorf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return nil
}
