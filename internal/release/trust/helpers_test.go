package trust

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Fixed keys keep the committed tamper corpus reproducible.
var (
	testKey  = PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	otherKey = PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize)))
)

// trusted trusts testKey for the fixture's publisher.
func trusted() KeyMap { return KeyMap{"acme": {testKey.Public()}} }

const testDescriptor = `{
  "schema": "rukh.extension/2",
  "package": "acme.greet",
  "version": "0.1.0",
  "publisher": "acme",
  "commands": [
    {
      "id": "hello",
      "path": ["greet"],
      "summary": "Greet someone",
      "inputs": [{"id": "name", "positional": 0, "type": "string", "default": "world"}],
      "execute": {"mapping": "managed", "program": "bin/greet", "result": {"kind": "text"}},
      "machine": {"eligible": true, "interaction": "none", "requiredFeatures": ["command-result/1"]},
      "effects": {"class": "none"}
    }
  ]
}
`

// fixtureFiles is the test release: path → content, mode.
var fixtureFiles = []struct {
	path, body string
	mode       os.FileMode
}{
	{"rukh-extension.json", testDescriptor, 0o644},
	{"bin/greet", "#!/bin/sh\necho hello\n", 0o755},
	{"share/readme.txt", "read me\n", 0o644},
}

// writeTree writes files under dir, making parents.
func writeTree(t testing.TB, dir string, files map[string]string, modes map[string]os.FileMode) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := modes[p]
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(full, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// newReleaseDir writes the fixture release into a fresh directory.
func newReleaseDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "release")
	files := map[string]string{}
	modes := map[string]os.FileMode{}
	for _, f := range fixtureFiles {
		files[f.path], modes[f.path] = f.body, f.mode
	}
	writeTree(t, dir, files, modes)
	return dir
}

// fixture is a packed, signed release and its parts.
type fixture struct {
	dir      string
	archive  []byte
	manifest *Manifest
	entries  []entry
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := newReleaseDir(t)
	var buf bytes.Buffer
	m, err := Pack(dir, testKey, &buf)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return &fixture{dir: dir, archive: buf.Bytes(), manifest: m, entries: readArchive(t, buf.Bytes())}
}

// entry is one tar entry, kept whole so tests can change any field.
type entry struct {
	hdr  tar.Header
	body []byte
}

func readArchive(t testing.TB, data []byte) []entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var es []entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return es
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, entry{hdr: *hdr, body: body})
	}
}

func writeArchive(t testing.TB, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range es {
		hdr := e.hdr
		if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == 0 {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatalf("write %q: %v", hdr.Name, err)
		}
		if len(e.body) > 0 {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// clone copies the entries so a case can change them freely.
func (f *fixture) clone() []entry {
	out := make([]entry, len(f.entries))
	for i, e := range f.entries {
		out[i] = entry{hdr: e.hdr, body: bytes.Clone(e.body)}
	}
	return out
}

// with returns the fixture's archive after change.
func (f *fixture) with(t testing.TB, change func(es []entry) []entry) []byte {
	t.Helper()
	return writeArchive(t, change(f.clone()))
}

func find(t testing.TB, es []entry, name string) int {
	t.Helper()
	for i, e := range es {
		if e.hdr.Name == name {
			return i
		}
	}
	t.Fatalf("no entry %q", name)
	return -1
}

func without(t testing.TB, es []entry, name string) []entry {
	i := find(t, es, name)
	return append(es[:i:i], es[i+1:]...)
}

func regular(name string, mode int64, body string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Format: tar.FormatPAX}, body: []byte(body)}
}

func special(name string, typ byte, link string) entry {
	return entry{hdr: tar.Header{Typeflag: typ, Name: name, Linkname: link, Mode: 0o644, Format: tar.FormatPAX}}
}

// setDocs replaces the manifest and signature entries.
func setDocs(t testing.TB, es []entry, m *Manifest, sig []byte) []entry {
	t.Helper()
	es[find(t, es, ManifestName)].body = m.Canonical()
	es[find(t, es, SignatureName)].body = sig
	return es
}

func mustSign(t testing.TB, m *Manifest, k PrivateKey) []byte {
	t.Helper()
	sig, err := Sign(m, k)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// sigDoc writes a signature document with any content.
func sigDoc(t testing.TB, publisher, key string, sig []byte) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"format": SignatureFormat, "publisher": publisher, "key": key, "signature": sig})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// copyManifest deep-copies m.
func copyManifest(m *Manifest) *Manifest {
	c := *m
	c.Files = append([]File(nil), m.Files...)
	return &c
}

// setLimits shrinks the limits for one test.
func setLimits(t testing.TB, l limitSet) {
	saved := limits
	limits = l
	t.Cleanup(func() { limits = saved })
}

// smallLimits keeps limit tests fast.
var smallLimits = limitSet{files: 4, fileBytes: 4 << 10, totalBytes: 10 << 10, manifestBytes: 8 << 10, signatureBytes: 1 << 10}

// codeOf returns the Code of a trust error, "" for nil, and fails the test
// for an error of another type.
func codeOf(t testing.TB, err error) Code {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *trust.Error: %v", err, err)
	}
	return e.Code
}

// rawHeader is a hand-made USTAR header block, for entries archive/tar
// refuses to write (extended headers).
func rawHeader(name string, typ byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], "00000000000\x00")
	b[156] = typ
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func gz(t testing.TB, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unpackVerify unpacks archive into a fresh directory and verifies it.
func unpackVerify(t testing.TB, archive []byte, keys Keyring, pin string) (*Release, error) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Unpack(bytes.NewReader(archive), dest); err != nil {
		return nil, err
	}
	return Verify(dest, keys, pin)
}
