package store

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/cliname"
)

// Approvals live in a bucket nested in "invocations" (created on first
// use, so no schema change): approval id → approval record.
var bucketApprovals = []byte("approvals")

// Limits on approvals.
const (
	// MaxApprovals is the most approval records kept. Expired ones and
	// ones used more than ApprovalKeep ago are dropped first; past it, a
	// new request is refused (ApprovalLimitError).
	MaxApprovals = 512
	// ApprovalKeep is how long a used or expired approval stays
	// readable (`rukh approve --list --all`, `invocations show`).
	ApprovalKeep = 24 * time.Hour
	// MaxApprovalInputs is the most bytes of inputs an approval keeps
	// for the owner to read.
	MaxApprovalInputs = 128 << 10
)

// Approval is one call an owner may approve: a command of a release, with
// exact inputs, under a task. It is requested by the refusal of a call
// whose effects the task keeps for the owner, approved at most once by the
// owner (`rukh approve`), and used by at most one later call that matches
// it exactly before it expires.
type Approval struct {
	ID           string // 32 lowercase hex characters
	Identity     string // the command
	Digest       string // its release
	Task         string
	InputsDigest string // hex SHA-256 of the inputs as the invoke frame carries them; of the exact argv for a passthrough command
	Inputs       string // those inputs (JSON), for the owner to read
	EffectClass  string
	Transport    string    // of the call that asked
	RequestedBy  string    // the refused invocation that asked
	CreatedAt    time.Time //
	ExpiresAt    time.Time // after this it can be neither approved nor used
	ApprovedAt   time.Time // zero while pending
	UsedAt       time.Time // zero until a call used it
	UsedBy       string    // that call's invocation
}

// Approval states, as Status reports them.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalUsed     = "used"
	ApprovalExpired  = "expired"
)

// Status is the approval's state at now.
func (a *Approval) Status(now time.Time) string {
	switch {
	case !a.UsedAt.IsZero():
		return ApprovalUsed
	case !now.Before(a.ExpiresAt):
		return ApprovalExpired
	case !a.ApprovedAt.IsZero():
		return ApprovalApproved
	}
	return ApprovalPending
}

// matches reports whether b is for the same call as a: command, release,
// task and inputs.
func (a *Approval) matches(b *Approval) bool {
	return a.Identity == b.Identity && a.Digest == b.Digest && a.Task == b.Task && a.InputsDigest == b.InputsDigest
}

type approvalRec struct {
	ID           string `cbor:"1,keyasint"`
	Identity     string `cbor:"2,keyasint"`
	Digest       string `cbor:"3,keyasint"`
	Task         string `cbor:"4,keyasint"`
	InputsDigest string `cbor:"5,keyasint"`
	Inputs       string `cbor:"6,keyasint"`
	EffectClass  string `cbor:"7,keyasint"`
	Transport    string `cbor:"8,keyasint"`
	RequestedBy  string `cbor:"9,keyasint"`
	CreatedAt    int64  `cbor:"10,keyasint"`
	ExpiresAt    int64  `cbor:"11,keyasint"`
	ApprovedAt   int64  `cbor:"12,keyasint,omitempty"`
	UsedAt       int64  `cbor:"13,keyasint,omitempty"`
	UsedBy       string `cbor:"14,keyasint,omitempty"`
}

// ApprovalError says why an approval cannot be approved.
type ApprovalError struct {
	ID     string
	Status string // ApprovalApproved, ApprovalUsed, ApprovalExpired, or "" when there is none
}

func (e *ApprovalError) Error() string {
	switch e.Status {
	case "":
		return fmt.Sprintf("there is no approval %s; "+cliname.Cmd("approve --list")+" shows the ones waiting", e.ID)
	case ApprovalApproved:
		return fmt.Sprintf("approval %s is already approved; the call it names runs once when it is made again", e.ID)
	case ApprovalUsed:
		return fmt.Sprintf("approval %s was used by a call already; each approval runs one call", e.ID)
	}
	return fmt.Sprintf("approval %s has expired; the call asks for a new one when it is made again", e.ID)
}

// ApprovalLimitError says the store keeps as many approvals as it may.
type ApprovalLimitError struct{ Max int }

func (e *ApprovalLimitError) Error() string {
	return fmt.Sprintf("%d approvals are waiting or recent, the most kept; approve or let them expire before asking for more", e.Max)
}

func (tx *Tx) approvalBucket() (*bolt.Bucket, error) {
	b, err := tx.bucket(bucketInvocations)
	if err != nil {
		return nil, err
	}
	if tx.tx.Writable() {
		return b.CreateBucketIfNotExists(bucketApprovals)
	}
	return b.Bucket(bucketApprovals), nil
}

// RequestApproval returns the approval a refused call needs: a pending one
// for the same call if there is one (so an agent that retries before the
// owner answers gets the same id), otherwise a, recorded. It first drops
// approvals no longer worth keeping.
func (tx *Tx) RequestApproval(a *Approval, now time.Time) (*Approval, error) {
	if !validInvocationID(a.ID) {
		return nil, fmt.Errorf("approval id %q is not 32 hex characters", a.ID)
	}
	if len(a.Inputs) > MaxApprovalInputs {
		return nil, fmt.Errorf("the inputs take %d bytes; an approval keeps at most %d", len(a.Inputs), MaxApprovalInputs)
	}
	b, all, err := tx.loadApprovals()
	if err != nil {
		return nil, err
	}
	kept := 0
	for _, old := range all {
		st := old.Status(now)
		switch {
		case st == ApprovalPending && old.matches(a):
			return old, nil
		case (st == ApprovalExpired && now.Sub(old.ExpiresAt) > ApprovalKeep) || (st == ApprovalUsed && now.Sub(old.UsedAt) > ApprovalKeep):
			if err := b.Delete([]byte(old.ID)); err != nil {
				return nil, err
			}
		default:
			kept++
		}
	}
	if kept >= MaxApprovals {
		return nil, &ApprovalLimitError{Max: MaxApprovals}
	}
	if err := putApproval(b, a); err != nil {
		return nil, err
	}
	return a, nil
}

// UseApproval finds an approved, unused, unexpired approval for the same
// call as want and marks it used by the invocation invID, in the caller's
// transaction (the one that admits the invocation, so a call refused as
// busy leaves the approval unused). It returns nil when there is none.
func (tx *Tx) UseApproval(want *Approval, invID string, now time.Time) (*Approval, error) {
	b, all, err := tx.loadApprovals()
	if err != nil {
		return nil, err
	}
	for _, a := range all {
		if a.Status(now) == ApprovalApproved && a.matches(want) {
			a.UsedAt, a.UsedBy = now, invID
			return a, putApproval(b, a)
		}
	}
	return nil, nil
}

// Approve marks a pending approval approved. Only a pending, unexpired
// approval can be: anything else is an *ApprovalError.
func (tx *Tx) Approve(id string, now time.Time) (*Approval, error) {
	b, err := tx.approvalBucket()
	if err != nil {
		return nil, err
	}
	a, err := getApproval(b, id)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, &ApprovalError{ID: id}
	}
	if st := a.Status(now); st != ApprovalPending {
		return nil, &ApprovalError{ID: id, Status: st}
	}
	a.ApprovedAt = now
	return a, putApproval(b, a)
}

// Approval returns the approval with this id, or nil.
func (tx *Tx) Approval(id string) (*Approval, error) {
	b, err := tx.approvalBucket()
	if err != nil || b == nil {
		return nil, err
	}
	return getApproval(b, id)
}

// Approvals returns every approval kept, oldest first.
func (tx *Tx) Approvals() ([]*Approval, error) {
	_, all, err := tx.loadApprovals()
	return all, err
}

// loadApprovals returns the approvals' bucket (nil in a read-only
// transaction of a store that has none yet) and every approval in it.
func (tx *Tx) loadApprovals() (*bolt.Bucket, []*Approval, error) {
	b, err := tx.approvalBucket()
	if err != nil || b == nil {
		return b, nil, err
	}
	all, err := approvalsIn(b)
	return b, all, err
}

func approvalsIn(b *bolt.Bucket) ([]*Approval, error) {
	var out []*Approval
	err := b.ForEach(func(k, v []byte) error {
		a, err := decodeApproval(k, v)
		if err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, err
}

func getApproval(b *bolt.Bucket, id string) (*Approval, error) {
	if !validInvocationID(id) {
		return nil, nil
	}
	v := b.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	return decodeApproval([]byte(id), v)
}

func decodeApproval(key, data []byte) (*Approval, error) {
	corrupt := func(err error) error {
		return &CorruptError{Bucket: string(bucketInvocations) + "/" + string(bucketApprovals), Key: printKey(key), Err: err}
	}
	if data == nil {
		return nil, corrupt(errors.New("a nested bucket where an approval belongs"))
	}
	r, err := decode[approvalRec](data)
	if err != nil {
		return nil, corrupt(err)
	}
	if !bytes.Equal(key, []byte(r.ID)) {
		return nil, corrupt(fmt.Errorf("the record is approval %q", r.ID))
	}
	return &Approval{
		ID: r.ID, Identity: r.Identity, Digest: r.Digest, Task: r.Task, InputsDigest: r.InputsDigest,
		Inputs: r.Inputs, EffectClass: r.EffectClass, Transport: r.Transport, RequestedBy: r.RequestedBy,
		CreatedAt: fromNanos(r.CreatedAt), ExpiresAt: fromNanos(r.ExpiresAt),
		ApprovedAt: fromNanos(r.ApprovedAt), UsedAt: fromNanos(r.UsedAt), UsedBy: r.UsedBy,
	}, nil
}

func putApproval(b *bolt.Bucket, a *Approval) error {
	data, err := encode(&approvalRec{
		ID: a.ID, Identity: a.Identity, Digest: a.Digest, Task: a.Task, InputsDigest: a.InputsDigest,
		Inputs: a.Inputs, EffectClass: a.EffectClass, Transport: a.Transport, RequestedBy: a.RequestedBy,
		CreatedAt: nanos(a.CreatedAt), ExpiresAt: nanos(a.ExpiresAt),
		ApprovedAt: nanos(a.ApprovedAt), UsedAt: nanos(a.UsedAt), UsedBy: a.UsedBy,
	})
	if err != nil {
		return err
	}
	return b.Put([]byte(a.ID), data)
}
