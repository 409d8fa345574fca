package invoke

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// Bounds of one wait (docs/invocation.md, "Waiting for invocations";
// docs/adr/0005-detached-runs-and-waits.md).
const (
	MaxWaitIDs     = 64               // ids in one wait
	MaxWaitTimeout = 10 * time.Minute // the longest observation window
)

// How often a wait looks at the records again: from waitPollFirst,
// doubling up to waitPollMax, so a short run is seen soon and a long one
// costs little.
const (
	waitPollFirst = 20 * time.Millisecond
	waitPollMax   = 250 * time.Millisecond
)

// The status of an id in a wait. Every id is in exactly one of them, and
// in the list of WaitResult of the same name.
const (
	WaitTerminal = "terminal" // the record has its outcome: it never changes again
	WaitPending  = "pending"  // running, its host alive: waiting can change it
	// WaitStopped: the record is open but its host is gone. Waiting alone
	// does not change it: the next admission of any call (or rukhd
	// starting) records it, with the outcome its host saved aside or as
	// execution_failed/host_lost.
	WaitStopped = "stopped"
	WaitUnknown = "unknown" // no record this caller may see; Error says why
)

// WaitEntry is what a wait learned about one id.
type WaitEntry struct {
	ID           string // as given (lowercased)
	InvocationID string // the full id; "" when unknown
	Command      string // the command's identity; "" when unknown
	Status       string // WaitTerminal, WaitPending, WaitStopped or WaitUnknown
	Outcome      string // "" unless terminal
	Reason       string
	Error        string // why an unknown id could not be observed
}

// Terminal reports whether the entry's record has its outcome.
func (e *WaitEntry) Terminal() bool { return e.Status == WaitTerminal }

// WaitResult is one wait's answer: an entry per id in the order given,
// and the ids partitioned by status (each list in the order given).
type WaitResult struct {
	Entries     []WaitEntry
	AllTerminal bool
	TimedOut    bool // the window closed with ids still pending
	Terminal    []string
	Pending     []string
	Stopped     []string
	Unknown     []string
	Timeout     time.Duration // the window, as given
}

// WaitUsageError is a wait refused as a whole: no ids, too many,
// duplicates, a timeout out of bounds. Nothing was observed.
type WaitUsageError struct{ Msg string }

func (e *WaitUsageError) Error() string { return e.Msg }

// Wait observes the invocations ids (each a full id or a unique prefix of
// at least 8 hex characters) until every one is terminal, or none can
// change by waiting, or timeout has passed, and returns what it saw. A
// timeout of 0 looks once. When task is not empty, only records of that
// task are seen; the others are unknown, exactly like ids that do not
// exist, so a task learns nothing of another's work.
//
// Wait only reads the store: it never changes a record, signals a
// command or resolves a lost host, and its ctx ending (the caller went
// away) leaves every run as it was. An expired window is not an error:
// the result says TimedOut. Only a store that cannot be read, or ctx
// ending, is an error.
func (c *Core) Wait(ctx context.Context, task string, ids []string, timeout time.Duration) (*WaitResult, error) {
	if err := checkWait(ids, timeout); err != nil {
		return nil, err
	}
	end := time.Now().Add(timeout)
	res := &WaitResult{Timeout: timeout, Entries: make([]WaitEntry, len(ids))}
	for i, id := range ids {
		res.Entries[i].ID = strings.ToLower(id)
	}
	if err := c.view(func(tx *store.Tx) error { return resolveWaitIDs(tx, task, res.Entries) }); err != nil {
		return nil, err
	}
	waited := false
	for delay := waitPollFirst; ; delay = min(2*delay, waitPollMax) {
		pending, stopped := 0, 0
		for i := range res.Entries {
			switch res.Entries[i].Status {
			case WaitPending:
				pending++
			case WaitStopped:
				stopped++
			}
		}
		left := time.Until(end)
		// A stopped id resolves only when some admission records it, so a
		// call that has not waited at all while one is stopped waits one
		// poll first: a caller that loops until all are terminal is paced
		// here rather than asking as fast as it can.
		floor := stopped > 0 && !waited
		if (pending == 0 && !floor) || left <= 0 {
			res.TimedOut = pending > 0
			break
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		waited = true
		if err := c.view(func(tx *store.Tx) error { return observeWait(tx, res.Entries) }); err != nil {
			return nil, err
		}
	}
	res.AllTerminal = true
	for _, e := range res.Entries {
		switch e.Status {
		case WaitTerminal:
			res.Terminal = append(res.Terminal, e.ID)
		case WaitPending:
			res.Pending = append(res.Pending, e.ID)
		case WaitStopped:
			res.Stopped = append(res.Stopped, e.ID)
		default:
			res.Unknown = append(res.Unknown, e.ID)
		}
		res.AllTerminal = res.AllTerminal && e.Status == WaitTerminal
	}
	return res, nil
}

// checkWait refuses a wait as a whole when its request is out of bounds.
func checkWait(ids []string, timeout time.Duration) error {
	switch {
	case len(ids) == 0:
		return &WaitUsageError{"give at least one invocation id"}
	case len(ids) > MaxWaitIDs:
		return &WaitUsageError{fmt.Sprintf("%d invocation ids given; one wait takes at most %d", len(ids), MaxWaitIDs)}
	case timeout < 0:
		return &WaitUsageError{fmt.Sprintf("the timeout %s is negative; 0 looks once without waiting", timeout)}
	case timeout > MaxWaitTimeout:
		return &WaitUsageError{fmt.Sprintf("the timeout %s is longer than the maximum, %s; wait again for longer", timeout, MaxWaitTimeout)}
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		id = strings.ToLower(id)
		if seen[id] {
			return &WaitUsageError{fmt.Sprintf("invocation id %s is given more than once", id)}
		}
		seen[id] = true
	}
	return nil
}

// wellFormedID reports whether id can name an invocation: 8 to 32
// lowercase hex characters.
func wellFormedID(id string) bool {
	if len(id) < 8 || len(id) > 32 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// resolveWaitIDs finds the record of every entry (by full id or unique
// prefix, among the records of task when task is set) and classifies it.
// An id that is malformed, matches nothing or more than one record is
// unknown, with the reason in Error.
func resolveWaitIDs(tx *store.Tx, task string, entries []WaitEntry) error {
	var all []*store.Invocation
	if tx != nil {
		var err error
		if all, err = tx.Invocations(0); err != nil {
			return err
		}
	}
	for i := range entries {
		e := &entries[i]
		if !wellFormedID(e.ID) {
			e.Status, e.Error = WaitUnknown, fmt.Sprintf("%q is not an invocation id: give its 32 hex characters, or a unique prefix of at least 8", e.ID)
			continue
		}
		var found []*store.Invocation
		for _, inv := range all {
			if strings.HasPrefix(inv.ID, e.ID) && (task == "" || inv.Task == task) {
				found = append(found, inv)
			}
		}
		switch len(found) {
		case 0:
			e.Status, e.Error = WaitUnknown, fmt.Sprintf("no invocation %s", e.ID)
		case 1:
			e.InvocationID, e.Command = found[0].ID, found[0].Identity
			classify(e, found[0])
		default:
			sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
			e.Status, e.Error = WaitUnknown, fmt.Sprintf("%d invocations start with %s; give more of the id", len(found), e.ID)
		}
	}
	return nil
}

// observeWait looks again at the entries that may still change.
func observeWait(tx *store.Tx, entries []WaitEntry) error {
	if tx == nil {
		return nil
	}
	for i := range entries {
		e := &entries[i]
		if e.Status != WaitPending && e.Status != WaitStopped {
			continue
		}
		inv, err := tx.InvocationByID(e.InvocationID)
		if err != nil {
			return err
		}
		if inv == nil { // pruned since: only finished records are
			e.Status, e.Error = WaitUnknown, fmt.Sprintf("the record of %s was pruned (the last %d finished are kept)", e.InvocationID, store.MaxFinishedInvocations)
			continue
		}
		classify(e, inv)
	}
	return nil
}

// classify sets e's status from its record. Reading whether the host
// still runs has no effect on it (unlike hostAlive, which reaps).
func classify(e *WaitEntry, inv *store.Invocation) {
	switch {
	case !inv.Open():
		e.Status, e.Outcome, e.Reason = WaitTerminal, inv.Outcome, inv.Reason
	case processAlive(inv.PID, inv.PIDStart):
		e.Status = WaitPending
	default:
		e.Status = WaitStopped
	}
}
