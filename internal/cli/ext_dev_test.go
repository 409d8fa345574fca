package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// ext dev watches the release's directories but those its ignore list
// leaves out: a repository's .git (and its objects), __pycache__, and
// what the release's own .rukhignore names.
func TestWatchReleaseSkipsIgnored(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"bin", "share/docs", ".git/objects/ab", "__pycache__", "build/out"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".rukhignore"), []byte("/build/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	watchRelease(w, dir)
	var got []string
	for _, p := range w.WatchList() {
		rel, _ := filepath.Rel(dir, p)
		got = append(got, filepath.ToSlash(rel))
	}
	slices.Sort(got)
	if want := []string{".", "bin", "share", "share/docs"}; !slices.Equal(got, want) {
		t.Errorf("watched %q, want %q", got, want)
	}
}
