package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/exitcode"
)

// OutcomeStatus maps an invocation's outcome to the exit status
// (docs/reference.md §1): the one place the CLI decides it.
func OutcomeStatus(o *invoke.Outcome) int {
	switch o.Outcome {
	case invoke.Succeeded:
		return exitcode.OK
	case invoke.CommandFailed:
		if o.ExitStatus > 0 && o.ExitStatus < 256 {
			return o.ExitStatus
		}
		return exitcode.Failed
	case invoke.Rejected:
		switch o.Reason {
		case invoke.ReasonInvalidInput:
			return exitcode.Usage
		case invoke.ReasonDenied, invoke.ReasonApprovalRequired:
			return exitcode.Denied
		case invoke.ReasonBusy, invoke.ReasonStoreUnavailable:
			return exitcode.TempFail
		default: // unsupported, interaction_required
			return exitcode.Unavailable
		}
	case invoke.Cancelled:
		if o.Reason == invoke.ReasonDeadline {
			return exitcode.Deadline
		}
		return exitcode.Interrupted
	}
	return exitcode.Software // execution_failed
}

// ExitError carries an exit status out of a command. When Reported is
// set, the command already told the user what went wrong.
type ExitError struct {
	Status   int
	Err      error
	Reported bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Status)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError is a problem with how a command was called.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// diskHint says what to do about a store the disk would not let be
// written or read, when err is that (store.DiskError): the command did not
// take effect, so it is safe to run again once the disk is fixed. A call
// whose outcome could not be recorded says itself what became of it
// (*invoke.RecordError: it ran), and gets no hint.
func diskHint(err error) string {
	var re *invoke.RecordError
	if !store.DiskError(err) || errors.As(err, &re) {
		return ""
	}
	return "the disk that holds the store is full, over quota, read-only or failing; nothing of this command took effect: free space or fix the disk, then run it again"
}

// sayDiskHint prints diskHint(err), when there is one, after err itself.
func sayDiskHint(f *Factory, err error) {
	if hint := diskHint(err); hint != "" {
		fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", f.Name, hint)
	}
}

// exitStatus maps an error returned by a command to an exit status.
func exitStatus(err error) int {
	var ee *ExitError
	var ue *UsageError
	var locked *store.LockedError
	var future *store.FutureError
	var corrupt *store.CorruptError
	var replaced *store.ReplacedError
	var missing *store.MissingError
	var unavailable *store.UnavailableError
	switch {
	case err == nil:
		return exitcode.OK
	case errors.As(err, &ee):
		return ee.Status
	case errors.As(err, &ue):
		return exitcode.Usage
	case errors.As(err, &locked), errors.As(err, &future), errors.As(err, &corrupt):
		return exitcode.TempFail
	case errors.As(err, &unavailable):
		// The store's file is there but cannot be opened (its mode, the
		// disk): the host's condition.
		return exitcode.TempFail
	case errors.As(err, &replaced), errors.As(err, &missing):
		// The store file was removed or replaced under its holder, or is
		// missing where a store was: the owner puts it back.
		return exitcode.TempFail
	case store.DiskError(err):
		// The disk is full or failing: the store (or a release's copy)
		// could not be written. It is the host's condition, not the
		// command's: the same command works once it passes.
		return exitcode.TempFail
	case errors.Is(err, context.Canceled):
		return exitcode.Interrupted
	}
	return exitcode.Failed
}
