package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/store"
)

// A store the disk would not write says what to do; a call that ran and
// could not record its outcome says itself what became of it.
func TestDiskHint(t *testing.T) {
	full := &os.PathError{Op: "write", Path: "/h/data/store.db", Err: syscall.ENOSPC}
	for _, tc := range []struct {
		err  error
		hint bool
	}{
		{full, true},
		{fmt.Errorf("commit: %w", syscall.EROFS), true},
		{fmt.Errorf("commit: %w", syscall.EIO), true},
		{&invoke.RecordError{ID: "x", Outcome: "succeeded", Err: full, Ran: true}, false},
		{&store.LockedError{Path: "/s"}, false},
		{errors.New("other"), false},
		{nil, false},
	} {
		if got := diskHint(tc.err); (got != "") != tc.hint || (tc.hint && !strings.Contains(got, "free space or fix the disk, then run it again")) {
			t.Errorf("diskHint(%v) = %q, want a hint: %v", tc.err, got, tc.hint)
		}
	}
}

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
