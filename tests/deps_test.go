package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the seams by the import graph itself (go list
// -deps), not by reading source: the MCP presentation reaches the core
// only through seam and wire; the thin client and the wire protocol link
// nothing of the core; the CLI binary never links the daemon.
func TestDependencies(t *testing.T) {
	for _, tc := range []struct {
		pkg       string
		forbidden []string // import path prefixes that must not be reached
		onlyRukh  []string // when set: the only project packages allowed
	}{
		{"../mcp", []string{"go.etcd.io/bbolt"}, []string{"wire", "seam", "mcp"}},
		{"../thin", []string{"go.etcd.io/bbolt", "github.com/spf13/cobra"}, []string{"wire", "thin"}},
		{"../wire", nil, []string{"wire"}},
		{"../seam", nil, []string{"wire", "seam"}},
		{"../cmd/rukh", []string{"github.com/rukh-cli/rukh/daemon", "github.com/coreos/go-systemd"}, nil},
		{"../cli", []string{"github.com/rukh-cli/rukh/daemon"}, nil},
	} {
		out, err := exec.Command("go", "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tc.forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", tc.pkg, dep)
				}
			}
			rest, ok := strings.CutPrefix(dep, "github.com/rukh-cli/rukh/")
			if !ok || tc.onlyRukh == nil {
				continue
			}
			allowed := false
			for _, a := range tc.onlyRukh {
				allowed = allowed || rest == a
			}
			if !allowed {
				t.Errorf("%s depends on github.com/rukh-cli/rukh/%s; only %v may be reached", tc.pkg, rest, tc.onlyRukh)
			}
		}
	}
}
