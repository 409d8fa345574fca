package cli

import (
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/values"
)

// A list given by flag is repeated as the flag; a positional list is
// given argument by argument.
func TestListUsage(t *testing.T) {
	item := &values.Spec{Type: values.String}
	flag := descriptor.Input{Spec: values.Spec{ID: "tags", Type: values.List, Item: item}, Flag: "tag"}
	pos := descriptor.Input{Spec: values.Spec{ID: "targets", Type: values.List, Item: item}, Positional: 0}
	if got := flagUsage(flag); !strings.Contains(got, "list of string; repeat the flag") {
		t.Errorf("flag list: %q", got)
	}
	if got := flagUsage(pos); !strings.Contains(got, "list of string; give each as its own argument") || strings.Contains(got, "flag") {
		t.Errorf("positional list: %q", got)
	}
}
