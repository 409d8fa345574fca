package thin_test

import (
	"testing"

	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/thin"
)

// TestEnvNamesSpeltAlike: a CLI's variables share one prefix, '-' as '_'.
func TestEnvNamesSpeltAlike(t *testing.T) {
	for _, tc := range []struct{ name, home, daemon string }{
		{"rukh", "RUKH_HOME", "RUKH_DAEMON"},
		{"my-cli", "MY_CLI_HOME", "MY_CLI_DAEMON"},
		{"a-b-c", "A_B_C_HOME", "A_B_C_DAEMON"},
	} {
		if got := paths.HomeEnv(tc.name); got != tc.home {
			t.Errorf("HomeEnv(%q) = %q, want %q", tc.name, got, tc.home)
		}
		if got := thin.AutoStartEnv(tc.name); got != tc.daemon {
			t.Errorf("AutoStartEnv(%q) = %q, want %q", tc.name, got, tc.daemon)
		}
	}
}
