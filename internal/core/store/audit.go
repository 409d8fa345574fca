package store

import (
	"errors"
	"fmt"
	"time"
)

// AuditEntry is one line of the audit log. Sequence numbers are 1, 2, 3 …
// without gaps.
type AuditEntry struct {
	Seq    uint64 // assigned by AppendAudit
	Time   time.Time
	UID    int
	Op     string
	Old    uint64 // revision before the change, if it changed one
	New    uint64 // revision after the change
	Detail string
}

func (e *AuditEntry) check() error {
	var errs problems
	errs.add(
		checkText("audit op", e.Op, true, maxName),
		checkText("audit detail", e.Detail, false, 64<<10))
	if e.UID < 0 {
		errs.add(fmt.Errorf("audit uid %d is negative", e.UID))
	}
	return errs.err()
}

// AppendAudit appends e, assigning e.Seq (and e.Time when it is zero),
// and returns the sequence number.
func (tx *Tx) AppendAudit(e *AuditEntry) (uint64, error) {
	if err := e.check(); err != nil {
		return 0, fmt.Errorf("append audit entry: %w", err)
	}
	b, err := tx.bucket(bucketAudit)
	if err != nil {
		return 0, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	data, err := encode(&auditRec{Time: nanos(t), UID: e.UID, Op: e.Op, Old: e.Old, New: e.New, Detail: e.Detail})
	if err != nil {
		return 0, err
	}
	if err := b.Put(u64key(seq), data); err != nil {
		return 0, err
	}
	e.Seq, e.Time = seq, t
	return seq, nil
}

// Audit returns at most limit entries (all for limit <= 0), newest first.
func (tx *Tx) Audit(limit int) ([]*AuditEntry, error) {
	b, err := tx.bucket(bucketAudit)
	if err != nil {
		return nil, err
	}
	var out []*AuditEntry
	c := b.Cursor()
	for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
		e, err := decodeAudit(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func decodeAudit(key, data []byte) (*AuditEntry, error) {
	e, err := decodeAuditRec(key, data)
	if err != nil {
		return nil, &CorruptError{Bucket: string(bucketAudit), Key: printKey(key), Err: err}
	}
	return e, nil
}

func decodeAuditRec(key, data []byte) (*AuditEntry, error) {
	if data == nil {
		return nil, errors.New("a bucket where a record was expected")
	}
	seq, ok := keyU64(key)
	if !ok || seq == 0 {
		return nil, errors.New("key is not a sequence number")
	}
	if err := checkMap(data); err != nil {
		return nil, err
	}
	rec, err := decode[auditRec](data)
	if err != nil {
		return nil, err
	}
	e := &AuditEntry{Seq: seq, Time: fromNanos(rec.Time), UID: rec.UID, Op: rec.Op, Old: rec.Old, New: rec.New, Detail: rec.Detail}
	if err := e.check(); err != nil {
		return nil, err
	}
	return e, nil
}
