package trust

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzUnpack feeds arbitrary bytes to Unpack (compressing them first
// unless they start as gzip does): it must never panic, never
// write outside its destination, never leave a link, special file or
// other mode behind, and refuse only with *Error.
func FuzzUnpack(f *testing.F) {
	fx := newFixture(f)
	seeds := [][]byte{fx.archive}
	for _, c := range tamperCases {
		if c.limits == nil {
			seeds = append(seeds, c.build(f, fx))
		}
	}
	// Mutations of compressed bytes rarely get past the gzip checksum, so
	// each seed is also given as a bare tar stream, which the target
	// compresses before unpacking.
	for _, s := range seeds {
		f.Add(s)
		if zr, err := gzip.NewReader(bytes.NewReader(s)); err == nil {
			if raw, err := io.ReadAll(zr); err == nil {
				f.Add(raw)
			}
		}
	}
	saved := limits
	limits = smallLimits
	f.Cleanup(func() { limits = saved })
	keys := trusted()
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.NoCompression)
			zw.Write(data)
			zw.Close()
			data = buf.Bytes()
		}
		err := Unpack(bytes.NewReader(data), dest)
		checkContained(t, parent, dest)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Unpack error is %T, not *Error: %v", err, err)
			}
			return
		}
		if _, err := Verify(dest, keys, ""); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify error is %T, not *Error: %v", err, err)
			}
		}
	})
}

// FuzzParseManifest: never panic; whatever parses has a canonical form
// that parses to the same manifest.
func FuzzParseManifest(f *testing.F) {
	m := validManifest(f)
	f.Add(m.Canonical())
	f.Add([]byte(`{"format":"rukh.release/1"}`))
	f.Add([]byte(`{"descriptor":"sha256:","files":[{"mode":"0644","path":"a/../b","sha256":"","size":1e3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			return
		}
		c := m.Canonical()
		m2, err := ParseManifest(c)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, c)
		}
		if !bytes.Equal(m2.Canonical(), c) || m2.Digest() != m.Digest() {
			t.Fatalf("canonical form is not stable:\n%s\n%s", c, m2.Canonical())
		}
	})
}
