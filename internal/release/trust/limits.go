package trust

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// File names at the root of a release, next to the descriptor.
const (
	ManifestName  = "rukh-release.json"
	SignatureName = "rukh-release.sig"
)

// Document formats.
const (
	ManifestFormat  = "rukh.release/1"
	SignatureFormat = "rukh.signature/1"
)

// Limits on a release. They bound BuildManifest, ParseManifest, Unpack and
// Verify alike, so whatever Pack writes, Unpack and Verify accept.
const (
	MaxFiles          = 10_000    // files in a release, not counting the manifest and signature
	MaxFileBytes      = 64 << 20  // one file
	MaxTotalBytes     = 256 << 20 // all files together
	MaxManifestBytes  = 4 << 20   // rukh-release.json; room for MaxFiles entries with ordinary paths
	MaxSignatureBytes = 64 << 10  // rukh-release.sig
	MaxPathBytes      = 1024      // one file path, in bytes
	MaxKeyFileBytes   = 64 << 10  // a PEM key file
)

// limitSet is the set of limits in force; tests shrink it to stay fast.
type limitSet struct {
	files, fileBytes, totalBytes, manifestBytes, signatureBytes int64
}

var limits = limitSet{
	files:          MaxFiles,
	fileBytes:      MaxFileBytes,
	totalBytes:     MaxTotalBytes,
	manifestBytes:  MaxManifestBytes,
	signatureBytes: MaxSignatureBytes,
}

// maxEntries bounds directory entries and archive entries of any kind,
// so a release of many empty directories is refused too.
func (l limitSet) maxEntries() int64 { return 2*l.files + 2 }

// maxStream bounds the decompressed bytes of an archive: the contents,
// the two documents and generous room for headers (512-byte blocks,
// padding and PAX records for long names). A gzip bomb, or an endless
// run of extended headers that archive/tar consumes without returning,
// stops here.
func (l limitSet) maxStream() int64 {
	const perEntry = 8 << 10
	return l.totalBytes + l.manifestBytes + l.signatureBytes + (l.maxEntries()+2)*perEntry + 1<<20
}

// checkPath reports why p cannot name a file in a release, or returns nil.
// A release path is relative, slash-separated and clean: no empty, "." or
// ".." components, valid UTF-8 without control characters or backslashes,
// at most MaxPathBytes long.
func checkPath(p string) *Error {
	switch {
	case p == "":
		return refuse(CodeUnsafePath, p, "empty file name")
	case len(p) > MaxPathBytes:
		return refuse(CodeUnsafePath, trimPath(p), "path is %d bytes; the limit is %d", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return refuse(CodeUnsafePath, strings.ToValidUTF8(p, "\uFFFD"), "file name is not valid UTF-8; rename the file")
	case p[0] == '/':
		return refuse(CodeUnsafePath, p, "absolute path; release paths are relative to the release root")
	}
	for _, r := range p {
		switch {
		case r == 0:
			return refuse(CodeUnsafePath, p, "file name contains a NUL byte")
		case r == '\\':
			return refuse(CodeUnsafePath, p, "file name contains a backslash; use / between directories and rename the file")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return refuse(CodeUnsafePath, p, "file name contains control character %U; rename the file", r)
		}
	}
	for c := range strings.SplitSeq(p, "/") {
		switch c {
		case "":
			return refuse(CodeUnsafePath, p, "path has an empty component; write it without leading, trailing or doubled slashes")
		case ".":
			return refuse(CodeUnsafePath, p, `path has a "." component; write it without one`)
		case "..":
			return refuse(CodeUnsafePath, p, `path has a ".." component, which would leave the release`)
		}
	}
	return nil
}

// reserved reports whether p is, or lies under, one of the release's own
// documents, which no release file may be.
func reserved(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return first == ManifestName || first == SignatureName
}

func trimPath(p string) string {
	if len(p) <= 64 {
		return p
	}
	return strings.ToValidUTF8(p[:64], "") + "…"
}

// caseNames records the paths of a release — its files and every
// directory above them — by their case-folded form, so that two paths a
// case-insensitive file system cannot tell apart (bin/env and bin/Env, or
// share/x and Share/y) are refused: installed there, one would replace or
// merge into the other. The release's own documents are recorded from
// the start.
type caseNames map[string]string

func newCaseNames() caseNames {
	c := caseNames{}
	c[foldCase(ManifestName)] = ManifestName
	c[foldCase(SignatureName)] = SignatureName
	return c
}

// add records p and the directories above it. It refuses p when it, or
// one of its directories, differs from a recorded path only in case.
func (c caseNames) add(p string) *Error {
	for i := strings.IndexByte(p, '/'); ; i = nextSlash(p, i) {
		name := p
		if i >= 0 {
			name = p[:i]
		}
		key := foldCase(name)
		if other, seen := c[key]; !seen {
			c[key] = name
		} else if other != name {
			return refuse(CodeDuplicateEntry, p, "%q and %q differ only in letter case, which a case-insensitive file system cannot tell apart; rename one", other, name)
		}
		if i < 0 {
			return nil
		}
	}
}

// foldCase maps s to one representative of the strings equal to it under
// Unicode simple case folding (what strings.EqualFold compares): each
// rune becomes the smallest rune of its folding orbit.
func foldCase(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}
