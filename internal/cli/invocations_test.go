package cli

import (
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/store"
)

// A record keeps the command's own exit status (0 when it never ran);
// `invocations show` and --json give the status the CLI exits with for
// the outcome, and the command's own beside it only when it says more.
func TestInvocationExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name            string
		outcome, reason string
		recorded        int
		want            string // the show line
		cli, command    int    // -1: absent from the JSON
	}{
		{"running", "", "", 0, "-", -1, -1},
		{"succeeded", invoke.Succeeded, "", 0, "0", 0, -1},
		{"approval required", invoke.Rejected, invoke.ReasonApprovalRequired, 0, "77", 77, -1},
		{"denied", invoke.Rejected, invoke.ReasonDenied, 0, "77", 77, -1},
		{"invalid input", invoke.Rejected, invoke.ReasonInvalidInput, 0, "2", 2, -1},
		{"busy", invoke.Rejected, invoke.ReasonBusy, 0, "75", 75, -1},
		{"command failed", invoke.CommandFailed, "", 3, "3", 3, 3},
		{"command failed, exit 0", invoke.CommandFailed, "", 0, "1 (the command exited 0)", 1, 0},
		{"deadline", invoke.Cancelled, invoke.ReasonDeadline, 143, "124 (the command exited 143)", 124, 143},
		{"spawn failed", invoke.ExecutionFailed, invoke.ReasonSpawnFailed, 0, "70", 70, -1},
	} {
		inv := &store.Invocation{ID: "0123456789abcdef0123456789abcdef", Outcome: tc.outcome, Reason: tc.reason, ExitStatus: tc.recorded, StartedAt: time.Unix(1, 0)}
		if tc.outcome != "" {
			inv.FinishedAt = time.Unix(2, 0)
		}
		r := toInvocationJSON(inv)
		if got := r.exitStatusText(); got != tc.want {
			t.Errorf("%s: exit status %q, want %q", tc.name, got, tc.want)
		}
		for _, f := range []struct {
			field string
			got   *int
			want  int
		}{{"exitStatus", r.ExitStatus, tc.cli}, {"commandExitStatus", r.CommandExitStatus, tc.command}} {
			switch {
			case f.want < 0 && f.got != nil:
				t.Errorf("%s: %s %d, want none", tc.name, f.field, *f.got)
			case f.want >= 0 && (f.got == nil || *f.got != f.want):
				t.Errorf("%s: %s %v, want %d", tc.name, f.field, f.got, f.want)
			}
		}
		if tc.outcome != "" && *r.ExitStatus != OutcomeStatus(&invoke.Outcome{Outcome: tc.outcome, Reason: tc.reason, ExitStatus: tc.recorded}) {
			t.Errorf("%s: exitStatus is not OutcomeStatus's", tc.name)
		}
	}
}
