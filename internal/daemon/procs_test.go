package daemon

import (
	"slices"
	"testing"
)

// TestProcessors: the daemon, started on one processor, takes all of
// them at the first request that overlaps another and goes back to one
// once settle requests in a row came alone; GOMAXPROCS fixes the count.
func TestProcessors(t *testing.T) {
	alone := func(n int) []int { return slices.Repeat([]int{1}, n) }
	seq := func(parts ...[]int) []int { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name    string
		fixed   bool
		serving []int  // what each admitted request sees served, that one included
		want    []bool // what was set in turn (true: one)
	}{
		{"alone: nothing changes", false, alone(3 * settle), nil},
		{"an overlap: all", false, seq(alone(3), []int{2}), []bool{false}},
		{"more overlaps: set once", false, []int{2, 3, 2, 5}, []bool{false}},
		{"fewer than settle alone after it: still all", false, seq([]int{2}, alone(settle-1)), []bool{false}},
		{"settle alone after it: one", false, seq([]int{2}, alone(settle)), []bool{false, true}},
		{"an overlap among them starts the count again", false, seq([]int{2}, alone(settle-1), []int{2}, alone(settle-1)), []bool{false}},
		{"and back and forth", false, seq([]int{2}, alone(settle), []int{2}, alone(settle)), []bool{false, true, false, true}},
		{"fixed by GOMAXPROCS", true, seq([]int{2}, alone(settle), []int{2}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []bool
			p := &processors{fixed: tc.fixed, one: !tc.fixed, set: func(one bool) { got = append(got, one) }}
			for _, n := range tc.serving {
				p.admitted(n)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("set %v, want %v", got, tc.want)
			}
		})
	}
}
