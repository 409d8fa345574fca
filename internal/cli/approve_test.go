package cli

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/exitcode"
)

// hostAncestor fails closed: a caller that is gone, cannot be confirmed
// alive, or whose parents /proc does not give is an error, never "no
// host"; this process, alive, below no rukh, is placed.
func TestHostAncestorFailsClosed(t *testing.T) {
	alive := func() bool { return true }
	dead := func() bool { return false }
	for _, tc := range []struct {
		name string
		f    Factory
		ok   bool
	}{
		{"in-process", Factory{Name: "rukh-test-none"}, true},
		{"a live caller", Factory{Name: "rukh-test-none", CallerPID: os.Getpid(), CallerAlive: alive}, true},
		{"a caller that exited", Factory{Name: "rukh-test-none", CallerPID: os.Getpid(), CallerAlive: dead}, false},
		{"a caller not confirmed alive", Factory{Name: "rukh-test-none", CallerPID: os.Getpid()}, false},
		{"a pid /proc does not know", Factory{Name: "rukh-test-none", CallerPID: 1 << 30, CallerAlive: alive}, false},
	} {
		host, err := hostAncestor(&tc.f)
		if tc.ok && (err != nil || host != 0) {
			t.Errorf("%s: host %d, %v; want none", tc.name, host, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: host %d and no error; want a refusal", tc.name, host)
		}
	}
}

// TestApproveReadsEnvAsGetenv: a caller's environment with a key set
// twice (a process execve'd so, which os/exec would have deduplicated)
// means its last value to approve, as to every other lookup: set last,
// the invocation id refuses approve; cleared last, it does not.
func TestApproveReadsEnvAsGetenv(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		env     []string
		refused bool
	}{
		{[]string{"RUKH_INVOCATION_ID=" + id}, true},
		{[]string{"RUKH_INVOCATION_ID=", "RUKH_INVOCATION_ID=" + id}, true},
		{[]string{"RUKH_INVOCATION_ID=" + id, "RUKH_INVOCATION_ID="}, false},
	} {
		f := &Factory{Name: "rukh-test-none", Env: tc.env, IO: IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard},
			NewHost: func() (*local.Host, error) { return &local.Host{}, nil }}
		cmd := newApproveCmd(f)
		cmd.SetArgs([]string{"a1"})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		var ee *ExitError
		inside := errors.As(err, &ee) && ee.Status == exitcode.Denied && strings.Contains(err.Error(), "inside a command")
		if inside != tc.refused {
			t.Errorf("env %q: %v; refused as inside a command %v, want %v", tc.env, err, inside, tc.refused)
		}
	}
}
