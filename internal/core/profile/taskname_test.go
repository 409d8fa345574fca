package profile

import (
	"regexp"
	"testing"
)

// isTaskName accepts exactly what the expression it stands for matches.
func FuzzTaskName(f *testing.F) {
	re := regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	for _, s := range []string{"", "a", "agent", "a-", "a--b", "-a", "0a", "A", "a_b", "ok-2", "é", "a\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isTaskName(s), re.MatchString(s); got != want {
			t.Errorf("isTaskName(%q) = %v; its expression %v", s, got, want)
		}
	})
}
