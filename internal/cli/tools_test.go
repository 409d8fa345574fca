//go:build !rukh_oneshot

package cli

import (
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/projection"
)

// The rule a denied-tool warning suggests covers every resource the
// template can expand to: "*" per input, "**" for a path from its first
// input on ("*" stops at a "/").
func TestSuggestedResource(t *testing.T) {
	for in, want := range map[string]string{
		"env:{env}":             "env:*",
		"host:api.example":      "host:api.example",
		"repo:{org}/{name}":     "repo:*/*",
		"path:{file}":           "path:**",
		"path:/srv/{site}/logs": "path:/srv/**",
		"path:/etc/hosts":       "path:/etc/hosts",
	} {
		if got := suggestedResource(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// longNames counts a client's prefix with each name, and says what to
// change: the naming, or, when names are compact already, the server's
// name.
func TestLongNames(t *testing.T) {
	full := "acme_deploy_status__" + strings.Repeat("a", 64)
	compact := "acme_deploy_status__" + strings.Repeat("a", 32) // 52
	claude := func(server string) nameLimit {
		return nameLimit{Max: 64, Prefix: "mcp__" + server + "__", With: " with the prefix", Who: "Claude Code rejects them"}
	}
	for _, tc := range []struct {
		names  []string
		l      nameLimit
		naming projection.Naming
		want   string
	}{
		{[]string{full, full}, nameLimit{Max: 64, Who: "many MCP clients reject them"}, projection.Full,
			`warning: 2 tool names longer than 64 characters; many MCP clients reject them. Set "mcp": {"naming": "compact"} in the profile (docs/projection.md)` + "\n"},
		{[]string{compact}, nameLimit{Max: 64, Who: "x"}, projection.Compact, ""},
		{[]string{compact}, claude("rukh"), projection.Compact, ""}, // 11 + 52 = 63
		{[]string{compact}, claude("rukh-2"), projection.Compact,
			"warning: 1 tool name longer than 64 characters with the prefix; Claude Code rejects them. Give the server a shorter name in the client (--name)\n"},
	} {
		if got := longNames(tc.names, tc.l, tc.naming); got != tc.want {
			t.Errorf("%v %+v: %q, want %q", len(tc.names), tc.l, got, tc.want)
		}
	}
}
