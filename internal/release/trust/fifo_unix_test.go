//go:build unix

package trust

import (
	"syscall"
	"testing"
)

func mkfifo(t *testing.T, path string) {
	t.Helper()
	must(t, syscall.Mkfifo(path, 0o644))
}
