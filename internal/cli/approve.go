package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"github.com/rukh-cli/rukh/thin"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// newApproveCmd is the owner's trusted path for approvals: a person at a
// terminal reads the exact call and types "yes". It is a built-in, so no
// profile can project it as a tool (the fence), and it refuses to run
// from inside a command Rukh runs or without a terminal to ask on.
func newApproveCmd(f *Factory) *cobra.Command {
	var list, all, asJSON bool
	cmd := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve, at a terminal, one call that a task keeps for the owner (--list shows those waiting)",
		Long: `Approve one call that was refused as approval_required: the command, its
exact inputs and the task are shown, and you answer on the terminal. The
same call, made again by the same task before the approval expires, then
runs once. An approval is never reused, and nothing but a person at a
terminal can give one.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			if list {
				if len(args) > 0 {
					return &UsageError{Err: errors.New("approve --list takes no id")}
				}
				return listApprovals(f, cmd, all, asJSON)
			}
			if len(args) != 1 {
				return &UsageError{Err: fmt.Errorf("approve takes one approval id (`%s approve --list` shows them)", f.Name)}
			}
			if all || asJSON {
				return &UsageError{Err: errors.New("--all and --json go with --list")}
			}
			if id := envpolicy.Lookup(f.Env)(extproto.EnvInvocationID); id != "" {
				return &ExitError{Status: exitcode.Denied, Err: fmt.Errorf(
					"approve cannot run inside a command that %s runs (invocation %s): approvals come from the owner at a terminal", f.Name, id)}
			}
			if host, err := hostAncestor(f); err != nil {
				return &ExitError{Status: exitcode.Denied, Err: fmt.Errorf(
					"approve cannot tell that it runs below no command %s runs (%v), so it approves nothing; run `%s approve %s` yourself at a terminal", f.Name, err, f.Name, args[0])}
			} else if host != 0 {
				return &ExitError{Status: exitcode.Denied, Err: fmt.Errorf(
					"approve cannot run below %s (pid %d), which runs extension commands: approvals come from the owner at a terminal, not from a command", f.Name, host)}
			}
			tty, ok := f.IO.In.(*os.File)
			if !ok || !isTerminal(tty) {
				return &ExitError{Status: exitcode.Denied, Err: fmt.Errorf(
					"approve asks the owner on a terminal, and its standard input is not one; run `%s approve %s` yourself at a terminal", f.Name, args[0])}
			}
			a, err := h.Core().Approval(args[0])
			if err != nil {
				return approvalExit(err)
			}
			now := time.Now()
			if st := a.Status(now); st != store.ApprovalPending {
				return approvalExit(&store.ApprovalError{ID: a.ID, Status: st})
			}
			// The question and the answer both go through the terminal, not
			// through stdout, which a script may read.
			showApproval(tty, a, now)
			fmt.Fprint(tty, "Approve this call once? Type yes to approve: ")
			answer, err := bufio.NewReaderSize(io.LimitReader(&untilDone{ctx: cmd.Context(), tty: tty}, 256), 256).ReadString('\n')
			if ctx := cmd.Context(); ctx.Err() != nil {
				// A Ctrl-C (in this process, or the client's cancel
				// through the daemon) while the owner was asked.
				fmt.Fprintln(tty)
				return &ExitError{Status: exitcode.Interrupted, Err: errors.New("interrupted; nothing was approved")}
			}
			if err != nil && answer == "" {
				return &ExitError{Status: exitcode.Failed, Err: fmt.Errorf("no answer (%v); nothing was approved", err)}
			}
			if strings.TrimSpace(strings.ToLower(answer)) != "yes" {
				return &ExitError{Status: exitcode.Failed, Err: errors.New("not approved")}
			}
			a, err = h.Core().Approve(a.ID)
			if err != nil {
				return approvalExit(err)
			}
			fmt.Fprintf(f.IO.Out, "approved %s: %s with these inputs runs once when task %q makes the call again before %s\n",
				a.ID, a.Identity, a.Task, a.ExpiresAt.Local().Format(time.DateTime))
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the approvals waiting for an answer")
	cmd.Flags().BoolVar(&all, "all", false, "with --list: also the approved, used and expired ones kept")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --list: print JSON")
	return cmd
}

// approvalExit gives an approval that cannot be approved exit status 1.
func approvalExit(err error) error {
	var ae *store.ApprovalError
	if errors.As(err, &ae) {
		return &ExitError{Status: exitcode.Failed, Err: err}
	}
	return err
}

func showApproval(w io.Writer, a *store.Approval, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"approval", a.ID}, {"command", a.Identity}, {"effects", a.EffectClass}, {"release", a.Digest},
		{"task", a.Task}, {"asked via", a.Transport}, {"asked by", a.RequestedBy},
		{"inputs", a.Inputs}, {"status", a.Status(now)},
		{"expires", a.ExpiresAt.Local().Format(time.DateTime) + " (in " + a.ExpiresAt.Sub(now).Round(time.Second).String() + ")"},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], safe(kv[1]))
	}
	tw.Flush()
}

type approvalJSON struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Command     string `json:"command"`
	EffectClass string `json:"effects"`
	Release     string `json:"release"`
	Task        string `json:"task"`
	// Inputs are the call's inputs, the JSON object the command would be
	// given (input id → {"value", "explicit"}). The store keeps at most
	// store.MaxApprovalInputs bytes of them: longer ones are cut, are no
	// JSON, and are InputsText instead, as kept.
	Inputs      json.RawMessage `json:"inputs,omitempty"`
	InputsText  string          `json:"inputsText,omitempty"`
	Transport   string          `json:"transport"`
	RequestedBy string          `json:"requestedBy"`
	CreatedAt   time.Time       `json:"createdAt"`
	ExpiresAt   time.Time       `json:"expiresAt"`
	ApprovedAt  *time.Time      `json:"approvedAt,omitempty"`
	UsedAt      *time.Time      `json:"usedAt,omitempty"`
	UsedBy      string          `json:"usedBy,omitempty"`
}

func listApprovals(f *Factory, cmd *cobra.Command, all, asJSON bool) error {
	h, err := f.Host()
	if err != nil {
		return err
	}
	as, err := h.Core().Approvals()
	if err != nil {
		return err
	}
	now := time.Now()
	rows := []approvalJSON{}
	for _, a := range as {
		st := a.Status(now)
		if !all && st != store.ApprovalPending {
			continue
		}
		r := approvalJSON{ID: a.ID, Status: st, Command: a.Identity, EffectClass: a.EffectClass, Release: a.Digest,
			Task: a.Task, Transport: a.Transport, RequestedBy: a.RequestedBy,
			CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, UsedBy: a.UsedBy}
		if json.Valid([]byte(a.Inputs)) {
			r.Inputs = json.RawMessage(a.Inputs)
		} else {
			r.InputsText = a.Inputs
		}
		if !a.ApprovedAt.IsZero() {
			t := a.ApprovedAt
			r.ApprovedAt = &t
		}
		if !a.UsedAt.IsZero() {
			t := a.UsedAt
			r.UsedAt = &t
		}
		rows = append(rows, r)
	}
	if asJSON {
		return writeJSON(f.IO.Out, rows)
	}
	if len(rows) == 0 {
		what := "no call waits for your approval"
		if all {
			what = "no approval has been asked for"
		}
		fmt.Fprintf(f.IO.ErrOut, "%s; a task with requireApproval keeps such calls (docs/owner.md, \"Effects and approval\")\n", what)
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tCOMMAND\tTASK\tEXPIRES\tINPUTS")
	for _, r := range rows {
		inputs := safe(string(r.Inputs) + r.InputsText)
		if len(inputs) > 60 {
			inputs = strings.ToValidUTF8(inputs[:57], "") + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, safe(r.Command), safe(r.Task), r.ExpiresAt.Local().Format(time.DateTime), inputs)
	}
	return tw.Flush()
}

// hostAncestor returns the process, if any, that the process whose
// command line this is descends from and that runs extension commands —
// the thin client, the core, the one-shot core, rukhd, `rukh mcp` — or 0. A command (or
// anything it started, whatever it did with its environment, session or
// group) stays below its host: its supervising rukh-sandbox adopts what
// it leaves behind, and so do the one-shot core and the client that start
// a command (package spawn). So `rukh approve` started by a command is
// refused however it was started.
//
// It fails closed: an error means the caller could not be placed — it
// has exited (a command's child connected to rukhd, said hello and
// exited, and the command sent the command line on its connection),
// exited while it was checked, or /proc does not say who its parents
// are — and no approval may be given then. The walk starts from the pid
// rukhd's pidfd for its peer names (f.CallerPID), and the pidfd must
// still show that process alive after the walk: a pid that was reused
// during it cannot stand in for the caller. In-process the caller is this
// process, alive by definition.
func hostAncestor(f *Factory) (int, error) {
	pid, alive := f.CallerPID, f.CallerAlive
	if pid == 0 {
		pid, alive = os.Getpid(), func() bool { return true }
	} else if alive == nil {
		return 0, fmt.Errorf("the process that sent the command line (pid %d) cannot be confirmed alive", pid)
	}
	if !alive() {
		return 0, fmt.Errorf("the process that sent the command line (pid %d) has exited", pid)
	}
	self, _ := os.Executable()
	host, cur, top := 0, pid, false
	for range 256 { // a bound on the chain, whatever /proc says
		ppid, err := parentOf(cur)
		if err != nil {
			return 0, fmt.Errorf("cannot read the parent of pid %d: %w", cur, err)
		}
		if ppid <= 1 { // init, or the top of the pid namespace (0)
			top = true
			break
		}
		exe, err := os.Readlink("/proc/" + strconv.Itoa(ppid) + "/exe")
		exe = strings.TrimSuffix(exe, " (deleted)")
		if base := filepath.Base(exe); err == nil && (exe == self || base == f.Name || base == f.Name+"d" || base == thin.OneShotBinary(f.Name)) {
			host = ppid
			break
		}
		cur = ppid
	}
	if host == 0 && !top {
		return 0, fmt.Errorf("the chain of parents of pid %d is longer than 256", pid)
	}
	if !alive() {
		return 0, fmt.Errorf("the process that sent the command line (pid %d) exited while it was checked", pid)
	}
	return host, nil
}

// parentOf reads a process's parent from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')') // the command name may hold anything
	if i < 0 {
		return 0, errors.New("no command name in /proc/PID/stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0, errors.New("too few fields in /proc/PID/stat")
	}
	return strconv.Atoi(fields[1])
}

// untilDone reads the terminal tty until ctx ends: each read waits, in
// poll(2), for the terminal to have input or for ctx to end, so that no
// read is left waiting on the terminal once the command line is over. A
// read left there would take the next line typed at the terminal, which
// is the shell's, and, in the daemon, hold up its drain.
type untilDone struct {
	ctx context.Context
	tty *os.File
}

func (r *untilDone) Read(p []byte) (int, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return 0, err
	}
	woke := make(chan struct{})
	stop := context.AfterFunc(r.ctx, func() {
		unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		close(woke)
	})
	defer func() {
		if !stop() {
			<-woke // it ran or runs: the eventfd is closed after its write
		}
		unix.Close(wake)
	}()
	raw, err := r.tty.SyscallConn()
	if err != nil {
		return 0, err
	}
	var perr error
	fds := []unix.PollFd{{Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	if err := raw.Control(func(fd uintptr) {
		fds[0].Fd = int32(fd)
		for {
			_, perr = unix.Poll(fds, -1)
			if perr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return 0, err
	}
	switch {
	case perr != nil:
		return 0, perr
	case fds[1].Revents != 0:
		return 0, r.ctx.Err()
	}
	return r.tty.Read(p) // input, a hang-up or an error: the read returns at once
}
