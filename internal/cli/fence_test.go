package cli

import (
	"slices"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// TestAdministrativeFence keeps the fence an allowlist (invariant I5,
// docs/invariants.md, as docs/adr/0004-containment.md builds it): MCP
// tools come only from
// installed extension commands, and no extension may take a built-in's
// route, so no built-in — trust, ext install, profile apply, daemon … —
// can ever become a tool or be shadowed, whatever a profile says. Every
// top-level built-in of the tree must be a reserved word.
func TestAdministrativeFence(t *testing.T) {
	root := NewRoot(&Factory{Name: "rukh"})
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if !slices.Contains(descriptor.ReservedWords, c.Name()) {
			t.Errorf("built-in %q is not in descriptor.ReservedWords: an extension could declare it as a route", c.Name())
		}
	}
	if len(root.Commands()) < 10 {
		t.Fatalf("only %d built-ins found; the walk is broken", len(root.Commands()))
	}
}

// TestSourceCommandsAreFenced: the release-source commands are built-ins
// under ext (a reserved word), so no profile can make them tools, and
// building the tree for a listing runs none of them.
func TestSourceCommandsAreFenced(t *testing.T) {
	root := NewRoot(&Factory{Name: "rukh"})
	for _, path := range [][]string{{"ext", "publish"}, {"ext", "install"}, {"ext", "outdated"}, {"ext", "upgrade"}} {
		c, _, err := root.Find(path)
		if err != nil || c.Name() != path[1] || c.Parent().Name() != "ext" {
			t.Errorf("rukh %v: %v", path, err)
		}
	}
	if !slices.Contains(descriptor.ReservedWords, "ext") {
		t.Error("ext is not a reserved word")
	}
}
