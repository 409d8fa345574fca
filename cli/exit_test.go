package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/store"
)

// One table: a store that is locked, damaged, newer or on a full or
// failing disk is 75 whatever the command.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{&UsageError{errors.New("x")}, ExitUsage},
		{&ExitError{Status: ExitDenied, Err: errors.New("x")}, ExitDenied},
		{fmt.Errorf("open: %w", &store.LockedError{Path: "/s"}), ExitTempFail},
		{fmt.Errorf("apply: %w", &store.CorruptError{Path: "/s", Err: errors.New("x")}), ExitTempFail},
		{&store.FutureError{Path: "/s", Found: 9, Supported: 1}, ExitTempFail},
		{fmt.Errorf("trust add: %w", &os.PathError{Op: "write", Path: "/s", Err: syscall.ENOSPC}), ExitTempFail},
		{fmt.Errorf("commit: %w", syscall.EDQUOT), ExitTempFail},
		{fmt.Errorf("commit: %w", syscall.EIO), ExitTempFail},
		{context.Canceled, ExitInterrupted},
		{errors.New("an invalid profile"), ExitFailed},
	} {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
