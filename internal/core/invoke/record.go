package invoke

import (
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rukh-cli/rukh/internal/atomicfile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/extproto"
)

// DefaultFinishRetry is how long, after a failed first try, the host keeps
// trying to commit an outcome it has decided when Core.FinishRetry is
// zero. Each try may itself wait for the store's lock (store.FilesTimeout
// in-process).
const DefaultFinishRetry = 15 * time.Second

// Backoff between tries of the final write.
const (
	finishFirstDelay = 50 * time.Millisecond
	finishMaxDelay   = 2 * time.Second
)

// PendingDir is the directory, under the data directory, where a host
// keeps the outcomes it decided but could not commit to the store.
const PendingDir = "pending-outcomes"

// RecordError says that an invocation's outcome could not be committed to
// the store. The outcome itself stands: a command that ran is never run
// again. Error says exactly what happened to it.
type RecordError struct {
	ID      string
	Outcome string // outcome, or outcome/reason
	Ran     bool   // the command ran (a refusal did not)
	// Pending is the file the outcome was saved in, to be committed by the
	// next admission; "" when it could not be saved either.
	Pending    string
	Err        error // why the store refused the write
	PendingErr error // why the outcome could not be saved aside
}

func (e *RecordError) Error() string {
	switch {
	case !e.Ran:
		return fmt.Sprintf("invocation %s: the outcome %s could not be recorded (%v); nothing ran", e.ID, e.Outcome, e.Err)
	case e.Pending != "":
		return fmt.Sprintf("invocation %s: the outcome %s could not be written to the store (%v); it is saved in %s and the next call records it",
			e.ID, e.Outcome, e.Err, e.Pending)
	case e.PendingErr != nil:
		return fmt.Sprintf("invocation %s: the outcome %s could not be recorded (%v), nor saved aside (%v); its record will show %s/%s",
			e.ID, e.Outcome, e.Err, e.PendingErr, ExecutionFailed, ReasonHostLost)
	}
	return fmt.Sprintf("invocation %s: the outcome %s could not be recorded (%v); its record will show %s/%s",
		e.ID, e.Outcome, e.Err, ExecutionFailed, ReasonHostLost)
}

func (e *RecordError) Unwrap() error { return e.Err }

func outcomeName(out *Outcome) string {
	if out.Reason == "" {
		return out.Outcome
	}
	return out.Outcome + "/" + out.Reason
}

// pendingOutcome is an outcome saved aside: the arguments of the one
// FinishInvocation that could not be committed.
type pendingOutcome struct {
	ID         string         `json:"id"`
	Outcome    string         `json:"outcome"`
	Reason     string         `json:"reason,omitempty"`
	ExitStatus int            `json:"exitStatus"`
	Detail     string         `json:"detail,omitempty"`
	Effects    []store.Effect `json:"effects,omitempty"`
	Attempt    store.Attempt  `json:"attempt"`
	FinishedAt time.Time      `json:"finishedAt"`
}

func (p *pendingOutcome) commit(tx *store.Tx) (bool, error) {
	return tx.Finish(p.ID, p.finish(), p.FinishedAt)
}

func (p *pendingOutcome) finish() *store.Finish {
	return &store.Finish{Outcome: p.Outcome, Reason: p.Reason, ExitStatus: p.ExitStatus,
		Detail: p.Detail, Effects: p.Effects, Attempt: p.Attempt}
}

// storeEffects converts reported effects for the record.
func storeEffects(effects []extproto.Effect) []store.Effect {
	if len(effects) == 0 {
		return nil
	}
	out := make([]store.Effect, len(effects))
	for i, e := range effects {
		out[i] = store.Effect{Kind: e.Kind, Ref: e.Ref}
	}
	return out
}

// finish commits the decided outcome of an admitted invocation. The
// outcome never changes: when the store refuses the write (its lock not
// taken within the bound, a full disk), the outcome is saved aside at
// once (so a host killed while it retries loses nothing) and the same
// write is tried again, with backoff, for Core.FinishRetry. If it still
// fails, the saved outcome is committed by the next admission, before it
// could resolve the open record as host_lost. The first committed outcome
// stands.
//
// The outcome is saved aside into res, the call's own reserve, when it has
// one: a disk another writer keeps full loses none of it.
func (c *Core) finish(id string, out *Outcome, res *callReserve) error {
	p := &pendingOutcome{ID: id, Outcome: out.Outcome, Reason: out.Reason, ExitStatus: out.ExitStatus,
		Detail: detail(out), Effects: storeEffects(out.Effects), Attempt: out.Attempt, FinishedAt: c.Now().UTC()}
	write := func() error {
		if j, ok := c.Store.(store.Journaler); ok {
			// rukhd's store: one fdatasync of the journal, no commit.
			_, err := j.JournalFinish(p.ID, p.finish(), p.FinishedAt)
			if !errors.Is(err, store.ErrNotJournaled) {
				c.health.noteWrite(err, c.Now())
				return err
			}
		}
		return c.update(func(tx *store.Tx) error {
			_, err := p.commit(tx) // false: already committed (from the saved file)
			return err
		})
	}
	// A daemon that started while this call ran holds the store for as
	// long as it runs: save the outcome aside and have it commit it now.
	if c.Elsewhere != nil && c.Elsewhere.Holds() {
		if saved, err := c.savePending(p, res); err == nil {
			if err := c.Elsewhere.Settle(); err == nil {
				if _, err := os.Stat(saved); errors.Is(err, fs.ErrNotExist) {
					return nil // committed, and its file removed, by the daemon
				}
			}
			os.Remove(saved) // write below, or save it again
		}
	}
	err := write()
	if err == nil {
		c.keepReserve() // made again once there is room; an admission says when there is none
		return nil
	}
	saved, saveErr := c.savePending(p, res)
	retry := c.FinishRetry
	if retry <= 0 {
		retry = DefaultFinishRetry
	}
	deadline := time.Now().Add(retry)
	for delay := finishFirstDelay; retryable(err) && time.Until(deadline) > 0; delay = min(2*delay, finishMaxDelay) {
		time.Sleep(min(delay, time.Until(deadline)))
		if err = write(); err == nil {
			if saved != "" {
				os.Remove(saved)
			}
			return nil
		}
	}
	if saved == "" {
		c.health.noteLost(id) // its slot is free: the next admission closes its record
	}
	return &RecordError{ID: id, Outcome: outcomeName(out), Ran: true, Pending: saved, Err: err, PendingErr: saveErr}
}

// retryable reports whether trying the same write again may succeed: a
// damaged store, one from a newer build, a store file removed or replaced
// under its holder or missing where a store was will not change by
// waiting.
func retryable(err error) bool {
	var corrupt *store.CorruptError
	var future *store.FutureError
	var replaced *store.ReplacedError
	var missing *store.MissingError
	return !errors.As(err, &corrupt) && !errors.As(err, &future) && !errors.As(err, &replaced) && !errors.As(err, &missing)
}

// reserveName is a file in PendingDir that holds disk space for outcomes
// to be saved aside when the disk is full: the store's write failed for
// want of space, and the outcome must not be lost with it. A save that
// finds no space frees the reserve and tries again; the reserve is made
// again once there is room.
const (
	reserveName = ".reserve"
	reserveSize = 1 << 20
)

// keepReserve makes sure PendingDir holds its reserve of disk space,
// allocated (not a sparse file). It fails only when the disk has no room
// for it (ENOSPC, EDQUOT): then an outcome could not be kept either. Any
// other failure (a file system without fallocate) leaves no reserve and
// is not an error: the reserve is a margin, not a requirement.
func (c *Core) keepReserve() error {
	dir := filepath.Join(c.DataDir, PendingDir)
	name := filepath.Join(dir, reserveName)
	if fi, err := os.Stat(name); err == nil && fi.Size() >= reserveSize {
		return nil
	}
	if err := makeReserve(dir, name); errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return err
	}
	return nil
}

// makeReserve allocates the reserve, name in dir.
func makeReserve(dir, name string) error {
	if err := testHookReserve(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, reserveSize); err != nil {
		os.Remove(name) // a partial reserve holds nothing anyone counts on
		return &os.PathError{Op: "fallocate", Path: name, Err: err}
	}
	return nil
}

// testHookReserve lets tests fail making the reserve as a full disk would.
var testHookReserve = func() error { return nil }

// testHookSave lets tests fail a save as a full disk would.
var testHookSave = func() error { return nil }

// savePending writes p durably to PendingDir: into res, the call's own
// reserve, when it has one (callReserve.saveInto), else as a new file
// (savePendingOnce); when the disk is full it frees the shared reserve
// (keepReserve) and tries once more.
func (c *Core) savePending(p *pendingOutcome, res *callReserve) (string, error) {
	if res != nil && res.name != "" {
		// No hook: this write needs no space (testHookSave stands for a
		// full disk).
		name := filepath.Join(c.DataDir, PendingDir, p.ID+".json")
		data, err := json.Marshal(p)
		if err == nil {
			err = res.saveInto(name, append(data, '\n'))
		}
		if err == nil {
			return name, nil
		}
	}
	name, err := c.savePendingOnce(p)
	if err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		if os.Remove(filepath.Join(c.DataDir, PendingDir, reserveName)) == nil {
			name, err = c.savePendingOnce(p)
		}
	}
	return name, err
}

// savePendingOnce writes p durably to PendingDir (a new file, renamed into
// place, then the directory synced) and returns its path.
func (c *Core) savePendingOnce(p *pendingOutcome) (string, error) {
	if err := testHookSave(); err != nil {
		return "", err
	}
	dir := filepath.Join(c.DataDir, PendingDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, p.ID+".json")
	if err := atomicfile.Replace(name, append(data, '\n'), 0o600); err != nil {
		return "", err
	}
	return name, nil
}

// settlePending commits, in tx, every outcome saved in PendingDir whose
// record is still open, and returns the files to remove once tx has
// committed (those whose record is finished now or was already). A file
// that does not decode is left alone.
func (c *Core) settlePending(tx *store.Tx) []string {
	dir := filepath.Join(c.DataDir, PendingDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var done []string
	for _, e := range ents {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var p pendingOutcome
		if json.Unmarshal(data, &p) != nil || p.ID != id || p.Outcome == "" {
			continue
		}
		if _, err := p.commit(tx); err != nil {
			continue
		}
		done = append(done, filepath.Join(dir, name))
	}
	return done
}

// SettleNow commits every outcome saved aside (PendingDir) whose record is
// still open: what a host that could not reach the store (rukhd held it)
// left for the store's holder.
func (c *Core) SettleNow() error {
	return c.updateSettled(func(*store.Tx) error { return nil })
}

// updateSettled runs fn in one write transaction after committing the
// outcomes saved aside (settlePending), so that they are recorded before
// fn could resolve their open records as host_lost; their files are
// removed once the transaction has committed.
func (c *Core) updateSettled(fn func(tx *store.Tx) error) error {
	var settled []string
	err := c.update(func(tx *store.Tx) error {
		settled = c.settlePending(tx)
		return fn(tx)
	})
	if err == nil {
		for _, name := range settled {
			os.Remove(name)
		}
	}
	return err
}
