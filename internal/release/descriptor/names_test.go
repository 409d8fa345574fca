package descriptor

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The expressions the name matchers stand for (names.go): each matcher
// must accept exactly what its expression matches.
var nameGrammars = []struct {
	name  string
	match func(string) bool
	re    *regexp.Regexp
}{
	{"package", isPackage, regexp.MustCompile(`^[a-z0-9]+(\.[a-z0-9-]+)*$`)},
	{"publisher", isPublisher, regexp.MustCompile(`^[a-z0-9]+([.-][a-z0-9]+)*$`)},
	{"command id and flag", isCommandID, regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)},
	{"words", Words, regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)},
	{"input id", isInputID, regexp.MustCompile(`^[a-z][a-z0-9_]*$`)},
	{"short flag", isShort, regexp.MustCompile(`^[a-zA-Z]$`)},
	{"digest", ValidDigest, regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)},
	{"hex64", Hex64, regexp.MustCompile(`^[0-9a-f]{64}$`)},
	{"action", isAction, regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$`)},
	{"semver", isSemver, regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)},
}

var rePlaceholder = regexp.MustCompile(`\{([^{}]*)\}`)

var hex64 = strings.Repeat("0123456789abcdef", 4)

var nameSeeds = []string{
	"", "a", "A", "0", "-", ".", "_", "a-b", "a--b", "-a", "a-", "a.b", "a..b", ".a", "a.", "a.-b", "a.b-", "a.-",
	"acme.deploy", "acme.my-tool.x", "0abc", "a_b", "a_", "ab", "Ab", "aB", "deploy.read", "deploy.Read", "deploy.0",
	"a.b.c", "a-b.c-d", "é", "a\x00", "a b",
	"1.4.0", "0.0.0", "01.0.0", "1.0", "1.0.0.0", "1.0.0-", "1.0.0-rc.1", "1.0.0-0", "1.0.0-01", "1.0.0-0a", "1.0.0-a..b",
	"1.0.0+", "1.0.0+build.01", "1.0.0-rc+b", "1.0.0-+b", "1.0.0+b+c", "1.0.0-x-y.z", "1.0.0--", "1.0.0-A.b-C", "v1.0.0",
	"sha256:" + hex64, "sha256:" + hex64 + "0", "sha256:" + hex64[1:], "sha256:" + strings.ToUpper(hex64), "sha512:" + hex64, hex64, hex64[:63] + "g",
	"{a}", "{a}{b}", "{{a}}", "{a{b}", "{}", "x{a}y{", "}{a", "{é}", "{a\x00}",
}

func TestNameMatchers(t *testing.T) {
	for _, s := range nameSeeds {
		checkNames(t, s)
	}
}

func FuzzNames(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(checkNames)
}

func checkNames(t *testing.T, s string) {
	for _, g := range nameGrammars {
		if got, want := g.match(s), g.re.MatchString(s); got != want {
			t.Errorf("%s(%q) = %v; its expression %v", g.name, s, got, want)
		}
	}
	var want []string
	for _, m := range rePlaceholder.FindAllStringSubmatch(s, -1) {
		want = append(want, m[1])
	}
	if got := placeholders(s); !slices.Equal(got, want) {
		t.Errorf("placeholders(%q) = %q; its expression %q", s, got, want)
	}
}
