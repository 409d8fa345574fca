package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOnlyTheHost keeps the seam of docs/architecture.md §3 (invariant
// I1): commands reach the core
// only through a local.Host (Factory.Host), never by opening the store or building an
// admin or invocation core of their own.
func TestOnlyTheHost(t *testing.T) {
	forbidden := regexp.MustCompile(`\b(store\.Open|admin\.New|invoke\.New|local\.New)\(`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range forbidden.FindAllIndex(src, -1) {
			line := strings.Count(string(src[:m[0]]), "\n") + 1
			call := string(src[m[0]:m[1]])
			if name == "factory.go" && call == "local.New(" {
				continue // the one place the Host is chosen
			}
			t.Errorf("%s:%d calls %s; go through Factory.Host", name, line, call)
		}
	}
}
