package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/thin"
	"github.com/spf13/cobra"
)

// Bounds of the daemon commands' waits.
const (
	daemonStartWait = 10 * time.Second // for a started daemon to answer
	daemonStopWait  = 15 * time.Second // for a stopped daemon to go away
)

func newDaemonCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Start, stop and inspect " + f.Name + "d, the optional daemon that makes start-up fast",
		Long: f.Name + `d keeps the store open and the projection warm, and runs every command
line the CLI forwards to it with the caller's terminal, directory and
environment: a command behaves the same with or without it. Without it,
the CLI does the same work in-process. With systemd, socket activation
starts it on first use (see the README).`,
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show whether " + f.Name + "d runs, and how it is",
		Args:  exactArgs(0, "daemon status takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := f.dialer()
			if err != nil {
				return err
			}
			st, err := daemonStatus(cmd.Context(), d)
			if err != nil {
				return err
			}
			up := time.Since(time.Unix(st.StartedUnix, 0)).Round(time.Second)
			if asJSON {
				return writeJSON(f.IO.Out, struct {
					PID           int        `json:"pid"`
					Build         string     `json:"build"`
					Started       time.Time  `json:"startedAt"`
					UptimeSeconds int64      `json:"uptimeSeconds"`
					Socket        string     `json:"socket"`
					Activated     bool       `json:"activated"`
					Revision      uint64     `json:"revision"`
					Connections   int        `json:"connections"`
					InFlight      int        `json:"inFlight"`
					RSSBytes      int64      `json:"rssBytes"`
					StoreError    string     `json:"storeError,omitempty"`
					WriteError    string     `json:"storeWriteError,omitempty"`
					WriteFailing  *time.Time `json:"storeWriteFailingSince,omitempty"`
					Pending       int        `json:"pendingOutcomes"`
					Draining      bool       `json:"draining"`
				}{st.PID, st.Build, time.Unix(st.StartedUnix, 0).UTC(), int64(up / time.Second), st.Socket, st.Activated,
					st.Revision, st.Connections, st.InFlight, st.RSSBytes, st.StoreError,
					st.StoreWriteError, writeFailingSince(st), st.PendingOutcomes, st.Draining})
			}
			how := "started by hand"
			if st.Activated {
				how = "socket-activated"
			}
			fmt.Fprintf(f.IO.Out, "%sd is running: pid %d, up %s (%s)\nsocket:      %s\nbuild:       %s\nrevision:    %d\nconnections: %d\nrunning:     %d invocations\nmemory:      %.1f MiB resident\n",
				f.Name, st.PID, up, how, st.Socket, st.Build, st.Revision, st.Connections, st.InFlight, float64(st.RSSBytes)/(1<<20))
			if st.Draining {
				fmt.Fprintf(f.IO.Out, "draining:    it takes no new work and exits once what runs has ended\n")
			}
			if st.StoreError != "" {
				fmt.Fprintf(f.IO.Out, "store:       UNREADABLE: %s\n", st.StoreError)
			}
			if st.StoreWriteError != "" {
				fmt.Fprintf(f.IO.Out, "store:       NOT WRITABLE since %s: %s\n",
					writeFailingSince(st).Local().Format(time.DateTime), st.StoreWriteError)
			}
			if st.PendingOutcomes > 0 {
				fmt.Fprintf(f.IO.Out, "pending:     %d outcomes saved aside wait for the store to take them (the next call records them)\n", st.PendingOutcomes)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	start := &cobra.Command{
		Use:   "start",
		Short: "Start " + f.Name + "d in the background (its log goes to the runtime dir)",
		Args:  exactArgs(0, "daemon start takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return daemonStart(cmd.Context(), f)
		},
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop " + f.Name + "d: running invocations are stopped and recorded as interrupted",
		Args:  exactArgs(0, "daemon stop takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return daemonStop(cmd.Context(), f)
		},
	}
	restart := &cobra.Command{
		Use:   "restart",
		Short: "Stop " + f.Name + "d if it runs, then start it (e.g. to serve a new build)",
		Args:  exactArgs(0, "daemon restart takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := daemonStop(cmd.Context(), f); err != nil {
				return err
			}
			// A socket-activated daemon comes back at the next
			// connection: that is the restart, when it is of this build.
			d, err := f.dialer()
			if err != nil {
				return err
			}
			if s, err := d.Dial(cmd.Context()); err == nil {
				s.Close()
				fmt.Fprintf(f.IO.ErrOut, "%sd started: pid %d (socket-activated)\n", f.Name, s.Daemon.PID)
				return nil
			}
			return daemonStart(cmd.Context(), f)
		},
	}
	cmd.AddCommand(status, start, stop, restart)
	return cmd
}

func (f *Factory) dialer() (*thin.Dialer, error) {
	p, err := f.Paths()
	if err != nil {
		return nil, &ExitError{Status: exitcode.Usage, Err: err}
	}
	return &thin.Dialer{Socket: p.Socket(f.Name), Name: f.Name, Build: buildid.ID()}, nil
}

// daemonError turns a failure to reach the daemon into an exit status.
func daemonError(d *thin.Dialer, err error) error {
	if errors.Is(err, thin.ErrNoDaemon) {
		return &ExitError{Status: exitcode.Unavailable, Err: fmt.Errorf("%sd is not running (no daemon answers at %s); `%s daemon start` starts it", d.Name, d.Socket, d.Name)}
	}
	return &ExitError{Status: exitcode.TempFail, Err: err}
}

func daemonStatus(ctx context.Context, d *thin.Dialer) (*wire.DaemonStatus, error) {
	m, err := d.Manage(ctx, &wire.Msg{Status: &wire.Status{}})
	if err != nil {
		return nil, daemonError(d, err)
	}
	if m.Daemon == nil {
		return nil, &ExitError{Status: exitcode.TempFail, Err: errors.New("the daemon answered status with something else")}
	}
	return m.Daemon, nil
}

func daemonStart(ctx context.Context, f *Factory) error {
	d, err := f.dialer()
	if err != nil {
		return err
	}
	if st, err := daemonStatus(ctx, d); err == nil {
		if st.Draining {
			return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd (pid %d) is draining: it exits once its %d running invocations end, and calls run in-process meanwhile; start one then",
				f.Name, st.PID, st.InFlight)}
		}
		if st.Build != d.Build {
			return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd is already running (pid %d) but is build %s, not this %s's %s; `%s daemon restart` replaces it",
				f.Name, st.PID, st.Build, f.Name, d.Build, f.Name)}
		}
		fmt.Fprintf(f.IO.ErrOut, "%sd is already running (pid %d)\n", f.Name, st.PID)
		return nil
	}
	bin, err := thin.CoreBinary(f.Name)
	if err != nil {
		return &ExitError{Status: exitcode.Unavailable, Err: err}
	}
	p, _ := f.Paths()
	logPath, logf, err := daemonLog(p, f.Name)
	if err != nil {
		return &ExitError{Status: exitcode.TempFail, Err: err}
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, io.SeekEnd) // where this start's lines begin
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	c := &exec.Cmd{Path: bin, Args: []string{bin}, Env: f.Env, Dir: "/",
		Stdin: devnull, Stdout: logf, Stderr: logf,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}} // outlives this terminal
	if err := spawn.WithHostTimerSlack(c.Start); err != nil {
		return &ExitError{Status: exitcode.Unavailable, Err: fmt.Errorf("start %s: %w", bin, err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	for end := time.Now().Add(daemonStartWait); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			if why := lastLine(logPath, logStart); why != "" {
				return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd exited at once (%v): %s", f.Name, err, why)}
			}
			return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd exited at once (%v); see %s", f.Name, err, logPath)}
		default:
		}
		if st, err := daemonStatus(ctx, d); err == nil {
			fmt.Fprintf(f.IO.ErrOut, "%sd started: pid %d, socket %s, log %s\n", f.Name, st.PID, st.Socket, logPath)
			return nil
		}
	}
	return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd did not answer within %s; see %s", f.Name, daemonStartWait, logPath)}
}

// lastLine is the last line the daemon wrote to its log at path after
// offset (what it said as it exited), at most its last 4 KiB, or "".
func lastLine(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= offset {
		return ""
	}
	offset = max(offset, fi.Size()-4096)
	buf := make([]byte, fi.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// daemonLog opens the daemon's log in the runtime dir for appending: only
// once the directory is known to be private and this user's, and never
// through a symbolic link (one planted there would make the daemon append
// to a file of the planter's choosing), nor to anything but a regular
// file.
func daemonLog(p paths.Paths, name string) (string, *os.File, error) {
	if err := paths.Secure(p.Runtime); err != nil {
		return "", nil, err
	}
	path := filepath.Join(p.Runtime, name+"d.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return "", nil, fmt.Errorf("%s is a symbolic link; remove it (the daemon's log is never written through one)", path)
	}
	if err != nil {
		return "", nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return "", nil, fmt.Errorf("%s is not a regular file; remove it", path)
	}
	return path, f, nil
}

func daemonStop(ctx context.Context, f *Factory) error {
	d, err := f.dialer()
	if err != nil {
		return err
	}
	// Manage, not Dial: a daemon of another build is stopped too.
	st, err := d.Manage(ctx, &wire.Msg{Status: &wire.Status{}})
	if errors.Is(err, thin.ErrNoDaemon) {
		fmt.Fprintf(f.IO.ErrOut, "%sd is not running\n", f.Name)
		return nil
	}
	if err != nil {
		return daemonError(d, err)
	}
	if st.Daemon == nil {
		return &ExitError{Status: exitcode.TempFail, Err: errors.New("the daemon answered status with something else")}
	}
	pid := st.Daemon.PID
	if _, err := d.Manage(ctx, &wire.Msg{Stop: &wire.Stop{}}); err != nil {
		return daemonError(d, err)
	}
	// Stopped means: nothing answers on the socket any more and the
	// process is gone (so the store's lock is free).
	activated := st.Daemon.Activated
	for end := time.Now().Add(daemonStopWait); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		gone := pid == os.Getpid() || !running(pid)
		if gone && activated {
			// The socket is systemd's: a dial would only have it start
			// another daemon (the next command's connection will).
			fmt.Fprintf(f.IO.ErrOut, "%sd stopped (pid %d)\n", f.Name, pid)
			return nil
		}
		s, err := d.Dial(ctx)
		if err == nil {
			s.Close()
		}
		if errors.Is(err, thin.ErrNoDaemon) && gone {
			fmt.Fprintf(f.IO.ErrOut, "%sd stopped (pid %d)\n", f.Name, pid)
			return nil
		}
	}
	return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd (pid %d) is still running %s after it was asked to stop", f.Name, pid, daemonStopWait)}
}

// running reports whether process pid runs. A zombie does not: it has
// exited (its lock is free) and waits for a parent to reap it, which a
// container's init may never do.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')') // the name before it may hold anything
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// writeFailingSince is when the daemon's writes to the store began to
// fail, or nil when they do not.
func writeFailingSince(st *wire.DaemonStatus) *time.Time {
	if st.StoreWriteError == "" {
		return nil
	}
	t := time.Unix(st.StoreWriteFailingUnix, 0).UTC()
	return &t
}
