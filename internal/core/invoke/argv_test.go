package invoke

import "testing"

// An approval of a passthrough call is of its exact argv: argument lists
// that join to the same text, or differ only in bytes that are not UTF-8,
// are different calls.
func TestArgvDigestIsOfTheExactArguments(t *testing.T) {
	lists := [][]string{
		nil,
		{""},
		{"", ""},
		{"--help"},
		{"--he", "lp"},
		{"--help", ""},
		{"a\xff"},
		{"a\xfe"},
		{"a\ufffd"},
		{"a b"},
		{"a", "b"},
	}
	seen := map[[32]byte][]string{}
	for _, argv := range lists {
		d := argvDigest(argv)
		if other, ok := seen[d]; ok {
			t.Errorf("%q and %q share a digest", argv, other)
		}
		seen[d] = argv
		if argvDigest(append([]string(nil), argv...)) != d {
			t.Errorf("%q: the digest is not a function of the arguments", argv)
		}
	}
}
