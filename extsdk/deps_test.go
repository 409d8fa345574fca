package extsdk

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// An extension links the SDK, the channel and the strict parser, and
// nothing else outside the standard library: no store, no CLI, no host.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	want := []string{
		"github.com/rukh-cli/rukh/extsdk",
		"github.com/rukh-cli/rukh/internal/release/extproto",
		"github.com/rukh-cli/rukh/internal/strictjson",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("extsdk links %q; want only %q", got, want)
	}
}
