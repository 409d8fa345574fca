package trust

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedCodes keeps docs/releases.md honest: every code the
// package defines is in its table.
func TestDocumentedCodes(t *testing.T) {
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "releases.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := regexp.MustCompile(`Code = "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(codes) < 20 {
		t.Fatalf("found only %d codes in errors.go", len(codes))
	}
	for _, m := range codes {
		if !strings.Contains(string(docs), "| `"+m[1]+"` |") {
			t.Errorf("code %s is not in the table of docs/releases.md", m[1])
		}
	}
}
