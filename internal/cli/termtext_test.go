package cli

import "testing"

func TestSafe(t *testing.T) {
	for _, tc := range []struct{ in, safe, lines string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\x07title`, `\x1b]0;owned\x07title`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"c1 \u009b2J csi", `c1 \u009b2J csi`, `c1 \u009b2J csi`},
		{"txt.exe\u202Egpj", `txt.exe\u202egpj`, `txt.exe\u202egpj`},
		{"isolate \u2066x\u2069", `isolate \u2066x\u2069`, `isolate \u2066x\u2069`},
		{"two\nlines\tand tab", `two\x0alines\x09and tab`, "two\nlines\tand tab"},
		{"cr\rover", `cr\x0dover`, `cr\x0dover`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"bad \xff utf8", `bad \xff utf8`, `bad \xff utf8`},
		{"", "", ""},
	} {
		if got := safe(tc.in); got != tc.safe {
			t.Errorf("safe(%q) = %q, want %q", tc.in, got, tc.safe)
		}
		if got := safeLines(tc.in); got != tc.lines {
			t.Errorf("safeLines(%q) = %q, want %q", tc.in, got, tc.lines)
		}
	}
}
