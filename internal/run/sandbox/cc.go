package sandbox

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
)

// CompilerError is a helper that could not be built for want of a C
// compiler, or of the Linux kernel headers it includes (it needs no libc):
// the message says which packages to install.
type CompilerError struct {
	Helper string // the helper's file name: rukh-sandbox, NAME-sandbox
	CC     string // the compiler asked for: $CC, or cc
	Header string // the header the compiler did not find; "" when the compiler itself is missing
	Err    error  // what exec or the compiler said
}

func (e *CompilerError) Error() string {
	if e.Header == "" {
		return fmt.Sprintf("%s needs a C compiler, and there is no %q (%v): install gcc and the Linux kernel headers "+
			"(Debian/Ubuntu: apt-get install gcc linux-libc-dev, or build-essential; Fedora: dnf install gcc kernel-headers; "+
			"Alpine: apk add gcc linux-headers), or set $CC to a C compiler", e.Helper, e.CC, e.Err)
	}
	return fmt.Sprintf("%s needs the Linux kernel headers, and %s did not find %s: install them "+
		"(Debian/Ubuntu: apt-get install linux-libc-dev; Fedora: dnf install kernel-headers; Alpine: apk add linux-headers)",
		e.Helper, e.CC, e.Header)
}

func (e *CompilerError) Unwrap() error { return e.Err }

// missingHeader finds, in a compiler's output, a kernel header it could
// not find: gcc's "fatal error: linux/audit.h: No such file or
// directory", clang's "fatal error: 'linux/audit.h' file not found".
// Compiled on first use: a binary that links this package but never
// compiles the helper does not pay for it at every start.
var missingHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`fatal error: '?((?:linux|asm|asm-generic)/[\w./-]+\.h)'?:? (?:No such file or directory|file not found)`)
})

// compilerError is the CompilerError that out, a failed compile's
// output, shows, or nil.
func compilerError(dst, cc string, out []byte, err error) error {
	m := missingHeader().FindSubmatch(out)
	if m == nil {
		return nil
	}
	return &CompilerError{Helper: filepath.Base(dst), CC: cc, Header: string(m[1]), Err: err}
}
