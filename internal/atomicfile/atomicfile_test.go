package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rukh-cli/rukh/internal/atomicfile"
)

// Replace replaces with the mode given and leaves no temporary file;
// WriteNew refuses a name that is taken, leaving it as it was.
func TestReplaceAndWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, data := range []string{"one", "two"} {
		if err := atomicfile.Replace(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != data {
			t.Errorf("read %q, want %q", b, data)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	if err := atomicfile.WriteNew(p, []byte("three"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteNew over a file: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Errorf("a refused WriteNew changed the file: %q", b)
	}
	if err := atomicfile.WriteNew(filepath.Join(dir, "g"), []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left in the directory: %v", entries)
	}
}
