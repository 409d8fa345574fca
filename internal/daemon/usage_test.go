package daemon

import (
	"flag"
	"strings"
	"testing"
)

// TestUsage checks `NAMEd --help`'s text for an embedder's name: it says
// what the binary is, lists every flag Main parses, the environment with
// the name's own variables and points at its man page, and names no
// other CLI.
func TestUsage(t *testing.T) {
	text := Usage("acme", nil)
	fs, _, _ := flags("acme")
	var want []string
	for _, name := range []string{"idle-timeout", "version"} {
		if fs.Lookup(name) == nil {
			t.Fatalf("no flag --%s", name)
		}
		want = append(want, "\n  --"+name+" ")
	}
	want = append(want, "acmed is the core of acme", "\nUsage:\n", "\nFlags:\n", "\nEnvironment:\n",
		"\n  ACME_HOME ", "\n  ACME_DAEMON=auto ", "$XDG_RUNTIME_DIR/acme/acmed.sock", "LISTEN_FDS", "man acmed.", "acmed --cli ARGS", "-h, --help")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("acmed --help has no %q:\n%s", w, text)
		}
	}
	if strings.Contains(strings.ToLower(text), "rukh") {
		t.Errorf("acmed --help names rukh:\n%s", text)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if got := strings.Count(text, "\n  --"); got != n {
		t.Errorf("acmed --help lists %d flags, the flag set has %d:\n%s", got, n, text)
	}
}
