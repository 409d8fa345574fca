package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text that others wrote — what a command reported (effects, the detail
// of its outcome), the inputs of a call waiting for approval, an error
// carrying either — reaches the owner's terminal only through safe or
// safeLines. A terminal acts on what it is sent: an escape sequence may
// retitle the window, recolour or hide what follows, move the cursor over
// a line the owner is about to trust, or (C1 CSI, U+009B) do so without an
// ESC byte; bidi overrides (U+202E) reorder what the owner reads. Each such
// character is shown as its \x or \u escape instead; --json output is
// left exact.

// safe escapes every control character (C0 with tab and newline, DEL,
// C1), bidi control and invalid UTF-8 byte in s: for a table cell or one
// line.
func safe(s string) string { return escapeControls(s, false) }

// safeLines is safe, but keeps newlines and tabs: for a message of
// several lines.
func safeLines(s string) string { return escapeControls(s, true) }

func escapeControls(s string, keepLines bool) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r, keepLines) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, keepLines) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, keepLines):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune, keepLines bool) bool {
	switch {
	case keepLines && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}
