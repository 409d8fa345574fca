package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/thin"
	"github.com/spf13/cobra"
)

// doctorReport is what `doctor` finds.
type doctorReport struct {
	Host    string `json:"host"`       // "daemon" or "in-process"
	HostWhy string `json:"hostReason"` // why that host
	// Processors is how many processors the daemon runs on now (one
	// while its requests come alone: docs/daemon.md); 0 in-process.
	Processors int `json:"processors,omitempty"`
	// TimerSlackNs is the timer slack of the host this ran in, in
	// nanoseconds (docs/daemon.md, "Timer slack").
	TimerSlackNs int64  `json:"timerSlackNs"`
	Socket       string `json:"socket"`
	Store        string `json:"store"`
	StoreOK      bool   `json:"storeOk"`
	StoreError   string `json:"storeError,omitempty"`
	// StoreWriteError is why the daemon's writes to the store fail, when
	// they do (a full disk, say).
	StoreWriteError string `json:"storeWriteError,omitempty"`
	Pending         int    `json:"pendingOutcomes"` // outcomes saved aside
	// JournalCopies are the journals set aside beside the store: each may
	// hold records the store does not have (docs/invocation.md).
	JournalCopies []string          `json:"journalCopies,omitempty"`
	Revision      uint64            `json:"revision"`
	Enforcement   map[string]string `json:"enforcement"`
}

func newDoctorCmd(f *Factory) *cobra.Command {
	var asJSON, newStore bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this installation: which host serves calls, the store's integrity, what can be enforced",
		Args:  exactArgs(0, "doctor takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := f.Paths()
			if err != nil {
				return &ExitError{Status: exitcode.Usage, Err: err}
			}
			if newStore {
				return startNewStore(f, p.Store())
			}
			rep := doctorReport{Socket: p.Socket(f.Name), Store: p.Store(), TimerSlackNs: spawn.ThreadTimerSlack().Nanoseconds()}
			otherBuild := false // a daemon of another build holds the store
			damaged := false
			var we *wire.Error
			if f.NewHost != nil {
				rep.Host, rep.HostWhy = "daemon", f.HostNote
				rep.Processors = runtime.GOMAXPROCS(0) // this runs in rukhd
			} else {
				rep.Host = "in-process"
				d, _ := f.dialer()
				_, err := d.Dial(cmd.Context())
				switch {
				case errors.Is(err, thin.ErrNoDaemon):
					rep.HostWhy = "no daemon answers at " + d.Socket
				case errors.As(err, &we):
					rep.HostWhy = "the daemon refuses this client: " + we.Message
					otherBuild = we.Code == wire.CodeBuildMismatch
				case err != nil:
					rep.HostWhy = err.Error()
				default:
					rep.HostWhy = "a daemon started while this ran"
				}
			}
			h, err := f.Host()
			if err != nil {
				return err
			}
			rep.Enforcement = h.Core().Enforceable()
			if otherBuild {
				// It holds the store's lock for as long as it runs: waiting
				// for it would only time out.
				rep.StoreError = fmt.Sprintf("not checked: the daemon of another build holds it; `%s daemon restart` serves this build, whose doctor then checks it", f.Name)
			} else if rev, err := checkStore(cmd.Context(), h); err != nil {
				rep.StoreError = err.Error()
				var ce *store.CorruptError
				damaged = errors.As(err, &ce) || errors.As(err, &we) && we.Code == wire.CodeStoreDamaged
			} else {
				rep.StoreOK, rep.Revision = true, rev
			}
			rep.Pending = invoke.PendingOutcomes(p.Data)
			rep.JournalCopies = store.JournalCopies(p.Store())
			// The host that runs this doctor says what writing the store
			// met: rukhd's, when it runs there (asking it over its own
			// socket would fail when it is busy or draining).
			if _, err := h.Core().StoreWriteFailure(); err != nil {
				rep.StoreWriteError = err.Error()
			}
			if asJSON {
				if err := writeJSON(f.IO.Out, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(f.IO.Out, "host:    %s (%s)\nsocket:  %s\n", rep.Host, rep.HostWhy, rep.Socket)
				if rep.Processors > 0 {
					fmt.Fprintf(f.IO.Out, "daemon:  on %d processor(s) now (one while its requests come alone)\n", rep.Processors)
				}
				fmt.Fprintf(f.IO.Out, "timers:  %s of slack in the host (its commands get %s)\n", time.Duration(rep.TimerSlackNs), spawn.DefaultTimerSlack)
				if rep.StoreOK {
					fmt.Fprintf(f.IO.Out, "store:   %s: consistent, revision %d\n", rep.Store, rep.Revision)
				} else {
					how := "UNAVAILABLE"
					if damaged {
						how = "DAMAGED"
					}
					fmt.Fprintf(f.IO.Out, "store:   %s: %s: %s\n", rep.Store, how, rep.StoreError)
				}
				if rep.StoreWriteError != "" {
					fmt.Fprintf(f.IO.Out, "store:   NOT WRITABLE by %sd: %s\n", f.Name, rep.StoreWriteError)
				}
				if rep.Pending > 0 {
					fmt.Fprintf(f.IO.Out, "pending: %d outcomes saved aside in %s wait for the store to take them (the next call records them)\n",
						rep.Pending, filepath.Join(p.Data, invoke.PendingDir))
				}
				for _, c := range rep.JournalCopies {
					fmt.Fprintf(f.IO.Out, "journal: %s was set aside: it was not this store's, or had unreadable bytes; it may hold call records the store does not have (see the owner guide)\n", c)
				}
				for _, name := range []string{"host", "restricted", "strict"} {
					fmt.Fprintf(f.IO.Out, "enforcement %-11s %s\n", name+":", rep.Enforcement[name])
				}
			}
			if !rep.StoreOK {
				return &ExitError{Status: exitcode.TempFail, Err: errors.New(rep.StoreError), Reported: true}
			}
			if rep.StoreWriteError != "" {
				return &ExitError{Status: exitcode.TempFail, Err: errors.New(rep.StoreWriteError), Reported: true}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&newStore, "new-store", false, "start a new, empty store where store.db is missing though releases are installed (recovery: see the owner guide)")
	return cmd
}

// checkStore runs on the store what every command runs on it: the page
// and record checks (store.Tx.Check), then what reading the active state
// does — decode the active revision's releases and profile and project
// them, as `ext list`, every call and `rukh mcp` do. A store that fails
// either is not consistent, and the revision doctor reports is the one
// the commands read, never a zero standing in for one it could not read.
func checkStore(ctx context.Context, h *local.Host) (uint64, error) {
	if err := h.Core().CheckStore(); err != nil {
		return 0, err
	}
	st, err := h.Admin().State()
	if err != nil {
		return 0, err
	}
	if st.Projection == nil {
		return 0, errors.New("the active revision could not be read: the host returned no projection")
	}
	return st.Projection.Revision, nil
}

// startNewStore creates a new, empty store at path where none is, though
// the data directory holds what an earlier one recorded: what no other
// command does (store.MissingError), and what the owner asks for in step 4
// of "Recovering a damaged store". An existing file is never replaced,
// and a daemon that runs holds the store's lock, so it is refused then.
func startNewStore(f *Factory, path string) error {
	if f.NewHost != nil {
		return &ExitError{Status: exitcode.TempFail, Err: fmt.Errorf("%sd is running and holds the store; run `%s daemon stop` first, then `%s doctor --new-store`", f.Name, f.Name, f.Name)}
	}
	if _, err := os.Lstat(path); err == nil {
		return &ExitError{Status: exitcode.Usage, Err: fmt.Errorf("there is already something at %s; a new store is started only where there is none: move it aside first", path)}
	}
	h, err := f.Host()
	if err != nil {
		return err
	}
	if path, err = h.NewStore(); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "new, empty store at %s: trust the publishers' keys, install the releases and apply the profile again\n", path)
	return nil
}
