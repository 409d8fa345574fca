package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// archiveNames lists the entries of a release archive, in order.
func archiveNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	for _, e := range readArchive(t, data) {
		names = append(names, e.hdr.Name)
	}
	return names
}

// Pack leaves out what a working directory's ignore list names: version
// control, editors' litter and the ignore file by default, and what the
// directory's .rukhignore adds; a "!" line re-includes a default. The
// digest of the working directory is the packed release's, and installing
// the directory (CopyRelease, then Verify of the copy) gives it too.
func TestPackIgnores(t *testing.T) {
	dir := newReleaseDir(t)
	writeTree(t, dir, map[string]string{
		".git/HEAD":                    "ref: refs/heads/main\n",
		".git/objects/ab/cdef":         "blob",
		".gitignore":                   "bin/x\n",
		".DS_Store":                    "\x00\x01",
		"bin/.greet.swp":               "swap",
		"bin/greet~":                   "backup",
		"share/__pycache__/m.pyc":      "byte code",
		".venv/bin/python":             "#!/home/author/.venv/bin/python",
		".env":                         "TOKEN=secret\n",
		"go.work":                      "go 1.26\n\nuse (\n\t.\n\t/home/author/src/rukh\n)\n",
		"build/out.o":                  "object",
		"share/notes/draft.txt":        "draft",
		"share/keep.txt":               "kept",
		"share/readme.txt.orig":        "patch litter",
		IgnoreName:                     "# the author's own\n/build/\n*.orig\nshare/notes\n\n!.gitignore\n",
		"docs/build/page.html":         "not the root's build",
		"share/notes-not-ignored/a.md": "a",
	}, nil)
	// A symbolic link under an ignored directory is not seen at all.
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, ".git", "link")))

	var buf bytes.Buffer
	m, err := Pack(dir, testKey, &buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ManifestName, SignatureName,
		".gitignore", "bin/greet", "docs/build/page.html", "rukh-extension.json",
		"share/keep.txt", "share/notes-not-ignored/a.md", "share/readme.txt"}
	if got := archiveNames(t, buf.Bytes()); !slices.Equal(got, want) {
		t.Errorf("the archive holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	bm, err := BuildManifest(dir)
	if err != nil || bm.Digest() != m.Digest() {
		t.Fatalf("BuildManifest of the working directory: %v, %v; want the packed digest %s", bm, err, m.Digest())
	}
	// Installing the directory: the copy has exactly the release's files
	// and the ignore list, and verifies pinned to the same digest.
	dst := filepath.Join(t.TempDir(), "copy")
	must(t, os.Mkdir(dst, 0o700))
	if _, err := CopyRelease(dir, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dst, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy has .git: %v", err)
	}
	if _, err := Verify(dst, nil, m.Digest()); err != nil {
		t.Errorf("Verify of the copy pinned to the packed digest: %v", err)
	}
	// An unpacked release is read exactly as signed: a file the ignore
	// list would leave out, added after, is file_added.
	dest := filepath.Join(t.TempDir(), "dest")
	must(t, os.Mkdir(dest, 0o700))
	must(t, Unpack(bytes.NewReader(buf.Bytes()), dest))
	must(t, os.WriteFile(filepath.Join(dest, ".DS_Store"), []byte("x"), 0o644))
	var te *Error
	if _, err := Verify(dest, trusted(), ""); !errors.As(err, &te) || te.Code != CodeFileAdded || te.Path != ".DS_Store" {
		t.Errorf("Verify of an unpacked release with .DS_Store added = %v; want file_added", err)
	}
}

// The descriptor is part of every release, whatever the list says.
func TestIgnoreKeepsDescriptor(t *testing.T) {
	dir := newReleaseDir(t)
	writeTree(t, dir, map[string]string{IgnoreName: "*.json\n"}, nil)
	m, err := BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.file("rukh-extension.json") == nil {
		t.Errorf("the manifest lists %+v, without the descriptor", m.Files)
	}
}

// A bad line of .rukhignore is bad_ignore_file naming the file and the
// line, before anything is packed.
func TestBadIgnoreFile(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"# ok\n\nbin/[a-\n", `line 3: "bin/[a-" is not a valid pattern`},
		{"ok\n**/x\n", `line 2: "**/x" uses **, which is not supported`},
		{"a/../b\n", `line 1: "a/../b" has a ".." component`},
		{"a//b\n", `line 1: "a//b" has an empty component`},
		{"x\n  !  \n", `line 2: "!" matches nothing`},
		{"/\n", `line 1: "/" matches nothing`},
		{"trailing\\\n", `line 1: "trailing\\" is not a valid pattern`},
		{"ok\n\xff\n", `line 2 is not valid UTF-8`},
	} {
		dir := newReleaseDir(t)
		writeTree(t, dir, map[string]string{IgnoreName: tc.body}, nil)
		_, err := Pack(dir, testKey, &bytes.Buffer{})
		var te *Error
		if !errors.As(err, &te) || te.Code != CodeBadIgnoreFile || te.Path != IgnoreName || !strings.Contains(te.Message, tc.want) {
			t.Errorf("%q: Pack = %v; want bad_ignore_file %q at %s", tc.body, err, tc.want, IgnoreName)
		}
	}
	// A list that leaves out a program the descriptor runs, by its name
	// or by its directory: the release would not run.
	for _, body := range []string{"greet\n", "bin/\n", "/bin\n", "*\n!rukh-extension.json\n"} {
		dir := newReleaseDir(t)
		writeTree(t, dir, map[string]string{IgnoreName: body}, nil)
		_, err := Pack(dir, testKey, &bytes.Buffer{})
		var te *Error
		want := `the ignore list leaves out "bin/greet", the program of `
		if !errors.As(err, &te) || te.Code != CodeBadIgnoreFile || te.Path != IgnoreName || !strings.Contains(te.Message, want) {
			t.Errorf("%q: Pack = %v; want bad_ignore_file %q", body, err, want)
		}
	}
	// Not a file of patterns.
	dir := newReleaseDir(t)
	must(t, os.Mkdir(filepath.Join(dir, IgnoreName), 0o755))
	var te *Error
	if _, err := BuildManifest(dir); !errors.As(err, &te) || te.Code != CodeBadIgnoreFile {
		t.Errorf("a directory named %s: %v; want bad_ignore_file", IgnoreName, err)
	}
	dir = newReleaseDir(t)
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, IgnoreName)))
	if _, err := BuildManifest(dir); !errors.As(err, &te) || te.Code != CodeSymlink {
		t.Errorf("%s as a symbolic link: %v; want symlink", IgnoreName, err)
	}
	dir = newReleaseDir(t)
	writeTree(t, dir, map[string]string{IgnoreName: strings.Repeat("#\n", MaxIgnoreBytes/2+1)}, nil)
	if _, err := BuildManifest(dir); !errors.As(err, &te) || te.Code != CodeBadIgnoreFile {
		t.Errorf("%s over %d bytes: %v; want bad_ignore_file", IgnoreName, MaxIgnoreBytes, err)
	}
}

// Every pattern's meaning, as docs/releases.md gives it.
func TestIgnoreMatching(t *testing.T) {
	rules, err := parseIgnore([]byte("*.log\n/top\nsub/x\ncache/\n!keep.log\n\\#lit\n"))
	if err != nil {
		t.Fatal(err)
	}
	ig := &ignorer{rules: rules}
	for _, tc := range []struct {
		path  string
		dir   bool
		wants bool
	}{
		{"a.log", false, true},
		{"deep/er/a.log", false, true},
		{"keep.log", false, false},
		{"deep/keep.log", false, false},
		{"top", false, true},
		{"top", true, true},
		{"x/top", false, false},
		{"sub/x", false, true},
		{"a/sub/x", false, false},
		{"cache", true, true},
		{"cache", false, false},
		{"a/cache", true, true},
		{"#lit", false, true},
		{"rukh-extension.json", false, false},
	} {
		if got := ig.ignored(tc.path, tc.dir); got != tc.wants {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tc.path, tc.dir, got, tc.wants)
		}
	}
}
