package trust

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

var update = flag.Bool("update", false, "rewrite testdata/tamper from the tamper table")

// manifestOf is base with its files recomputed from the archive entries,
// as a publisher (or an attacker with a key) would build it.
func manifestOf(base *Manifest, es []entry) *Manifest {
	m := copyManifest(base)
	m.Files = nil
	for _, e := range es {
		if e.hdr.Name == ManifestName || e.hdr.Name == SignatureName {
			continue
		}
		sum := sha256.Sum256(e.body)
		mode := "0644"
		if e.hdr.Mode&0o111 != 0 {
			mode = "0755"
		}
		f := File{Path: e.hdr.Name, Size: int64(len(e.body)), Mode: mode, SHA256: hex.EncodeToString(sum[:])}
		m.Files = append(m.Files, f)
		if f.Path == descriptor.FileName {
			m.Descriptor = "sha256:" + f.SHA256
		}
	}
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return m
}

// resigned returns es with a manifest rebuilt from its entries and signed
// by k.
func resigned(t testing.TB, f *fixture, es []entry, k PrivateKey) []entry {
	m := manifestOf(f.manifest, es)
	return setDocs(t, es, m, mustSign(t, m, k))
}

const zeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

type tamperCase struct {
	name      string
	code      Code // "" when the release must be accepted
	build     func(t testing.TB, f *fixture) []byte
	keys      Keyring                 // nil: testKey trusted for acme
	noKeyring bool                    // pass a nil Keyring
	pin       func(f *fixture) string // nil: no pin
	limits    *limitSet               // nil: the real limits
	check     func(t *testing.T, r *Release, err error)
	corpus    bool // also kept as testdata/tamper/<name>.tar.gz
}

var tamperCases = []tamperCase{
	{name: "valid", corpus: true,
		build: func(t testing.TB, f *fixture) []byte { return f.archive },
		check: func(t *testing.T, r *Release, err error) {
			if r.Key == nil || r.Signature == nil || r.Pinned {
				t.Errorf("release = key %v, signature %v, pinned %v; want signed, not pinned", r.Key, r.Signature, r.Pinned)
			}
		}},
	{name: "valid_pinned_and_signed",
		build: func(t testing.TB, f *fixture) []byte { return f.archive },
		pin:   func(f *fixture) string { return f.manifest.Digest() },
		check: func(t *testing.T, r *Release, err error) {
			if !r.Pinned || r.Key == nil {
				t.Errorf("pinned %v key %v; want pinned and the trusted key", r.Pinned, r.Key)
			}
		}},
	{name: "unsigned", code: CodeUnsigned, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, es, SignatureName) })
		},
		check: func(t *testing.T, r *Release, err error) {
			msg := err.Error()
			if !strings.Contains(msg, "--pin sha256:") || !strings.Contains(msg, "sha256:") {
				t.Errorf("unsigned message does not offer the pin: %s", msg)
			}
		}},
	{name: "unsigned_directory", code: CodeUnsigned,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, without(t, es, SignatureName), ManifestName) })
		}},
	{name: "unsigned_right_pin",
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, es, SignatureName) })
		},
		keys: KeyMap{},
		pin:  func(f *fixture) string { return f.manifest.Digest() },
		check: func(t *testing.T, r *Release, err error) {
			if !r.Pinned || r.Signature != nil || r.Key != nil {
				t.Errorf("pinned %v signature %v key %v; want pinned, unsigned", r.Pinned, r.Signature, r.Key)
			}
		}},
	{name: "unsigned_directory_right_pin",
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, without(t, es, SignatureName), ManifestName) })
		},
		pin: func(f *fixture) string { return f.manifest.Digest() }},
	{name: "unsigned_wrong_pin", code: CodePinMismatch,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, es, SignatureName) })
		},
		pin: func(f *fixture) string { return zeroDigest }},
	{name: "signed_wrong_pin", code: CodePinMismatch,
		build: func(t testing.TB, f *fixture) []byte { return f.archive },
		pin:   func(f *fixture) string { return zeroDigest }},
	{name: "bad_pin_uppercase", code: CodeBadPin,
		build: func(t testing.TB, f *fixture) []byte { return f.archive },
		pin:   func(f *fixture) string { return strings.ToUpper(f.manifest.Digest()) }},
	{name: "bad_pin_no_prefix", code: CodeBadPin,
		build: func(t testing.TB, f *fixture) []byte { return f.archive },
		pin:   func(f *fixture) string { return strings.TrimPrefix(f.manifest.Digest(), "sha256:") }},
	{name: "unknown_publisher", code: CodeUnknownPublisher,
		build: func(t testing.TB, f *fixture) []byte { return f.archive },
		keys:  KeyMap{"other": {testKey.Public()}}},
	{name: "unknown_publisher_nil_keyring", code: CodeUnknownPublisher,
		build:     func(t testing.TB, f *fixture) []byte { return f.archive },
		noKeyring: true},
	{name: "publisher_mismatch", code: CodePublisherMismatch, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				sig := signatureOf(t, mustSign(t, f.manifest, testKey))
				es[find(t, es, SignatureName)].body = sigDoc(t, "evil", sig.Key, sig.Signature)
				return es
			})
		},
		keys: KeyMap{"acme": {testKey.Public()}, "evil": {testKey.Public()}}},
	{name: "signature_over_other_manifest", code: CodeBadSignature, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				other := copyManifest(f.manifest)
				other.Version = "9.9.9"
				es[find(t, es, SignatureName)].body = mustSign(t, other, testKey)
				return es
			})
		}},
	{name: "untrusted_key_same_publisher", code: CodeKeyMismatch, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, SignatureName)].body = mustSign(t, f.manifest, otherKey)
				return es
			})
		}},
	{name: "forged_key_id", code: CodeBadSignature,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				sig := signatureOf(t, mustSign(t, f.manifest, otherKey))
				es[find(t, es, SignatureName)].body = sigDoc(t, "acme", testKey.Public().ID(), sig.Signature)
				return es
			})
		}},
	{name: "file_changed", code: CodeFileChanged, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "share/readme.txt")].body = []byte("read ME\n") // same size
				return es
			})
		}},
	{name: "file_changed_size", code: CodeFileChanged,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "bin/greet")].body = []byte("#!/bin/sh\nrm -rf ~\n")
				return es
			})
		}},
	{name: "descriptor_changed", code: CodeFileChanged,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				i := find(t, es, descriptor.FileName)
				es[i].body = bytes.Replace(es[i].body, []byte(`"0.1.0"`), []byte(`"0.1.1"`), 1)
				return es
			})
		}},
	{name: "file_added", code: CodeFileAdded, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("share/extra.txt", 0o644, "extra\n")) })
		}},
	{name: "file_added_in_new_directory", code: CodeFileAdded,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append(es, special("lib/", tar.TypeDir, ""), regular("lib/evil.so", 0o755, "x"))
			})
		}},
	{name: "file_missing", code: CodeFileMissing, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, es, "share/readme.txt") })
		}},
	{name: "file_renamed", code: CodeFileMissing, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "share/readme.txt")].hdr.Name = "share/readme2.txt"
				return es
			})
		},
		check: func(t *testing.T, r *Release, err error) {
			if !strings.Contains(err.Error(), "share/readme2.txt") {
				t.Errorf("rename message does not name the new file: %v", err)
			}
		}},
	{name: "mode_exec_cleared", code: CodeFileChanged, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "bin/greet")].hdr.Mode = 0o644
				return es
			})
		}},
	{name: "mode_exec_set", code: CodeFileChanged,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "share/readme.txt")].hdr.Mode = 0o700
				return es
			})
		}},
	{name: "symlink_inside", code: CodeSymlink, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, special("bin/link", tar.TypeSymlink, "greet")) })
		}},
	{name: "symlink_outside", code: CodeSymlink, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append(es, special("share/passwd", tar.TypeSymlink, "/etc/passwd"))
			})
		}},
	{name: "symlink_dotdot_then_write_through", code: CodeSymlink,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append(es, special("up", tar.TypeSymlink, ".."), regular("up/escaped", 0o644, "x"))
			})
		}},
	{name: "hardlink", code: CodeHardlink, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, special("bin/hard", tar.TypeLink, "bin/greet")) })
		}},
	{name: "hardlink_outside", code: CodeHardlink,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, special("shadow", tar.TypeLink, "/etc/shadow")) })
		}},
	{name: "char_device", code: CodeSpecialFile, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				e := special("dev/null", tar.TypeChar, "")
				e.hdr.Devmajor, e.hdr.Devminor = 1, 3
				return append(es, e)
			})
		}},
	{name: "block_device", code: CodeSpecialFile,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, special("dev/sda", tar.TypeBlock, "")) })
		}},
	{name: "fifo", code: CodeSpecialFile, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, special("pipe", tar.TypeFifo, "")) })
		}},
	{name: "global_header", code: CodeSpecialFile,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				g := entry{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "global", PAXRecords: map[string]string{"comment": "hi"}, Format: tar.FormatPAX}}
				return append([]entry{g}, es...)
			})
		}},
	{name: "sparse_file", code: CodeSpecialFile,
		build: func(t testing.TB, f *fixture) []byte {
			// GNU sparse format 1.0: archive/tar expands the holes itself,
			// so a tiny entry could stand for a huge file.
			var recs []byte
			for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"},
				{"GNU.sparse.name", "sparse"}, {"GNU.sparse.realsize", "100"}} {
				recs = append(recs, paxRecord(kv[0], kv[1])...)
			}
			raw := rawHeader("pax", tar.TypeXHeader, int64(len(recs)))
			raw = append(raw, pad512(recs)...)
			raw = append(raw, rawHeader("GNUSparseFile.0/sparse", tar.TypeReg, 512)...)
			raw = append(raw, pad512([]byte("0\n"))...)
			raw = append(raw, make([]byte, 1024)...)
			return gz(t, raw)
		}},
	{name: "dotdot", code: CodeUnsafePath, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("../evil", 0o644, "x")) })
		}},
	{name: "dotdot_inner", code: CodeUnsafePath,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("share/../../evil", 0o644, "x")) })
		}},
	{name: "absolute", code: CodeUnsafePath, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("/tmp/rukh-evil", 0o644, "x")) })
		}},
	{name: "backslash", code: CodeUnsafePath,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular(`..\evil`, 0o644, "x")) })
		}},
	{name: "control_character", code: CodeUnsafePath,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("share/\x1b[2J", 0o644, "x")) })
		}},
	{name: "not_utf8", code: CodeUnsafePath,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				e := regular("share/\xff\xfe", 0o644, "x")
				e.hdr.Format = tar.FormatGNU
				return append(es, e)
			})
		}},
	{name: "dot_component", code: CodeUnsafePath,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("./share/x", 0o644, "x")) })
		}},
	{name: "reserved_directory", code: CodeUnsafePath,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular(ManifestName+"/x", 0o644, "x")) })
		}},
	{name: "setuid", code: CodeSetuid, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "bin/greet")].hdr.Mode = 0o4755
				return es
			})
		}},
	{name: "setgid", code: CodeSetuid, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "bin/greet")].hdr.Mode = 0o2755
				return es
			})
		}},
	{name: "sticky", code: CodeSetuid,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "share/readme.txt")].hdr.Mode = 0o1644
				return es
			})
		}},
	{name: "setgid_directory_entry", code: CodeSetuid,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				d := special("share/", tar.TypeDir, "")
				d.hdr.Mode = 0o2755
				return append([]entry{d}, es...)
			})
		}},
	{name: "too_many_files", code: CodeTooManyFiles, limits: &smallLimits,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append(es, regular("a", 0o644, "a"), regular("b", 0o644, "b"))
			})
		}},
	{name: "too_many_directories", code: CodeTooManyFiles, limits: &smallLimits,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				for _, d := range strings.Split("a b c d e f g h i j", " ") {
					es = append(es, special(d+"/", tar.TypeDir, ""))
				}
				return es
			})
		}},
	{name: "file_over_size_limit", code: CodeTooLarge, limits: &smallLimits,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "share/readme.txt")].body = make([]byte, smallLimits.fileBytes+1)
				return es
			})
		}},
	{name: "declared_size_over_real_limit", code: CodeTooLarge, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			// A header claiming MaxFileBytes+1 bytes, and no body at all:
			// the size alone must refuse it, before any byte is read.
			return gz(t, rawHeader("big", tar.TypeReg, MaxFileBytes+1))
		}},
	{name: "gzip_bomb_total", code: CodeTooLarge,
		limits: &limitSet{files: 100, fileBytes: 64 << 10, totalBytes: 128 << 10, manifestBytes: 8 << 10, signatureBytes: 1 << 10},
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				for _, n := range []string{"z1", "z2", "z3", "z4"} {
					es = append(es, regular("share/"+n, 0o644, string(make([]byte, 64<<10))))
				}
				return es
			})
		}},
	{name: "gzip_bomb_extended_headers", code: CodeTooLarge, limits: &smallLimits,
		build: func(t testing.TB, f *fixture) []byte {
			// archive/tar consumes extended headers without returning
			// them; only the bound on decompressed bytes stops a run of
			// them.
			rec := paxRecord("comment", strings.Repeat("a", 512<<10))
			var raw []byte
			for range 8 {
				raw = append(raw, rawHeader("x", tar.TypeXHeader, int64(len(rec)))...)
				raw = append(raw, pad512(rec)...)
			}
			return gz(t, raw)
		}},
	{name: "manifest_over_limit", code: CodeTooLarge, limits: &smallLimits,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, ManifestName)].body = make([]byte, smallLimits.manifestBytes+1)
				return es
			})
		}},
	{name: "duplicate_entry", code: CodeDuplicateEntry, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("share/readme.txt", 0o644, "second\n")) })
		}},
	{name: "duplicate_manifest", code: CodeDuplicateEntry,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append(es, es[find(t, es, ManifestName)])
			})
		}},
	{name: "file_then_directory", code: CodeDuplicateEntry,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append([]entry{regular("share", 0o644, "x")}, es...)
			})
		}},
	{name: "directory_then_file", code: CodeDuplicateEntry,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return append(es, regular("bin", 0o644, "x")) })
		}},
	// Signed archives, as a pack that did not fold case made them: the
	// names are refused while unpacking, before any signature is read.
	{name: "case_duplicate_file", code: CodeDuplicateEntry, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return resigned(t, f, append(es, regular("share/README.txt", 0o644, "other\n")), testKey)
			})
		},
		check: func(t *testing.T, _ *Release, err error) {
			want := `duplicate_entry: "share/README.txt": "share/readme.txt" and "share/README.txt" differ only in letter case, which a case-insensitive file system cannot tell apart; rename one`
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		}},
	{name: "case_duplicate_directory", code: CodeDuplicateEntry,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return resigned(t, f, append(es, regular("Share/other.txt", 0o644, "other\n")), testKey)
			})
		}},
	{name: "case_duplicate_directory_entry", code: CodeDuplicateEntry,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return append(es, entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "BIN/", Mode: 0o755, Format: tar.FormatPAX}})
			})
		}},
	{name: "case_release_document", code: CodeDuplicateEntry,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				return resigned(t, f, append(es, regular("Rukh-Release.json", 0o644, "{}")), testKey)
			})
		}},
	{name: "invalid_descriptor", code: CodeInvalidDescriptor, corpus: true,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				i := find(t, es, descriptor.FileName)
				es[i].body = bytes.Replace(es[i].body, []byte(`"schema"`), []byte(`"bogus": 1, "schema"`), 1)
				return resigned(t, f, es, testKey)
			})
		},
		check: func(t *testing.T, r *Release, err error) {
			var de descriptor.Errors
			if !errors.As(err, &de) || len(de) == 0 || de[0].Code != descriptor.CodeUnknownField {
				t.Errorf("error does not unwrap to descriptor.Errors with unknown_field: %v", err)
			}
		}},
	{name: "missing_program", code: CodeInvalidDescriptor,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return resigned(t, f, without(t, es, "bin/greet"), testKey) })
		}},
	{name: "manifest_version_mismatch", code: CodeManifestMismatch,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				m := copyManifest(f.manifest)
				m.Version = "2.0.0"
				return setDocs(t, es, m, mustSign(t, m, testKey))
			})
		}},
	{name: "manifest_publisher_mismatch", code: CodeManifestMismatch,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				m := copyManifest(f.manifest)
				m.Publisher = "evil"
				return setDocs(t, es, m, mustSign(t, m, testKey))
			})
		}},
	{name: "resigned_by_untrusted_key", code: CodeKeyMismatch,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, "bin/greet")].body = []byte("#!/bin/sh\nevil\n")
				return resigned(t, f, es, otherKey)
			})
		}},
	{name: "bad_manifest", code: CodeBadManifest,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, ManifestName)].body = []byte(`{"format":"rukh.release/1"}`)
				return es
			})
		}},
	{name: "manifest_unknown_member", code: CodeBadManifest,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				i := find(t, es, ManifestName)
				es[i].body = bytes.Replace(es[i].body, []byte(`{"descriptor"`), []byte(`{"extra":1,"descriptor"`), 1)
				return es
			})
		}},
	{name: "signature_without_manifest", code: CodeBadManifest,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry { return without(t, es, ManifestName) })
		}},
	{name: "bad_signature_file", code: CodeBadSignatureFile,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, SignatureName)].body = []byte("not json")
				return es
			})
		}},
	{name: "signature_wrong_length", code: CodeBadSignatureFile,
		build: func(t testing.TB, f *fixture) []byte {
			return f.with(t, func(es []entry) []entry {
				es[find(t, es, SignatureName)].body = sigDoc(t, "acme", testKey.Public().ID(), []byte("short"))
				return es
			})
		}},
	{name: "not_gzip", code: CodeBadArchive,
		build: func(t testing.TB, f *fixture) []byte { return []byte("PK\x03\x04 this is a zip") }},
	{name: "truncated", code: CodeBadArchive,
		build: func(t testing.TB, f *fixture) []byte { return f.archive[:len(f.archive)/2] }},
	{name: "not_tar", code: CodeBadArchive,
		build: func(t testing.TB, f *fixture) []byte { return gz(t, bytes.Repeat([]byte("garbage!"), 100)) }},
}

func pad512(b []byte) []byte { return append(b, make([]byte, (512-len(b)%512)%512)...) }

func paxRecord(key, value string) []byte {
	payload := " " + key + "=" + value + "\n"
	n := len(payload)
	for {
		s := itoa(n) + payload
		if len(s) == n {
			return []byte(s)
		}
		n = len(s)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func signatureOf(t testing.TB, doc []byte) *Signature {
	t.Helper()
	s, err := ParseSignature(doc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (c tamperCase) run(t *testing.T, f *fixture, archive []byte) {
	t.Helper()
	var keys Keyring = trusted()
	if c.keys != nil {
		keys = c.keys
	}
	if c.noKeyring {
		keys = nil
	}
	pin := ""
	if c.pin != nil {
		pin = c.pin(f)
	}
	if c.limits != nil {
		setLimits(t, *c.limits)
	}
	rel, err := unpackVerify(t, archive, keys, pin)
	t.Logf("error: %v", err)
	if got := codeOf(t, err); got != c.code {
		t.Fatalf("code = %q, want %q (error: %v)", got, c.code, err)
	}
	var e *Error
	if errors.As(err, &e) {
		if msg := e.Message; msg == "" || msg[:1] != strings.ToLower(msg[:1]) || strings.HasSuffix(msg, ".") {
			t.Errorf("message does not start in lowercase or ends with a period: %q", msg)
		}
	}
	if c.check != nil {
		c.check(t, rel, err)
	}
}

// TestTamper builds each hostile archive and requires the exact code.
func TestTamper(t *testing.T) {
	f := newFixture(t)
	seen := map[string]bool{}
	for _, c := range tamperCases {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) { c.run(t, f, c.build(t, f)) })
	}
}

// TestTamperCorpus runs the committed archives in testdata/tamper; -update
// rewrites them from the table.
func TestTamperCorpus(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join("testdata", "tamper")
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range tamperCases {
			if c.corpus {
				if err := os.WriteFile(filepath.Join(dir, c.name+".tar.gz"), c.build(t, f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, c := range tamperCases {
		if c.corpus {
			want++
		}
	}
	if len(files) != want {
		t.Fatalf("testdata/tamper has %d archives, the table marks %d; run go test ./trust -run TestTamperCorpus -update", len(files), want)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".tar.gz")
		i := slices.IndexFunc(tamperCases, func(c tamperCase) bool { return c.name == name })
		if i < 0 || !tamperCases[i].corpus {
			t.Errorf("%s has no corpus case in the table", file)
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c := tamperCases[i]
		t.Run(name, func(t *testing.T) { c.run(t, f, data) })
	}
}
