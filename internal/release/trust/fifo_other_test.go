//go:build !unix

package trust

import "testing"

func mkfifo(t *testing.T, path string) {
	t.Skip("no named pipes on this system")
}
