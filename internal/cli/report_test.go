package cli

import (
	"bytes"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/exitcode"
)

// A call cancelled because its caller is gone says nothing on the
// caller's stderr (its terminal shows the shell's prompt again); with
// the caller alive, or for any other outcome, the message is printed.
func TestReportToAGoneCaller(t *testing.T) {
	cancelled := &invoke.Outcome{Outcome: invoke.Cancelled, Reason: invoke.ReasonInterrupted, Message: "t.x/y was cancelled before it started (interrupted)"}
	failed := &invoke.Outcome{Outcome: invoke.ExecutionFailed, Reason: invoke.ReasonSpawnFailed, Message: "cannot start t.x/y: no such file"}
	alive := func() bool { return true }
	gone := func() bool { return false }
	for _, tc := range []struct {
		name   string
		out    *invoke.Outcome
		caller func() bool
		said   bool
		status int
	}{
		{"cancelled, caller in this process", cancelled, nil, true, exitcode.Interrupted},
		{"cancelled, caller alive", cancelled, alive, true, exitcode.Interrupted},
		{"cancelled, caller gone", cancelled, gone, false, exitcode.Interrupted},
		{"failed, caller gone", failed, gone, true, exitcode.Software},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			f := &Factory{Name: "rukh", IO: IOStreams{Out: &stdout, ErrOut: &stderr}, CallerAlive: tc.caller}
			err := report(f, tc.out, nil, false, "rukh y")
			if got := stderr.String(); (got != "") != tc.said {
				t.Errorf("stderr %q; want a message: %v", got, tc.said)
			}
			if st := exitStatus(err); st != tc.status {
				t.Errorf("exit status %d, want %d", st, tc.status)
			}
		})
	}
}
