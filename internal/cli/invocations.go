package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/spf13/cobra"
)

func newInvocationsCmd(f *Factory) *cobra.Command {
	cmd := noArgsGroup(&cobra.Command{
		Use:   "invocations",
		Short: "List, show and wait for recorded invocations and their outcomes",
	})
	var limit int
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: fmt.Sprintf("List recent invocations, newest first (the last %d finished are kept)", store.MaxFinishedInvocations),
		Args:  exactArgs(0, "invocations list takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			invs, err := h.Core().Invocations(limit)
			if err != nil {
				return err
			}
			rows := []invocationJSON{}
			for _, inv := range invs {
				rows = append(rows, toInvocationJSON(inv))
			}
			if asJSON {
				return writeJSON(f.IO.Out, rows)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTARTED\tCOMMAND\tVIA\tOUTCOME\tREASON\tCALLER")
			for _, r := range rows {
				outcome := r.Outcome
				if outcome == "" {
					outcome = "running"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID[:12], r.StartedAt.Local().Format(time.DateTime), safe(r.Command), r.Transport, outcome, safe(r.Reason), safe(r.caller()))
			}
			return tw.Flush()
		},
	}
	list.Flags().IntVarP(&limit, "limit", "n", 20, "how many to list (0 for all kept)")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one invocation (an id or a unique prefix of at least 8 characters)",
		Args:  exactArgs(1, "invocations show takes an invocation id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			inv, err := h.Core().Invocation(args[0])
			if err != nil {
				return err
			}
			r := toInvocationJSON(inv)
			if e, err := h.Admin().Wrapped(inv.Digest, inv.Identity); err == nil && e != nil {
				r.Wraps = e.Wraps.Package + "/" + e.Wraps.Command + " " + e.Digest
			}
			if showJSON {
				return writeJSON(f.IO.Out, r)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			for _, kv := range [][2]string{
				{"id", r.ID}, {"command", r.Command}, {"release", r.Release}, {"wraps", r.Wraps}, {"revision", strconv.FormatUint(r.Revision, 10)},
				{"via", r.Transport}, {"task", r.Task}, {"started", r.StartedAt.Format(time.RFC3339Nano)},
				{"finished", formatTime(r.FinishedAt)}, {"outcome", r.Outcome}, {"reason", r.Reason},
				{"exit status", r.exitStatusText()}, {"detail", r.Detail},
				{"enforcement", r.Enforcement}, {"action", r.Action}, {"resource", r.Resource}, {"approval", r.ApprovalID},
				{"subject", r.Subject}, {"issuer", r.Issuer},
			} {
				if kv[1] == "" && (kv[0] == "wraps" || kv[0] == "enforcement" || kv[0] == "action" || kv[0] == "resource" || kv[0] == "approval" || kv[0] == "subject" || kv[0] == "issuer") {
					continue
				}
				fmt.Fprintf(tw, "%s:\t%s\n", kv[0], safe(kv[1]))
			}
			for _, e := range r.Effects {
				fmt.Fprintf(tw, "effect:\t%s %s\n", safe(e.Kind), safe(e.Ref))
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	cmd.AddCommand(list, show, newInvocationsWaitCmd(f))
	return cmd
}

type invocationJSON struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	Release string `json:"release"`
	// Wraps is, for an owner's wrapper, the version 1 command it runs
	// and the release that command is of: "PACKAGE/COMMAND sha256:…".
	Wraps      string     `json:"wraps,omitempty"`
	Revision   uint64     `json:"revision"`
	Transport  string     `json:"transport"`
	Task       string     `json:"task"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Outcome    string     `json:"outcome,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	// ExitStatus is the status the CLI exits with for this outcome
	// (OutcomeStatus): what a CLI call ended with, 77 for a denial, which
	// never ran the command; absent while the call runs.
	// CommandExitStatus is the command's own status, when it exited with
	// one that tells more: a command_failed command's, or a non-zero one
	// of a call that ended otherwise (a cancelled command's).
	ExitStatus        *int   `json:"exitStatus,omitempty"`
	CommandExitStatus *int   `json:"commandExitStatus,omitempty"`
	Detail            string `json:"detail,omitempty"`
	// HostPID is the process that admitted the call and recorded it: the
	// in-process core, rukhd, or `rukh mcp`.
	HostPID int `json:"hostPid"`
	// Enforcement is the profile the task applied; Effects what the
	// command reported; Action, Resource and ApprovalID what a refusal
	// refused (or the approval a call ran under).
	Enforcement string         `json:"enforcement,omitempty"`
	Effects     []store.Effect `json:"effects,omitempty"`
	Action      string         `json:"action,omitempty"`
	Resource    string         `json:"resource,omitempty"`
	ApprovalID  string         `json:"approvalId,omitempty"`
	// Subject and Issuer are the verified caller of an HTTP call (its
	// token's sub and iss); absent for a local caller.
	Subject string `json:"subject,omitempty"`
	Issuer  string `json:"issuer,omitempty"`
}

// caller is who made the call, for the list: an HTTP caller's subject and
// issuer; empty for a local caller.
func (r invocationJSON) caller() string {
	if r.Subject == "" {
		return ""
	}
	return r.Subject + " (" + r.Issuer + ")"
}

// exitStatusText is the exit status line of `invocations show`: the
// CLI's status, the command's own beside it when that differs, "-" while
// the call runs.
func (r invocationJSON) exitStatusText() string {
	if r.ExitStatus == nil {
		return "-"
	}
	text := strconv.Itoa(*r.ExitStatus)
	if c := r.CommandExitStatus; c != nil && *c != *r.ExitStatus {
		text += fmt.Sprintf(" (the command exited %d)", *c)
	}
	return text
}

func toInvocationJSON(inv *store.Invocation) invocationJSON {
	r := invocationJSON{ID: inv.ID, Command: inv.Identity, Release: inv.Digest, Revision: inv.Revision,
		Transport: inv.Transport, Task: inv.Task, StartedAt: inv.StartedAt, Outcome: inv.Outcome,
		Reason: inv.Reason, Detail: inv.Detail, HostPID: inv.PID,
		Enforcement: inv.Enforcement, Effects: inv.Effects, Action: inv.Attempt.Action, Resource: inv.Attempt.Resource,
		ApprovalID: inv.Attempt.ApprovalID, Subject: inv.Subject, Issuer: inv.Issuer}
	if !inv.FinishedAt.IsZero() {
		t := inv.FinishedAt
		r.FinishedAt = &t
	}
	if inv.Outcome != "" {
		// The record keeps the command's own status (0 when it never
		// ran); the CLI's is the outcome's, decided in the one place.
		status := OutcomeStatus(&invoke.Outcome{Outcome: inv.Outcome, Reason: inv.Reason, ExitStatus: inv.ExitStatus})
		r.ExitStatus = &status
		if own := inv.ExitStatus; inv.Outcome == invoke.CommandFailed || own != 0 {
			r.CommandExitStatus = &own
		}
	}
	return r
}

func formatTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}
