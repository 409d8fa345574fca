package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runExtNew runs `ext new acme.hello --lang LANG` in dir.
func runExtNew(t *testing.T, dir, lang string) error {
	t.Helper()
	f := &Factory{Name: "rukh", Dir: dir, IO: IOStreams{Out: io.Discard, ErrOut: io.Discard}}
	cmd := newExtNewCmd(f)
	cmd.SetArgs([]string{"acme.hello", "--lang", lang})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.Execute()
}

// scaffoldPaths are the paths `ext new acme.hello` creates, in order, as
// the hook sees them.
func scaffoldPaths(t *testing.T, lang string) []string {
	t.Helper()
	var seen []string
	scaffoldHook = func(rel string) { seen = append(seen, rel) }
	defer func() { scaffoldHook = nil }()
	if err := runExtNew(t, t.TempDir(), lang); err != nil {
		t.Fatal(err)
	}
	return seen
}

// A symbolic link planted at any path `ext new` creates, after its
// check that the directory is free and right before it creates that path
// (as another user of a shared sticky directory can), makes it fail
// naming the path, and nothing is written through the link: the link's
// target, a directory or a file outside, is as it was. So is a directory
// of the scaffold replaced by a link between two files (renamed away, a
// link in its place). Planted deterministically by a hook, not raced.
func TestExtNewRefusesPlantedLinks(t *testing.T) {
	for _, lang := range []string{"sh", "go"} {
		paths := scaffoldPaths(t, lang)
		if !slices.Contains(paths, "hello") || !slices.Contains(paths, "hello/bin") || !slices.Contains(paths, "hello/rukh-extension.json") {
			t.Fatalf("%s: the scaffold creates %v", lang, paths)
		}
		for i, at := range paths {
			// A link to a directory outside, and one to a file outside,
			// in place of the path about to be created.
			for _, toDir := range []bool{true, false} {
				t.Run(lang+"/link at "+at+map[bool]string{true: " to a directory", false: " to a file"}[toDir], func(t *testing.T) {
					work, outside := t.TempDir(), t.TempDir()
					target := filepath.Join(outside, "victim")
					if toDir {
						if err := os.Mkdir(target, 0o755); err != nil {
							t.Fatal(err)
						}
					} else if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					before := tree(t, outside)
					scaffoldHook = func(rel string) {
						if rel == at {
							if err := os.Symlink(target, filepath.Join(work, rel)); err != nil {
								t.Error(err)
							}
						}
					}
					defer func() { scaffoldHook = nil }()
					err := runExtNew(t, work, lang)
					if err == nil || !strings.Contains(err.Error(), filepath.FromSlash(at)) {
						t.Fatalf("ext new with a link planted at %s: %v; want a refusal naming it", at, err)
					}
					if after := tree(t, outside); after != before {
						t.Errorf("written through the link at %s:\n%s\nwas\n%s", at, after, before)
					}
				})
			}
			// A directory of the scaffold, already made, replaced by a
			// link right before a later path is created.
			if i == 0 {
				continue
			}
			for _, dir := range []string{"hello", "hello/bin"} {
				if !slices.Contains(paths[:i], dir) {
					continue // not made yet
				}
				t.Run(lang+"/"+dir+" replaced by a link before "+at, func(t *testing.T) {
					work, outside := t.TempDir(), t.TempDir()
					before := tree(t, outside)
					scaffoldHook = func(rel string) {
						if rel == at {
							p := filepath.Join(work, dir)
							if err := os.Rename(p, p+".moved"); err != nil {
								t.Error(err)
							}
							if err := os.Symlink(outside, p); err != nil {
								t.Error(err)
							}
						}
					}
					defer func() { scaffoldHook = nil }()
					err := runExtNew(t, work, lang)
					if err == nil || !strings.Contains(err.Error(), filepath.FromSlash(dir)) {
						t.Fatalf("ext new with %s replaced by a link: %v; want a refusal naming it", dir, err)
					}
					if after := tree(t, outside); after != before {
						t.Errorf("written through the link at %s:\n%s\nwas\n%s", dir, after, before)
					}
				})
			}
		}
	}
}

// tree lists every path under dir with its content.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
