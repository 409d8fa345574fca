package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// PublicKeySize is the length of a trusted ed25519 public key.
const PublicKeySize = 32

// Key is a publisher key that the owner trusts.
type Key struct {
	Publisher string
	ID        string // "sha256:<hex>"
	Public    []byte // ed25519 public key, PublicKeySize bytes
	AddedAt   time.Time
	AddedBy   int // uid
}

func (k *Key) check() error {
	var errs problems
	errs.add(
		checkText("publisher", k.Publisher, true, maxName),
		checkDigest("key id", k.ID))
	if len(k.Public) != PublicKeySize {
		errs.add(fmt.Errorf("public key has %d bytes, want %d", len(k.Public), PublicKeySize))
	}
	if k.AddedBy < 0 {
		errs.add(fmt.Errorf("added-by uid %d is negative", k.AddedBy))
	}
	return errs.err()
}

// trustKey is the bucket key of a publisher's key: publisher, NUL, id.
// Publishers contain no control characters, so the key order is publisher
// order, then id order.
func trustKey(publisher, id string) []byte {
	return []byte(publisher + "\x00" + id)
}

// PutKey adds or replaces a trusted key.
func (tx *Tx) PutKey(k *Key) error {
	if err := k.check(); err != nil {
		return fmt.Errorf("put key: %w", err)
	}
	b, err := tx.bucket(bucketTrust)
	if err != nil {
		return err
	}
	data, err := encode(&keyRec{Public: k.Public, AddedAt: nanos(k.AddedAt), AddedBy: k.AddedBy})
	if err != nil {
		return err
	}
	return b.Put(trustKey(k.Publisher, k.ID), data)
}

// Keys returns the trusted keys of publisher sorted by id, or, for "",
// every trusted key sorted by publisher, then id.
func (tx *Tx) Keys(publisher string) ([]*Key, error) {
	b, err := tx.bucket(bucketTrust)
	if err != nil {
		return nil, err
	}
	var prefix []byte
	if publisher != "" {
		prefix = trustKey(publisher, "")
	}
	var out []*Key
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		key, err := decodeKey(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, key)
	}
	return out, nil
}

// DeleteKey removes one trusted key and reports whether it was there.
func (tx *Tx) DeleteKey(publisher, id string) (bool, error) {
	b, err := tx.bucket(bucketTrust)
	if err != nil {
		return false, err
	}
	k := trustKey(publisher, id)
	if b.Get(k) == nil {
		return false, nil
	}
	return true, b.Delete(k)
}

// DeleteKeys removes every trusted key of publisher and returns how many
// there were.
func (tx *Tx) DeleteKeys(publisher string) (int, error) {
	if publisher == "" {
		return 0, errors.New("delete keys: no publisher given")
	}
	b, err := tx.bucket(bucketTrust)
	if err != nil {
		return 0, err
	}
	prefix := trustKey(publisher, "")
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func decodeKey(key, data []byte) (*Key, error) {
	k, err := decodeKeyRec(key, data)
	if err != nil {
		return nil, &CorruptError{Bucket: string(bucketTrust), Key: fmt.Sprintf("%q", key), Err: err}
	}
	return k, nil
}

func decodeKeyRec(key, data []byte) (*Key, error) {
	if data == nil {
		return nil, errors.New("a bucket where a record was expected")
	}
	publisher, id, ok := strings.Cut(string(key), "\x00")
	if !ok {
		return nil, errors.New("key has no publisher/id separator")
	}
	if err := checkMap(data); err != nil {
		return nil, err
	}
	rec, err := decode[keyRec](data)
	if err != nil {
		return nil, err
	}
	k := &Key{Publisher: publisher, ID: id, Public: rec.Public, AddedAt: fromNanos(rec.AddedAt), AddedBy: rec.AddedBy}
	if err := k.check(); err != nil {
		return nil, err
	}
	return k, nil
}
