package mcp

import (
	"fmt"
	"testing"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// A call's progress notifications only go forward and never beyond their
// total, whatever the command reports (the per-tool projection passes a
// command's own reports through this gate).
func TestProgressGate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name    string
		reports []wire.Progress
		want    string
	}{
		{"forward", []wire.Progress{{Message: "a", Done: f(1), Total: f(3)}, {Message: "b", Done: f(2), Total: f(3)}, {Message: "c", Done: f(3), Total: f(3)}},
			"[1/3 a 2/3 b 3/3 c]"},
		{"back and equal are not sent", []wire.Progress{{Message: "a", Done: f(2), Total: f(3)}, {Message: "b", Done: f(1), Total: f(3)}, {Message: "c", Done: f(2), Total: f(3)}, {Message: "d", Done: f(3), Total: f(3)}},
			"[2/3 a 3/3 d]"},
		{"beyond the total is the total, once", []wire.Progress{{Message: "a", Done: f(5), Total: f(3)}, {Message: "b", Done: f(6), Total: f(3)}},
			"[3/3 a]"},
		{"no total", []wire.Progress{{Message: "a", Done: f(1)}, {Message: "b", Done: f(10)}, {Message: "c", Done: f(4)}},
			"[1/0 a 10/0 b]"},
		{"messages alone: the first", []wire.Progress{{Message: "a"}, {Message: "b"}},
			"[0/0 a]"},
		{"negative", []wire.Progress{{Message: "a", Done: f(-1), Total: f(3)}, {Message: "b", Done: f(0), Total: f(3)}},
			"[0/3 b]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g progressGate
			var got []string
			for _, r := range tc.reports {
				if n, ok := g.next(&r); ok {
					got = append(got, fmt.Sprintf("%v/%v %s", n.Progress, n.Total, n.Message))
				}
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("sent %v, want %s", got, tc.want)
			}
		})
	}
}
