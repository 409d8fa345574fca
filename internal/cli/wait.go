package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/spf13/cobra"
)

// DefaultWaitTimeout is how long `invocations wait` waits when --timeout
// is not given.
const DefaultWaitTimeout = 30 * time.Second

func newInvocationsWaitCmd(f *Factory) *cobra.Command {
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "wait ID... [--timeout 30s]",
		Short: "Wait until invocations have their outcomes, for a bounded time",
		Long: fmt.Sprintf(`Wait until every invocation named has its outcome, none can change by
waiting, or the timeout passes, and print what was seen: one entry per id,
in the order given, with its status (terminal, pending, stopped, unknown),
outcome and reason. An id is a full invocation id or a unique prefix of at
least 8 characters; at most %d ids. --timeout 0 looks once without
waiting; the longest timeout is %s. Waiting never touches a run: Ctrl-C
ends the wait, not the invocations.

Exit status: 0 when every invocation is terminal (whatever its outcome;
read it from the output), %d when the timeout passed with some still
running (waiting again is safe), %d when some cannot be observed (unknown)
or their host is gone without an outcome (stopped) and none is running,
%d for bad input (no ids, too many, an id given twice, a timeout out of
bounds).`, invoke.MaxWaitIDs, invoke.MaxWaitTimeout, exitcode.Deadline, exitcode.Failed, exitcode.Usage),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &UsageError{errors.New("invocations wait takes one or more invocation ids")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			res, err := h.WaitFor(cmd.Context(), args, timeout)
			var ue *invoke.WaitUsageError
			if errors.As(err, &ue) {
				return &UsageError{ue}
			}
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(f.IO.Out, res)
			} else {
				err = printWait(f, res)
			}
			if err != nil {
				return err
			}
			switch {
			case res.AllTerminal:
				return nil
			case len(res.Pending) > 0:
				if !asJSON {
					fmt.Fprintf(f.IO.ErrOut, "%s: %d still running when the wait of %s ended; waiting again is safe\n",
						f.Name, len(res.Pending), time.Duration(res.TimeoutMs)*time.Millisecond)
				}
				return &ExitError{Status: exitcode.Deadline, Err: errors.New("the wait timed out"), Reported: true}
			}
			return &ExitError{Status: exitcode.Failed, Err: errors.New("some invocations cannot be observed to end"), Reported: true}
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", DefaultWaitTimeout, fmt.Sprintf("wait at most this long (0: look once; at most %s)", invoke.MaxWaitTimeout))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printWait prints a wait's entries as a table.
func printWait(f *Factory, res *wire.WaitResult) error {
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCOMMAND\tSTATUS\tOUTCOME\tREASON")
	for _, e := range res.Entries {
		reason := e.Reason
		switch e.Status {
		case wire.WaitUnknown:
			reason = e.Error
		case wire.WaitStopped:
			reason = "its host is gone; the next call records it"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.ID, dash(e.Command), e.Status, dash(e.Outcome), strings.TrimSpace(reason))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
