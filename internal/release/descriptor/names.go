package descriptor

import "strings"

// ValidPackage reports whether s is a valid package name.
func ValidPackage(s string) bool { return len(s) <= MaxNameLength && isPackage(s) }

// ValidPublisher reports whether s is a valid publisher name.
func ValidPublisher(s string) bool { return len(s) <= MaxNameLength && isPublisher(s) }

// ValidCommandID reports whether s is a valid command id.
func ValidCommandID(s string) bool { return len(s) <= MaxNameLength && isCommandID(s) }

// SplitIdentity splits a canonical command identity <package>/<id> and
// reports whether both parts are valid.
func SplitIdentity(identity string) (pkg, id string, ok bool) {
	pkg, id, found := strings.Cut(identity, "/")
	return pkg, id, found && ValidPackage(pkg) && ValidCommandID(id)
}

// The grammars of names are matched by the small functions below, each
// with the regular expression it stands for in its comment: compiling
// those expressions was a tenth of the CPU a one-shot call spends
// decoding its command (docs/benchmarks.md, "Seventh pass"), and the
// grammars are that simple. names_test.go fuzzes every matcher against
// its expression.

// Words reports whether s is lowercase words of [a-z0-9] joined by single
// hyphens, like "deploy" or "my-cli-2": a path word, a profile's endpoint
// namespace. ^[a-z0-9]+(-[a-z0-9]+)*$
func Words(s string) bool { return joined(s, lowerDigit, isByte('-')) }

// ValidDigest reports whether s is a digest as releases and keys are
// named: "sha256:" and 64 lowercase hex digits. ^sha256:[0-9a-f]{64}$
func ValidDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	return ok && Hex64(h)
}

// Hex64 reports whether s is 64 lowercase hex digits: a SHA-256 in hex,
// and a release directory's name. ^[0-9a-f]{64}$
func Hex64(s string) bool {
	return len(s) == 64 && allOrNone(s, func(c byte) bool { return digit(c) || 'a' <= c && c <= 'f' })
}

// isPackage: ^[a-z0-9]+(\.[a-z0-9-]+)*$
func isPackage(s string) bool {
	return segments(s, '.', func(i int, w string) bool {
		if i == 0 {
			return all(w, lowerDigit)
		}
		return all(w, lowerDigitHyphen)
	})
}

// isPublisher: ^[a-z0-9]+([.-][a-z0-9]+)*$
func isPublisher(s string) bool {
	return joined(s, lowerDigit, func(c byte) bool { return c == '.' || c == '-' })
}

// isCommandID, and a flag's name: ^[a-z][a-z0-9]*(-[a-z0-9]+)*$
func isCommandID(s string) bool { return s != "" && lower(s[0]) && Words(s) }

// isInputID: ^[a-z][a-z0-9_]*$
func isInputID(s string) bool {
	return s != "" && lower(s[0]) && allOrNone(s[1:], func(c byte) bool { return lowerDigit(c) || c == '_' })
}

// isShort: ^[a-zA-Z]$
func isShort(s string) bool { return len(s) == 1 && (lower(s[0]) || 'A' <= s[0] && s[0] <= 'Z') }

// isAction: ^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$
func isAction(s string) bool {
	return segments(s, '.', func(_ int, w string) bool {
		return w != "" && lower(w[0]) && allOrNone(w[1:], lowerDigitHyphen)
	})
}

// placeholders are the texts of a resource's placeholders, left to
// right: what the submatches of \{([^{}]*)\} are, match after match.
func placeholders(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != '{' && s[j] != '}' {
			j++
		}
		switch {
		case j == len(s):
			return out
		case s[j] == '}':
			out = append(out, s[i+1:j])
			i = j
		default: // another '{': a placeholder may begin there
			i = j - 1
		}
	}
	return out
}

// isSemver reports whether s is a Semantic Versioning 2.0.0 version:
//
//	^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)
//	(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?
//	(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$
func isSemver(s string) bool {
	s, build, hasBuild := strings.Cut(s, "+")
	if hasBuild && !segments(build, '.', func(_ int, w string) bool { return all(w, alnumHyphen) }) {
		return false
	}
	core, pre, hasPre := strings.Cut(s, "-")
	if hasPre && !segments(pre, '.', func(_ int, w string) bool {
		// A number without a leading zero, or an identifier that is not
		// all digits.
		return all(w, digit) && (w == "0" || w[0] != '0') || all(w, alnumHyphen) && !all(w, digit)
	}) {
		return false
	}
	n := 0
	return segments(core, '.', func(_ int, w string) bool {
		n++
		return all(w, digit) && (w == "0" || w[0] != '0')
	}) && n == 3
}

// segments reports whether s, split at every sep, is all segments ok
// accepts, given each with its index; an empty s is not.
func segments(s string, sep byte, ok func(i int, seg string) bool) bool {
	if s == "" {
		return false
	}
	for i := 0; ; i++ {
		seg, rest, more := strings.Cut(s, string(sep))
		if !ok(i, seg) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// joined reports whether s is one or more non-empty words of bytes word
// accepts, joined by single bytes sep accepts.
func joined(s string, word, sep func(byte) bool) bool {
	afterSep := true // a word must come first
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case word(c):
			afterSep = false
		case sep(c) && !afterSep:
			afterSep = true
		default:
			return false
		}
	}
	return !afterSep
}

// all reports whether s is non-empty and f accepts each of its bytes;
// allOrNone accepts an empty s too.
func all(s string, f func(byte) bool) bool { return s != "" && allOrNone(s, f) }

func allOrNone(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}

func isByte(b byte) func(byte) bool { return func(c byte) bool { return c == b } }

func lower(c byte) bool            { return 'a' <= c && c <= 'z' }
func digit(c byte) bool            { return '0' <= c && c <= '9' }
func lowerDigit(c byte) bool       { return lower(c) || digit(c) }
func lowerDigitHyphen(c byte) bool { return lowerDigit(c) || c == '-' }
func alnumHyphen(c byte) bool      { return lowerDigitHyphen(c) || 'A' <= c && c <= 'Z' }
