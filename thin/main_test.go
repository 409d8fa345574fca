package thin

import "testing"

// extensionLine decides which core a line without a daemon runs in
// (ExecCore) and, through the daemon, when the client catches its stop
// signals (Forward): only a line that may be one extension command waits
// until its command is started.
func TestExtensionLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"hello", "Ada"}, true},
		{[]string{"acme", "deploy", "--now"}, true},
		{nil, false},
		{[]string{"--help"}, false},
		{[]string{"-h"}, false},
		{[]string{"__complete", "hel"}, false},
		{[]string{"approve", "0123"}, false},
		{[]string{"invocations", "wait"}, false},
		{[]string{"ext", "install", "x"}, false},
		{[]string{"version"}, false},
	} {
		if got := extensionLine(tc.args); got != tc.want {
			t.Errorf("extensionLine(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
