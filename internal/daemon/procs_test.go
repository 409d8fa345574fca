package daemon

import (
	"slices"
	"testing"
)

// TestProcessors: the daemon goes to one processor once settle requests
// in a row came alone, back to all of them at the first that overlaps
// another, and never changes them when GOMAXPROCS fixes the count.
func TestProcessors(t *testing.T) {
	alone := func(n int) []int { return slices.Repeat([]int{1}, n) }
	for _, tc := range []struct {
		name    string
		fixed   bool
		serving []int  // what each admitted request sees served
		want    []bool // what was set (true: one)
	}{
		{"fewer than settle alone", false, alone(settle - 1), nil},
		{"settle alone", false, alone(settle), []bool{true}},
		{"many alone: set once", false, alone(3 * settle), []bool{true}},
		{"an overlap before settle starts the count again", false, append(append(alone(settle-1), 2), alone(settle-1)...), nil},
		{"an overlap on one processor: all again", false, append(alone(settle), 2, 3, 2), []bool{true, false}},
		{"and back once settle come alone", false, append(append(alone(settle), 2), alone(settle)...), []bool{true, false, true}},
		{"fixed by GOMAXPROCS", true, append(append(alone(settle), 2), alone(settle)...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []bool
			p := &processors{fixed: tc.fixed, set: func(one bool) { got = append(got, one) }}
			for _, n := range tc.serving {
				p.admitted(n)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("set %v, want %v", got, tc.want)
			}
		})
	}
}
