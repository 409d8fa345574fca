package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// MaxEffects is the most effect references a record keeps (the rukh.ipc/1
// limit on a completion report).
const MaxEffects = 64

// MaxFinishedInvocations is how many finalized invocation records are
// kept; older ones are pruned when a new invocation begins.
const MaxFinishedInvocations = 1000

// Invocation is the record of one invocation: opened when it is admitted,
// finalized exactly once with its outcome.
type Invocation struct {
	ID         string // 32 lowercase hex characters
	Identity   string
	Digest     string
	Revision   uint64
	Transport  string // "cli" | "mcp"
	Task       string
	PID        int    // the host process that owns it
	PIDStart   uint64 // that process's start time (clock ticks since boot), to detect pid reuse
	StartedAt  time.Time
	FinishedAt time.Time // zero while open
	Outcome    string    // "" while open
	Reason     string
	ExitStatus int
	Detail     string
	// Enforcement is the profile the task applied (host, restricted,
	// strict), set at admission.
	Enforcement string
	// Effects are the effect references a completed command reported.
	Effects []Effect
	// Attempt is what a refusal refused, when it names something.
	Attempt Attempt
	// Subject and Issuer are the verified caller of an HTTP call (as its
	// token's sub and iss say); empty for a local caller, who is the
	// user the host runs as.
	Subject string
	Issuer  string
}

// Effect is one effect reference a command reported: {kind, ref}.
type Effect struct {
	Kind string `cbor:"1,keyasint" json:"kind"`
	Ref  string `cbor:"2,keyasint" json:"ref"`
}

// Attempt is what a refused invocation tried, kept so that every refusal
// leaves a trace: the action and resource a denial did not allow, and the
// approval an approval refusal asked for.
type Attempt struct {
	Action     string `cbor:"1,keyasint,omitempty" json:"action,omitempty"`
	Resource   string `cbor:"2,keyasint,omitempty" json:"resource,omitempty"`
	ApprovalID string `cbor:"3,keyasint,omitempty" json:"approvalId,omitempty"`
}

// Finish is the outcome committed to an open invocation.
type Finish struct {
	Outcome    string
	Reason     string
	ExitStatus int
	Detail     string
	Effects    []Effect
	Attempt    Attempt
}

// Open reports whether the invocation has no outcome yet.
func (inv *Invocation) Open() bool { return inv.Outcome == "" }

type invocationRec struct {
	ID         string   `cbor:"1,keyasint"`
	Identity   string   `cbor:"2,keyasint"`
	Digest     string   `cbor:"3,keyasint"`
	Revision   uint64   `cbor:"4,keyasint"`
	Transport  string   `cbor:"5,keyasint"`
	Task       string   `cbor:"6,keyasint"`
	PID        int      `cbor:"7,keyasint"`
	PIDStart   uint64   `cbor:"8,keyasint"`
	StartedAt  int64    `cbor:"9,keyasint"`
	FinishedAt int64    `cbor:"10,keyasint,omitempty"`
	Outcome    string   `cbor:"11,keyasint,omitempty"`
	Reason     string   `cbor:"12,keyasint,omitempty"`
	ExitStatus int      `cbor:"13,keyasint,omitempty"`
	Detail     string   `cbor:"14,keyasint,omitempty"`
	Enforce    string   `cbor:"15,keyasint,omitempty"`
	Effects    []Effect `cbor:"16,keyasint,omitempty"`
	Attempt    *Attempt `cbor:"17,keyasint,omitempty"`
	Subject    string   `cbor:"18,keyasint,omitempty"`
	Issuer     string   `cbor:"19,keyasint,omitempty"`
}

// Nested buckets of "invocations": records by sequence number, and an
// index of the open ones (id → sequence number) so admission never scans
// finished records.
var (
	bucketInvRecords = []byte("records")
	bucketInvOpen    = []byte("open")
)

// BusyError says a task's concurrency limit is reached.
type BusyError struct {
	Task string
	Max  int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("task %q already runs %d invocations, its limit; try again when one finishes", e.Task, e.Max)
}

func (tx *Tx) invBuckets() (records, open *bolt.Bucket, err error) {
	b, err := tx.bucket(bucketInvocations)
	if err != nil {
		return nil, nil, err
	}
	if tx.tx.Writable() {
		if records, err = b.CreateBucketIfNotExists(bucketInvRecords); err != nil {
			return nil, nil, err
		}
		if open, err = b.CreateBucketIfNotExists(bucketInvOpen); err != nil {
			return nil, nil, err
		}
		return records, open, nil
	}
	return b.Bucket(bucketInvRecords), b.Bucket(bucketInvOpen), nil
}

func validInvocationID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// BeginInvocation admits inv against its task's limit of max open
// invocations and records it, in the caller's transaction. Open records
// whose host is gone (alive reports false) are first finalized as
// execution_failed / host_lost: they free their slot and are never re-run.
func (tx *Tx) BeginInvocation(inv *Invocation, max int, alive func(*Invocation) bool, now time.Time) error {
	if !validInvocationID(inv.ID) {
		return fmt.Errorf("invocation id %q is not 32 hex characters", inv.ID)
	}
	records, open, err := tx.invBuckets()
	if err != nil {
		return err
	}
	if _, err := tx.ResolveLost(alive, now); err != nil {
		return err
	}
	running := 0
	if err := open.ForEach(func(k, v []byte) error {
		rec, err := tx.invocationAt(records, v)
		if err != nil {
			return err
		}
		if rec.Task == inv.Task {
			running++
		}
		return nil
	}); err != nil {
		return err
	}
	if running >= max {
		return &BusyError{Task: inv.Task, Max: max}
	}
	if open.Get([]byte(inv.ID)) != nil {
		return fmt.Errorf("invocation %s already exists", inv.ID)
	}
	inv.Outcome, inv.FinishedAt = "", time.Time{}
	if err := tx.putInvocation(records, open, inv); err != nil {
		return err
	}
	return tx.pruneInvocations(records, open)
}

// putInvocation records inv, admitted, as open; an invocation already
// open is left as it is (a journal entry applied again).
func (tx *Tx) putInvocation(records, open *bolt.Bucket, inv *Invocation) error {
	if open.Get([]byte(inv.ID)) != nil {
		return nil
	}
	seq, err := records.NextSequence()
	if err != nil {
		return err
	}
	data, err := encode(toInvRec(inv))
	if err != nil {
		return err
	}
	if err := records.Put(u64key(seq), data); err != nil {
		return err
	}
	return open.Put([]byte(inv.ID), u64key(seq))
}

// ResolveLost finalizes every open record whose host is gone (alive
// reports false, having made sure nothing of the invocation still runs)
// as execution_failed / host_lost, and returns their ids: they free their
// slot and are never re-run.
func (tx *Tx) ResolveLost(alive func(*Invocation) bool, now time.Time) ([]string, error) {
	records, open, err := tx.invBuckets()
	if err != nil {
		return nil, err
	}
	var lost []string
	if err := open.ForEach(func(k, v []byte) error {
		rec, err := tx.invocationAt(records, v)
		if err != nil {
			return err
		}
		if !alive(rec) {
			lost = append(lost, string(k))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, id := range lost {
		if _, err := tx.FinishInvocation(id, "execution_failed", "host_lost", 0, "the process that ran it is gone", now); err != nil {
			return nil, err
		}
	}
	return lost, nil
}

// FinishInvocation commits an outcome that carries nothing else; see
// Finish.
func (tx *Tx) FinishInvocation(id, outcome, reason string, exitStatus int, detail string, at time.Time) (bool, error) {
	return tx.Finish(id, &Finish{Outcome: outcome, Reason: reason, ExitStatus: exitStatus, Detail: detail}, at)
}

// Finish commits the outcome of an open invocation. It returns false,
// changing nothing, when the invocation already has an outcome: the first
// committed outcome stands.
func (tx *Tx) Finish(id string, f *Finish, at time.Time) (bool, error) {
	if f.Outcome == "" {
		return false, errors.New("an outcome is required")
	}
	if len(f.Effects) > MaxEffects {
		return false, fmt.Errorf("%d effects; a record keeps at most %d", len(f.Effects), MaxEffects)
	}
	records, open, err := tx.invBuckets()
	if err != nil {
		return false, err
	}
	key := open.Get([]byte(id))
	if key == nil {
		return false, nil
	}
	key = append([]byte(nil), key...)
	rec, err := tx.invocationAt(records, key)
	if err != nil {
		return false, err
	}
	rec.finish(f, at)
	data, err := encode(toInvRec(rec))
	if err != nil {
		return false, err
	}
	if err := records.Put(key, data); err != nil {
		return false, err
	}
	return true, open.Delete([]byte(id))
}

// finish sets the outcome f of an open invocation, as committed at at.
func (inv *Invocation) finish(f *Finish, at time.Time) {
	inv.Outcome, inv.Reason, inv.ExitStatus, inv.FinishedAt = f.Outcome, f.Reason, f.ExitStatus, at
	inv.Detail = clip(f.Detail, 4096)
	inv.Effects = f.Effects
	inv.Attempt = Attempt{Action: clip(f.Attempt.Action, 256), Resource: clip(f.Attempt.Resource, 1024), ApprovalID: f.Attempt.ApprovalID}
}

// clip cuts s to at most n bytes, on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// pruneInvocations drops the oldest finished records beyond the
// retention limit; open records are never pruned.
//
// bbolt's Bucket.Stats counts the pages committed before this
// transaction, not what it has changed since, so the count is of then,
// less what this transaction pruned already: without that, every begin
// record of a transaction that holds several (a fold of the journal, a
// Batch) pruned the same excess again. What the count misses (begins
// and outcomes of this transaction) only delays pruning to a later
// transaction; it never prunes a record to be kept.
func (tx *Tx) pruneInvocations(records, open *bolt.Bucket) error {
	finished := records.Stats().KeyN - open.Stats().KeyN - tx.pruned
	c := records.Cursor()
	for k, v := c.First(); k != nil && finished > MaxFinishedInvocations; k, v = c.Next() {
		rec, err := decodeInvocation(k, v)
		if err != nil {
			return err
		}
		if rec.Open() {
			continue
		}
		if err := c.Delete(); err != nil {
			return err
		}
		finished--
		tx.pruned++
	}
	return nil
}

func (tx *Tx) invocationAt(records *bolt.Bucket, key []byte) (*Invocation, error) {
	if records == nil {
		return nil, &CorruptError{Bucket: string(bucketInvocations), Key: printKey(key), Err: errors.New("no records bucket")}
	}
	return decodeInvocation(key, records.Get(key))
}

func decodeInvocation(key, data []byte) (*Invocation, error) {
	if data == nil {
		return nil, &CorruptError{Bucket: string(bucketInvocations), Key: printKey(key), Err: errors.New("missing record")}
	}
	rec, err := decode[invocationRec](data)
	if err != nil {
		return nil, &CorruptError{Bucket: string(bucketInvocations), Key: printKey(key), Err: err}
	}
	return fromInvRec(rec), nil
}

func fromInvRec(rec *invocationRec) *Invocation {
	inv := &Invocation{
		ID: rec.ID, Identity: rec.Identity, Digest: rec.Digest, Revision: rec.Revision,
		Transport: rec.Transport, Task: rec.Task, PID: rec.PID, PIDStart: rec.PIDStart,
		StartedAt: fromNanos(rec.StartedAt), FinishedAt: fromNanos(rec.FinishedAt),
		Outcome: rec.Outcome, Reason: rec.Reason, ExitStatus: rec.ExitStatus, Detail: rec.Detail,
		Enforcement: rec.Enforce, Effects: rec.Effects, Subject: rec.Subject, Issuer: rec.Issuer,
	}
	if rec.Attempt != nil {
		inv.Attempt = *rec.Attempt
	}
	return inv
}

// attemptRec is an Attempt's CBOR form: nil when it names nothing.
func attemptRec(a Attempt) *Attempt {
	if a == (Attempt{}) {
		return nil
	}
	return &a
}

func toInvRec(inv *Invocation) *invocationRec {
	return &invocationRec{
		ID: inv.ID, Identity: inv.Identity, Digest: inv.Digest, Revision: inv.Revision,
		Transport: inv.Transport, Task: inv.Task, PID: inv.PID, PIDStart: inv.PIDStart,
		StartedAt: nanos(inv.StartedAt), FinishedAt: nanos(inv.FinishedAt),
		Outcome: inv.Outcome, Reason: inv.Reason, ExitStatus: inv.ExitStatus, Detail: inv.Detail,
		Enforce: inv.Enforcement, Effects: inv.Effects, Subject: inv.Subject, Issuer: inv.Issuer,
		Attempt: attemptRec(inv.Attempt),
	}
}

// Invocations returns at most limit records (all for limit <= 0), newest
// first.
func (tx *Tx) Invocations(limit int) ([]*Invocation, error) {
	begun, finished := tx.overlay()
	var out []*Invocation
	for i := len(begun) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, begun[i])
	}
	records, _, err := tx.invBuckets()
	if err != nil || records == nil {
		return out, err
	}
	c := records.Cursor()
	for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
		inv, err := decodeInvocation(k, v)
		if err != nil {
			return nil, err
		}
		finished.apply(inv)
		out = append(out, inv)
	}
	return out, nil
}

// outcomes are the journal's outcomes not yet folded, by invocation id.
type outcomes map[string]*journalEntry

// apply gives inv its outcome from the journal, if it is open and has
// one there.
func (o outcomes) apply(inv *Invocation) {
	if e := o[inv.ID]; e != nil && inv.Open() {
		inv.finish(e.finish, fromNanos(e.at))
	}
}

// overlay returns what the journal's entries not yet folded add to the
// records this transaction reads: the invocations they begin, oldest
// first and with the outcomes they hold, and the outcomes of records
// already in the store. A write transaction has folded them all.
func (tx *Tx) overlay() (begun []*Invocation, finished outcomes) {
	finished = tx.pendingOutcomes()
	for _, e := range tx.pend {
		if e.begin != nil {
			inv := *e.begin
			finished.apply(&inv)
			begun = append(begun, &inv)
		}
	}
	return begun, finished
}

// pendingOutcomes returns the outcomes among the journal's entries not
// yet folded, by invocation id (nil when there are none).
func (tx *Tx) pendingOutcomes() outcomes {
	var finished outcomes
	for i := range tx.pend {
		if e := &tx.pend[i]; e.finish != nil {
			if finished == nil {
				finished = outcomes{}
			}
			if _, seen := finished[e.id]; !seen {
				finished[e.id] = e // the first outcome stands
			}
		}
	}
	return finished
}

// pendingOpen calls fn with each invocation the journal's entries not
// yet folded begin and do not finish, without copying it, until fn
// fails. finished is tx.pendingOutcomes().
func (tx *Tx) pendingOpen(finished outcomes, fn func(*Invocation) error) error {
	for _, e := range tx.pend {
		if e.begin != nil && finished[e.begin.ID] == nil {
			if err := fn(e.begin); err != nil {
				return err
			}
		}
	}
	return nil
}

// openInvocation returns invocation id if it is open, in the store and
// the journal's entries not yet folded, or nil.
func (tx *Tx) openInvocation(id string) (*Invocation, error) {
	finished := tx.pendingOutcomes()
	if finished[id] != nil {
		return nil, nil
	}
	for _, e := range tx.pend {
		if e.begin != nil && e.begin.ID == id {
			inv := *e.begin
			return &inv, nil
		}
	}
	records, open, err := tx.invBuckets()
	if err != nil || open == nil {
		return nil, err
	}
	key := open.Get([]byte(id))
	if key == nil {
		return nil, nil
	}
	return tx.invocationAt(records, key)
}

// FindInvocation returns the invocation whose id starts with prefix (at
// least 8 characters), or nil. An ambiguous prefix is an error.
func (tx *Tx) FindInvocation(prefix string) (*Invocation, error) {
	if len(prefix) < 8 {
		return nil, fmt.Errorf("give at least 8 characters of the invocation id")
	}
	all, err := tx.Invocations(0)
	if err != nil {
		return nil, err
	}
	var found []*Invocation
	for _, inv := range all {
		if len(inv.ID) >= len(prefix) && inv.ID[:len(prefix)] == prefix {
			found = append(found, inv)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d invocations start with %s; give more of the id", len(found), prefix)
}

// InvocationByID returns the record of invocation id (32 lowercase hex
// characters), or nil when there is none: an open one through the index
// of open records, a finished one by a scan from the newest. It only
// reads.
func (tx *Tx) InvocationByID(id string) (*Invocation, error) {
	if !validInvocationID(id) {
		return nil, nil
	}
	begun, finished := tx.overlay()
	for _, inv := range begun {
		if inv.ID == id {
			return inv, nil
		}
	}
	records, open, err := tx.invBuckets()
	if err != nil || records == nil {
		return nil, err
	}
	if open != nil {
		if key := open.Get([]byte(id)); key != nil {
			inv, err := tx.invocationAt(records, key)
			if err == nil {
				finished.apply(inv)
			}
			return inv, err
		}
	}
	c := records.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		inv, err := decodeInvocation(k, v)
		if err != nil {
			return nil, err
		}
		if inv.ID == id {
			return inv, nil
		}
	}
	return nil, nil
}
