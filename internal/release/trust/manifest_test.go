package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

func TestBuildManifest(t *testing.T) {
	dir := newReleaseDir(t)
	// The release's own documents are never listed.
	writeTree(t, dir, map[string]string{ManifestName: "stale", SignatureName: "stale", "share/" + ManifestName: "listed"}, nil)
	m, err := BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != ManifestFormat || m.Package != "acme.greet" || m.Version != "0.1.0" || m.Publisher != "acme" {
		t.Errorf("manifest header = %+v", m)
	}
	sum := sha256.Sum256([]byte(testDescriptor))
	if m.Descriptor != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("descriptor digest = %s", m.Descriptor)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path+":"+f.Mode)
	}
	want := "bin/greet:0755 rukh-extension.json:0644 share/readme.txt:0644 share/rukh-release.json:0644"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("files = %s\nwant    %s", got, want)
	}
	readme := m.file("share/readme.txt")
	rs := sha256.Sum256([]byte("read me\n"))
	if readme.Size != 8 || readme.SHA256 != hex.EncodeToString(rs[:]) {
		t.Errorf("readme = %+v", readme)
	}
}

func TestBuildManifestSortsByBytes(t *testing.T) {
	dir := newReleaseDir(t)
	// The walk yields "a/x" before "a-b" (it descends into "a" first), but
	// in byte order "a-b" comes first ('-' < '/').
	writeTree(t, dir, map[string]string{"a/x": "1", "a-b": "2", "B": "3", "é": "4"}, nil)
	m, err := BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(m.Files); i++ {
		if m.Files[i-1].Path >= m.Files[i].Path {
			t.Errorf("files not in byte order: %q before %q", m.Files[i-1].Path, m.Files[i].Path)
		}
	}
	if _, err := ParseManifest(m.Canonical()); err != nil {
		t.Errorf("ParseManifest(BuildManifest) = %v", err)
	}
}

func TestBuildManifestRefuses(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		limits *limitSet
		code   Code
	}{
		{"symlink inside", func(t *testing.T, dir string) { symlink(t, "readme.txt", dir, "share/link") }, nil, CodeSymlink},
		{"symlink outside", func(t *testing.T, dir string) { symlink(t, "/etc/passwd", dir, "passwd") }, nil, CodeSymlink},
		{"dangling symlink", func(t *testing.T, dir string) { symlink(t, "nowhere", dir, "dangling") }, nil, CodeSymlink},
		{"symlinked directory", func(t *testing.T, dir string) { symlink(t, t.TempDir(), dir, "lib") }, nil, CodeSymlink},
		{"symlinked program", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "bin/greet"), filepath.Join(dir, "bin/real")))
			symlink(t, "real", dir, "bin/greet")
		}, nil, CodeSymlink},
		{"fifo", func(t *testing.T, dir string) { mkfifo(t, filepath.Join(dir, "pipe")) }, nil, CodeSpecialFile},
		{"setuid", func(t *testing.T, dir string) { chmodSpecial(t, filepath.Join(dir, "bin/greet"), os.ModeSetuid) }, nil, CodeSetuid},
		{"setgid", func(t *testing.T, dir string) { chmodSpecial(t, filepath.Join(dir, "bin/greet"), os.ModeSetgid) }, nil, CodeSetuid},
		{"sticky", func(t *testing.T, dir string) { chmodSpecial(t, filepath.Join(dir, "share/readme.txt"), os.ModeSticky) }, nil, CodeSetuid},
		{"backslash", func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{`a\b`: "x"}, nil) }, nil, CodeUnsafePath},
		{"not utf-8", func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"\xff": "x"}, nil) }, nil, CodeUnsafePath},
		{"control character", func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"a\nb": "x"}, nil) }, nil, CodeUnsafePath},
		{"directory with a bad name", func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"\xff/ok": "x"}, nil) }, nil, CodeUnsafePath},
		{"reserved directory", func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{SignatureName + "/x": "x"}, nil) }, nil, CodeUnsafePath},
		{"too many files", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"a": "", "b": ""}, nil)
		}, &smallLimits, CodeTooManyFiles},
		{"too many directories", func(t *testing.T, dir string) {
			for _, d := range strings.Split("a b c d e f g h i j", " ") {
				must(t, os.Mkdir(filepath.Join(dir, d), 0o755))
			}
		}, &smallLimits, CodeTooManyFiles},
		{"file too large", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"big": strings.Repeat("x", int(smallLimits.fileBytes)+1)}, nil)
		}, &smallLimits, CodeTooLarge},
		{"total too large", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"share/readme.txt": strings.Repeat("x", int(smallLimits.fileBytes)),
				"a": strings.Repeat("x", int(smallLimits.fileBytes))}, nil)
		}, &limitSet{files: 10, fileBytes: 4 << 10, totalBytes: 6 << 10, manifestBytes: 8 << 10, signatureBytes: 1 << 10}, CodeTooLarge},
		{"manifest too large", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{strings.Repeat("n", 200): ""}, nil)
		}, &limitSet{files: 10, fileBytes: 1 << 20, totalBytes: 1 << 20, manifestBytes: 600, signatureBytes: 1 << 10}, CodeTooLarge},
		{"invalid descriptor", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{descriptor.FileName: `{"schema": "rukh.extension/9"}`}, nil)
		}, nil, CodeInvalidDescriptor},
		{"no descriptor", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, descriptor.FileName))) }, nil, CodeInvalidDescriptor},
		{"program not executable", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, "bin/greet"), 0o644)) }, nil, CodeInvalidDescriptor},
		{"names differ only in case", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"bin/env": "a", "bin/Env": "b"}, nil)
		}, nil, CodeDuplicateEntry},
		{"directories differ only in case", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"Share/other.txt": "x"}, nil)
		}, nil, CodeDuplicateEntry},
		{"file and directory differ only in case", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"Bin": "x"}, nil)
		}, nil, CodeDuplicateEntry},
		{"names differ in non-ASCII case", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"share/é.txt": "a", "share/É.txt": "b"}, nil)
		}, nil, CodeDuplicateEntry},
		{"a release document in another case", func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"RUKH-RELEASE.JSON": "{}"}, nil)
		}, nil, CodeDuplicateEntry},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := newReleaseDir(t)
			c.setup(t, dir)
			if c.limits != nil {
				setLimits(t, *c.limits)
			}
			m, err := BuildManifest(dir)
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code = %q, want %q (%v)", got, c.code, err)
			}
			if m != nil {
				t.Error("BuildManifest returned a manifest with an error")
			}
			if c.code == CodeInvalidDescriptor {
				var de descriptor.Errors
				if !errors.As(err, &de) || len(de) == 0 {
					t.Errorf("error does not unwrap to descriptor.Errors: %v", err)
				}
			}
			// Verify of the same working directory refuses it the same way.
			if _, err := Verify(dir, trusted(), ""); codeOf(t, err) != c.code {
				t.Errorf("Verify code = %q, want %q (%v)", codeOf(t, err), c.code, err)
			}
		})
	}
}

// TestCaseDuplicates refuses, at pack and at install from a directory,
// two paths that differ only in letter case, with duplicate_entry and a
// message naming both.
func TestCaseDuplicates(t *testing.T) {
	dir := newReleaseDir(t)
	writeTree(t, dir, map[string]string{"bin/env": "a", "bin/Env": "b"}, nil)
	want := `duplicate_entry: "bin/env": "bin/Env" and "bin/env" differ only in letter case, which a case-insensitive file system cannot tell apart; rename one`
	var buf bytes.Buffer
	m, err := Pack(dir, testKey, &buf)
	if m != nil || err == nil || err.Error() != want {
		t.Fatalf("Pack = %v, %v; want %q", m, err, want)
	}
	if buf.Len() != 0 {
		t.Errorf("Pack wrote %d bytes", buf.Len())
	}
	if _, err := Verify(dir, trusted(), ""); err == nil || err.Error() != want {
		t.Fatalf("Verify = %v, want %q", err, want)
	}

	// Different names, however similar, are fine: case folding is not
	// normalization, and ß is not ss under simple folding.
	ok := newReleaseDir(t)
	writeTree(t, ok, map[string]string{"share/é.txt": "a", "share/é.txt": "b", "share/ß": "c", "share/ss": "d"}, nil)
	if _, err := Pack(ok, testKey, io.Discard); err != nil {
		t.Fatalf("Pack: %v", err)
	}
}

func TestFoldCase(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"bin/env", "bin/Env", true},
		{"BIN/ENV", "bin/env", true},
		{"k", "\u212a", true}, // the Kelvin sign folds with k and K
		{"Σ", "ς", true},
		{"é", "É", true},
		{"ß", "ss", false},
		{"a", "b", false},
	} {
		a, b := tc.a, tc.b
		if got := foldCase(a) == foldCase(b); got != tc.same || got != strings.EqualFold(a, b) {
			t.Errorf("foldCase(%q) == foldCase(%q) is %v, want %v", a, b, got, tc.same)
		}
	}
}

func symlink(t *testing.T, target, dir, name string) {
	t.Helper()
	must(t, os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))))
}

func chmodSpecial(t *testing.T, path string, bit os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.Chmod(path, fi.Mode().Perm()|bit))
	if fi, _ := os.Stat(path); fi.Mode()&bit == 0 {
		t.Skipf("this system does not let the test set %v", bit)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func validManifest(t testing.TB) *Manifest {
	t.Helper()
	m, err := BuildManifest(newReleaseDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCanonical(t *testing.T) {
	m := validManifest(t)
	c := m.Canonical()
	again, err := jcs.Transform(c)
	if err != nil || !bytes.Equal(again, c) {
		t.Errorf("Canonical is not a JCS fixed point: %s", c)
	}
	if !bytes.HasPrefix(c, []byte(`{"descriptor":"sha256:`)) || bytes.ContainsAny(c, " \n") {
		t.Errorf("Canonical is not sorted and compact: %s", c)
	}
	sum := sha256.Sum256(c)
	if m.Digest() != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Error("Digest is not the SHA-256 of Canonical")
	}
	// Every field is covered by the digest.
	for _, change := range []func(m *Manifest){
		func(m *Manifest) { m.Version = "0.1.1" },
		func(m *Manifest) { m.Publisher = "acme2" },
		func(m *Manifest) { m.Package = "acme.other" },
		func(m *Manifest) { m.Files[0].Mode = "0644" },
		func(m *Manifest) { m.Files[0].Size++ },
		func(m *Manifest) { m.Files[0].Path = "bin/greet2" },
		func(m *Manifest) { m.Files[0].SHA256 = strings.Repeat("0", 64) },
		func(m *Manifest) { m.Files = m.Files[1:] },
	} {
		c := copyManifest(m)
		change(c)
		if c.Digest() == m.Digest() {
			t.Errorf("a change left the digest the same: %s", c.Canonical())
		}
	}
	// HTML characters and non-ASCII are written as themselves.
	m2 := copyManifest(m)
	m2.Files = append(m2.Files, File{Path: "z/<&>é", Size: 0, Mode: "0644", SHA256: strings.Repeat("a", 64)})
	if !bytes.Contains(m2.Canonical(), []byte(`"z/<&>é"`)) {
		t.Errorf("Canonical escapes text: %s", m2.Canonical())
	}
}

func TestParseManifest(t *testing.T) {
	m := validManifest(t)
	good := string(m.Canonical())
	got, err := ParseManifest([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != m.Digest() {
		t.Error("ParseManifest(Canonical) changed the digest")
	}
	// Whitespace and member order do not change the digest.
	pretty := strings.ReplaceAll(strings.ReplaceAll(good, ",", ",\n  "), `{"descriptor"`, ` { "descriptor"`)
	if got, err := ParseManifest([]byte(pretty)); err != nil || got.Digest() != m.Digest() {
		t.Errorf("pretty manifest: %v", err)
	}

	replace := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("fixture has no %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	greet, desc, readme := m.Files[0], m.Files[1], m.Files[2]
	cases := []struct {
		name, data string
		code       Code
	}{
		{"unknown member", replace(`{"descriptor"`, `{"x":1,"descriptor"`), CodeBadManifest},
		{"unknown file member", replace(`{"mode":"0755"`, `{"x":1,"mode":"0755"`), CodeBadManifest},
		{"missing member", replace(`,"version":"0.1.0"`, ``), CodeBadManifest},
		{"missing file member", replace(`"mode":"0755",`, ``), CodeBadManifest},
		{"duplicate key", replace(`{"descriptor"`, `{"format":"rukh.release/1","descriptor"`), CodeBadManifest},
		{"wrong format", replace(`"rukh.release/1"`, `"rukh.release/2"`), CodeBadManifest},
		{"format not a string", replace(`"rukh.release/1"`, `1`), CodeBadManifest},
		{"files not an array", good[:strings.Index(good, `"files":[`)] + `"files":{}` + good[strings.Index(good, `],"format"`)+1:], CodeBadManifest},
		{"file not an object", replace(`"files":[`, `"files":[1,`), CodeBadManifest},
		{"unsorted", replace(`"files":[`, `"files":[{"mode":"0644","path":"zzz","sha256":"`+readme.SHA256+`","size":8},`), CodeBadManifest},
		{"duplicate path", replace(`"path":"share/readme.txt"`, `"path":"rukh-extension.json"`), CodeBadManifest},
		{"mode 0600", replace(`"mode":"0755"`, `"mode":"0600"`), CodeBadManifest},
		{"mode 755", replace(`"mode":"0755"`, `"mode":"755"`), CodeBadManifest},
		{"mode number", replace(`"mode":"0755"`, `"mode":493`), CodeBadManifest},
		{"uppercase sha", replace(greet.SHA256, strings.ToUpper(greet.SHA256)), CodeBadManifest},
		{"short sha", replace(greet.SHA256, greet.SHA256[:63]), CodeBadManifest},
		{"bad descriptor digest", replace(`"descriptor":"sha256:`, `"descriptor":"sha512:`), CodeBadManifest},
		{"descriptor digest not the file's", replace(`"descriptor":"sha256:`+desc.SHA256, `"descriptor":"sha256:`+greet.SHA256), CodeBadManifest},
		{"no descriptor file", replace(`"path":"rukh-extension.json"`, `"path":"rukh-extension.jso"`), CodeBadManifest},
		{"negative size", replace(`"size":8}`, `"size":-8}`), CodeBadManifest},
		{"minus zero size", replace(`"size":8}`, `"size":-0}`), CodeBadManifest},
		{"fractional size", replace(`"size":8}`, `"size":8.0}`), CodeBadManifest},
		{"exponent size", replace(`"size":8}`, `"size":8e0}`), CodeBadManifest},
		{"string size", replace(`"size":8}`, `"size":"8"}`), CodeBadManifest},
		{"huge size", replace(`"size":8}`, `"size":99999999999999999999}`), CodeBadManifest},
		{"size over limit", replace(`"size":8}`, `"size":67108865}`), CodeTooLarge},
		{"dotdot path", replace(`"path":"share/readme.txt"`, `"path":"share/../../x"`), CodeBadManifest},
		{"absolute path", replace(`"path":"bin/greet"`, `"path":"/bin/greet"`), CodeBadManifest},
		{"backslash path", replace(`"path":"share/readme.txt"`, `"path":"share\\readme.txt"`), CodeBadManifest},
		{"NUL in path", replace(`"path":"share/readme.txt"`, `"path":"share/readme\u0000.txt"`), CodeBadManifest},
		{"reserved path", replace(`"path":"share/readme.txt"`, `"path":"rukh-release.sig"`), CodeBadManifest},
		{"file and directory", replace(`"path":"share/readme.txt"`, `"path":"rukh-extension.json/x"`), CodeBadManifest},
		{"empty publisher", replace(`"publisher":"acme"`, `"publisher":""`), CodeBadManifest},
		{"publisher with space", replace(`"publisher":"acme"`, `"publisher":"ac me"`), CodeBadManifest},
		{"publisher uppercase", replace(`"publisher":"acme"`, `"publisher":"Acme"`), CodeBadManifest},
		{"package invalid", replace(`"package":"acme.greet"`, `"package":"acme..greet"`), CodeBadManifest},
		{"version with space", replace(`"version":"0.1.0"`, `"version":"0.1.0 beta"`), CodeBadManifest},
		{"trailing data", good + "{}", CodeBadManifest},
		{"invalid utf-8", replace(`"acme"`, "\"ac\xffme\""), CodeBadManifest},
		{"not an object", `[]`, CodeBadManifest},
		{"empty", ``, CodeBadManifest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(c.data))
			t.Logf("error: %v", err)
			if got := codeOf(t, err); got != c.code {
				t.Fatalf("code = %q, want %q (%v)", got, c.code, err)
			}
		})
	}

	t.Run("too many files", func(t *testing.T) {
		setLimits(t, limitSet{files: 2, fileBytes: MaxFileBytes, totalBytes: MaxTotalBytes, manifestBytes: MaxManifestBytes, signatureBytes: MaxSignatureBytes})
		if _, err := ParseManifest([]byte(good)); codeOf(t, err) != CodeTooManyFiles {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("manifest too large", func(t *testing.T) {
		setLimits(t, limitSet{files: 10, fileBytes: MaxFileBytes, totalBytes: MaxTotalBytes, manifestBytes: int64(len(good) - 1), signatureBytes: MaxSignatureBytes})
		if _, err := ParseManifest([]byte(good)); codeOf(t, err) != CodeTooLarge {
			t.Errorf("err = %v", err)
		}
	})
}

func TestSignAndParseSignature(t *testing.T) {
	m := validManifest(t)
	doc := mustSign(t, m, testKey)
	again := mustSign(t, m, testKey)
	if !bytes.Equal(doc, again) {
		t.Error("Sign is not deterministic")
	}
	if c, _ := jcs.Transform(doc); !bytes.Equal(c, doc) {
		t.Errorf("signature document is not canonical: %s", doc)
	}
	s, err := ParseSignature(doc)
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != SignatureFormat || s.Publisher != "acme" || s.Key != testKey.Public().ID() || !s.verify(m, testKey.Public()) {
		t.Errorf("signature = %+v", s)
	}
	if s.verify(m, otherKey.Public()) || s.verify(m, PublicKey("short")) {
		t.Error("signature verifies under the wrong key")
	}
	bad := copyManifest(m)
	bad.Format = "x"
	if _, err := Sign(bad, testKey); codeOf(t, err) != CodeBadManifest {
		t.Errorf("Sign(invalid manifest) = %v", err)
	}
	if _, err := Sign(m, PrivateKey("short")); codeOf(t, err) != CodeBadKey {
		t.Errorf("Sign(short key) = %v", err)
	}

	good := string(doc)
	sig := signatureOf(t, doc)
	for _, c := range []struct{ name, data string }{
		{"unknown member", strings.Replace(good, `{"format"`, `{"x":1,"format"`, 1)},
		{"wrong format", strings.Replace(good, SignatureFormat, "rukh.signature/2", 1)},
		{"bad key id", strings.Replace(good, sig.Key, "sha256:abc", 1)},
		{"url base64", strings.Replace(good, `"signature":"`, `"signature":"-_`, 1)},
		{"empty publisher", strings.Replace(good, `"publisher":"acme"`, `"publisher":""`, 1)},
		{"invalid publisher", strings.Replace(good, `"publisher":"acme"`, `"publisher":"ACME"`, 1)},
		{"nested", `{"format":{}}`},
		{"trailing", good + " x"},
	} {
		if _, err := ParseSignature([]byte(c.data)); codeOf(t, err) != CodeBadSignatureFile {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
	if _, err := ParseSignature(make([]byte, MaxSignatureBytes+1)); codeOf(t, err) != CodeTooLarge {
		t.Errorf("oversize signature: %v", err)
	}
}
