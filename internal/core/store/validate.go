package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on what the store writes. They are checked on write and again
// on read, so a record that breaks them is reported as corrupt.
const (
	// MaxRouteWords is the most words a route may have; ResolveRoute
	// looks at no more than this many arguments.
	MaxRouteWords = 16
	// MaxRouteKey is the most bytes of a route's joined words.
	MaxRouteKey = 1024
	// maxName bounds names, versions, operations and other short text.
	maxName = 1024
)

// checkDigest requires "sha256:" and 64 lowercase hex digits.
func checkDigest(field, s string) error {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 || strings.IndexFunc(hex, func(r rune) bool {
		return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f')
	}) >= 0 {
		return fmt.Errorf("%s %q is not a digest of the form sha256:<64 lowercase hex digits>", field, s)
	}
	return nil
}

// checkText requires valid UTF-8 without control characters, at most
// max bytes, and (when required) not empty.
func checkText(field, s string, required bool, max int) error {
	switch {
	case s == "" && required:
		return fmt.Errorf("%s is empty", field)
	case len(s) > max:
		return fmt.Errorf("%s is longer than %d bytes", field, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", field)
	case strings.IndexFunc(s, isControl) >= 0:
		return fmt.Errorf("%s %q contains a control character", field, s)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkRouteWord reports whether w can be one word of a route: not
// empty, no space or control character, not starting with "-" (that is
// a flag), valid UTF-8.
func checkRouteWord(w string) bool {
	return w != "" && w[0] != '-' && utf8.ValidString(w) &&
		strings.IndexFunc(w, func(r rune) bool { return r == ' ' || isControl(r) }) < 0
}

// checkRouteWords validates a route's words joined by single spaces.
func checkRouteWords(words string) error {
	if words == "" {
		return fmt.Errorf("route words are empty")
	}
	if len(words) > MaxRouteKey {
		return fmt.Errorf("route %q is longer than %d bytes", words, MaxRouteKey)
	}
	rest, count := words, 0
	for more := true; more; count++ {
		var w string
		w, rest, more = strings.Cut(rest, " ")
		if !checkRouteWord(w) {
			return fmt.Errorf("route %q: words must be separated by single spaces and be non-empty, without control characters, not starting with \"-\"", words)
		}
	}
	if count > MaxRouteWords {
		return fmt.Errorf("route %q has more than %d words", words, MaxRouteWords)
	}
	return nil
}

// problems collects validation errors; it allocates only when there are
// some.
type problems []error

func (p *problems) add(errs ...error) {
	for _, err := range errs {
		if err != nil {
			*p = append(*p, err)
		}
	}
}

func (p problems) err() error { return errors.Join(p...) }
