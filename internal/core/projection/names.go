package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/rukh-cli/rukh/internal/jsoncanon"
)

// FingerprintDomain is the first member of the array a tool fingerprint
// hashes; it versions the fingerprint scheme.
const FingerprintDomain = "rukh.mcp-tool/1"

// MaxRevision is the largest revision Build accepts. The revision is a
// JSON number in the fingerprint, and RFC 8785 numbers are IEEE 754
// doubles, so every revision up to 2^53-1 has one exact canonical form.
const MaxRevision = 1<<53 - 1

// Slug lengths and fingerprint lengths of the two namings.
const (
	FullSlug           = 48 // docs/limits.md
	CompactSlug        = 18
	CompactFingerprint = 32 // hex characters: the first 128 bits
)

// Fingerprint returns the full lowercase SHA-256 hex of the RFC 8785
// canonical JSON array
//
//	["rukh.mcp-tool/1", namespace, revision, identity]
//
// (invariant I7, docs/invariants.md). The revision is a JSON number,
// written as its decimal digits: for revisions up to MaxRevision that is
// exactly its RFC 8785 form. Strings are written as RFC 8785 requires:
// only '"', '\\' and control characters below U+0020 are escaped (\b \t
// \n \f \r, else \u00hh in lowercase hex); invalid UTF-8 is replaced by
// U+FFFD first.
func Fingerprint(namespace string, revision uint64, identity string) string {
	sum := sha256.Sum256(fingerprintInput(namespace, revision, identity))
	return hex.EncodeToString(sum[:])
}

func fingerprintInput(namespace string, revision uint64, identity string) []byte {
	b := make([]byte, 0, 32+len(namespace)+len(identity))
	b = append(b, '[')
	b = jsoncanon.AppendString(b, FingerprintDomain)
	b = append(b, ',')
	b = jsoncanon.AppendString(b, namespace)
	b = append(b, ',')
	b = strconv.AppendUint(b, revision, 10)
	b = append(b, ',')
	b = jsoncanon.AppendString(b, identity)
	return append(b, ']')
}

// ToolName returns the MCP tool name of a command identity in one
// revision of one endpoint namespace:
//
//	Full:    Slug(identity, 48) + "__" + Fingerprint(…)          (≤ 114 chars)
//	Compact: Slug(identity, 18) + "__" + Fingerprint(…)[:32]     (≤ 52 chars)
//
// Both depend on the revision, so a name from an earlier revision never
// names a tool of a later one. Any naming other than Compact is Full;
// Build rejects unknown namings before it calls ToolName.
func ToolName(namespace string, revision uint64, identity string, naming Naming) string {
	fp := Fingerprint(namespace, revision, identity)
	if naming == Compact {
		return Slug(identity, CompactSlug) + "__" + fp[:CompactFingerprint]
	}
	return Slug(identity, FullSlug) + "__" + fp
}

// Slug returns a readable name for identity of at most max characters of
// [a-z0-9_-], never empty (max below 1 counts as 1). The words of the
// package and the command id are joined by "_": "acme.deploy/status"
// becomes "acme_deploy_status". ASCII letters are lowercased and every
// other character outside [a-z0-9_-] separates words. When the slug is too
// long the command id is kept longest: first the package words are
// abbreviated to their first character from the left ("a_deploy_status"),
// then dropped from the left ("deploy_status", "status"), and only then is
// the id itself cut at its end. A slug never contains "__", never starts
// or ends with "_" or "-", so the "__" before a fingerprint is unambiguous.
func Slug(identity string, max int) string {
	if max < 1 {
		max = 1
	}
	pkg, id := "", identity
	if i := strings.LastIndexByte(identity, '/'); i >= 0 {
		pkg, id = identity[:i], identity[i+1:]
	}
	var words []string
	for w := range strings.SplitSeq(pkg, ".") {
		if w = slugWord(w); w != "" {
			words = append(words, w)
		}
	}
	tail := slugWord(id)
	if tail == "" && len(words) > 0 {
		// No usable command id: the last package word stands in for it.
		tail, words = words[len(words)-1], words[:len(words)-1]
	}
	if tail == "" {
		return "tool"[:min(4, max)]
	}
	fits := func(parts []string) bool {
		n := len(tail) + len(parts) // one "_" after each package part
		for _, p := range parts {
			n += len(p)
		}
		return n <= max
	}
	join := func(parts []string) string {
		return strings.Join(append(parts[:len(parts):len(parts)], tail), "_")
	}
	if fits(words) {
		return join(words)
	}
	parts := append([]string(nil), words...)
	for k := range parts { // abbreviate from the left
		parts[k] = parts[k][:1]
		if fits(parts) {
			return join(parts)
		}
	}
	for k := 1; k <= len(parts); k++ { // then drop from the left
		if fits(parts[k:]) {
			return join(parts[k:])
		}
	}
	return strings.TrimRight(tail[:max], "_-")
}

// slugWord maps one word to [a-z0-9_-] with no "__" and no leading or
// trailing "_" or "-".
func slugWord(w string) string {
	b := make([]byte, 0, len(w))
	for _, r := range w {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b = append(b, byte(r))
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r-'A'+'a'))
		default: // a separator, including U+FFFD for invalid UTF-8
			if len(b) > 0 && b[len(b)-1] != '_' {
				b = append(b, '_')
			}
		}
	}
	return strings.Trim(string(b), "_-")
}
