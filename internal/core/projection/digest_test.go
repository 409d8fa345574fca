package projection

import (
	"regexp"
	"strings"
	"testing"
)

// isDigest accepts exactly what the expression it stands for matches.
func FuzzDigest(f *testing.F) {
	re := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	hex := strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{"", "sha256:", "sha256:" + hex, "sha256:" + hex + "0", "sha256:" + hex[1:], "sha256:" + strings.ToUpper(hex), "sha512:" + hex, "xsha256:" + hex} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDigest(s), re.MatchString(s); got != want {
			t.Errorf("isDigest(%q) = %v; its expression %v", s, got, want)
		}
	})
}
