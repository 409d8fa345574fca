package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/exitcode"
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
		{nil, exitcode.OK},
		{&UsageError{errors.New("x")}, exitcode.Usage},
		{&ExitError{Status: exitcode.Denied, Err: errors.New("x")}, exitcode.Denied},
		{fmt.Errorf("open: %w", &store.LockedError{Path: "/s"}), exitcode.TempFail},
		{fmt.Errorf("apply: %w", &store.CorruptError{Path: "/s", Err: errors.New("x")}), exitcode.TempFail},
		{&store.FutureError{Path: "/s", Found: 9, Supported: 1}, exitcode.TempFail},
		{fmt.Errorf("trust add: %w", &os.PathError{Op: "write", Path: "/s", Err: syscall.ENOSPC}), exitcode.TempFail},
		{fmt.Errorf("commit: %w", syscall.EDQUOT), exitcode.TempFail},
		{fmt.Errorf("commit: %w", syscall.EIO), exitcode.TempFail},
		// chmod 000 store.db: was 1 (issue 26, item 5).
		{fmt.Errorf("resolve: %w", &store.UnavailableError{Path: "/s", Err: &os.PathError{Op: "open", Path: "/s", Err: syscall.EACCES}}), exitcode.TempFail},
		{context.Canceled, exitcode.Interrupted},
		{errors.New("an invalid profile"), exitcode.Failed},
	} {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
