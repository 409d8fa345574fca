// Package store keeps Rukh's durable state in one bbolt file: releases,
// trusted keys, profile revisions and the active pointer, the audit log
// and invocation records.
//
// The store knows nothing about descriptors or profiles. It keeps plain
// records whose opaque parts are bytes supplied by the caller, encoded as
// CBOR with Core Deterministic Encoding and decoded strictly: a record
// that does not decode is a *CorruptError, never a panic. So is a damaged
// file, whatever bbolt makes of it (damage.go, verify.go).
//
// Every wait is bounded: Open gives up on a held lock after
// Options.Timeout with a *LockedError. Waiters queue on a blocking lock of
// a file beside the store (LockSuffix), never on bbolt's polling. Callers
// without a daemon open the store, run one short transaction and close it
// again, so that nothing holds the lock across a user-visible wait.
package store

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rukh-cli/rukh/internal/cliname"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this build reads and writes. A
// store with a newer version is refused (*FutureError); an older one is
// migrated by Open.
const SchemaVersion = 3

// maxSchemaVersion bounds the schema versions a future build may write:
// a larger one is a damaged meta record, not a newer store.
const maxSchemaVersion = 1 << 16

// DefaultTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = time.Second

// lockRetry is bbolt's interval between tries for the file lock. Open
// reaches bbolt's lock only once it holds the lock file, so bbolt waits
// (polling) only on a process that does not take the lock file.
const lockRetry = 50 * time.Millisecond

// secretSize is the length of the per-store secret.
const secretSize = 32

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for the file lock. Zero (or a negative
	// value) means DefaultTimeout; the wait is never infinite.
	Timeout time.Duration
	// ReadOnly opens the store with a shared lock and refuses writes. A
	// read-only Open never creates the file or its directory and never
	// migrates.
	ReadOnly bool
	// Journal has a read-write Open keep a journal (journal.go) for
	// JournalBegin and JournalFinish: what a host that holds the store
	// for its whole life (rukhd) asks. A journal that cannot be made
	// leaves the store without one.
	Journal bool
	// Recreate lets a read-write Open create a new, empty store where the
	// file is missing though its directory holds what an earlier store
	// recorded (*MissingError otherwise): only when the owner asks.
	Recreate bool
}

// Store is an open store file. It is safe for concurrent use by several
// goroutines; bbolt serializes writers.
type Store struct {
	db     *bolt.DB
	lock   *os.File // holds the lock file (LockSuffix) until Close
	path   string
	secret []byte
	wedged atomic.Pointer[CorruptError] // set when bbolt could not end a transaction
	group  group                        // Batch calls committed together
	// replaced is set once the path no longer names the open file
	// (identity.go): no write is acknowledged from then on.
	replaced atomic.Pointer[ReplacedError]
	holder   string   // who holds it open, for ReplacedError; "" for a command
	id       fileID   // the file opened at path
	j        *journal // nil unless Options.Journal
}

// Open opens the store at path, creating it (and its directory, 0700) if
// it is missing, and migrating it if it was written by an older build.
//
// It fails with *LockedError when another process holds the lock for
// longer than the timeout, with *MissingError when the file is missing
// but its directory holds what an earlier store recorded (releases, saved
// outcomes: a lost store, never a new one unless Options.Recreate), with *FutureError when the store was written
// by a newer build, and with an error wrapping fs.ErrNotExist when a
// read-only open finds no file.
//
// The lock is taken in two steps, within one timeout: first the lock
// file beside the store (LockSuffix), shared for a read-only open and
// exclusive otherwise, with a blocking flock, so waiters queue and each
// is woken as soon as the lock is free; then bbolt's own lock, which only
// a process that does not take the lock file can still hold.
func Open(path string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store path %q: %w", path, err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	if opts.ReadOnly {
		if err := statStore(abs); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("create the store directory: %w", err)
	}
	lock, err := sidecarLock(abs, opts.ReadOnly, timeout)
	if err != nil {
		return nil, err
	}
	release := func() {
		if lock != nil {
			lock.Close()
		}
	}
	checked, checkedID, err := ensureStoreFile(abs, opts.ReadOnly, opts.Recreate)
	if err != nil {
		release()
		return nil, err
	}
	testHookChecked(abs)
	db, id, err := openBolt(abs, checkedID, &bolt.Options{
		// What is left of the timeout. bbolt retries every 50ms and
		// gives up once less than 50ms of its timeout is left; the extra
		// 50ms make the whole wait at least timeout (and at most about
		// timeout+50ms).
		Timeout:  max(time.Until(deadline), 0) + lockRetry,
		ReadOnly: opts.ReadOnly,
	})
	if checked != nil {
		// Closed only now: while it is open, no other file can have its
		// inode, so a file put at the path since is never taken for it.
		checked.Close()
	}
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		release()
		return nil, &LockedError{Path: abs}
	case err != nil:
		release()
		var ce *CorruptError
		if errors.As(err, &ce) {
			return nil, err
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no store at %s: %w", abs, err)
		}
		return nil, &UnavailableError{Path: abs, Err: err}
	}
	s := &Store{db: db, lock: lock, path: abs, id: id}
	folded, err := s.prepare(opts.ReadOnly, false)
	if err != nil {
		db.Close()
		release()
		return nil, err
	}
	if opts.Journal && !opts.ReadOnly {
		if s.j, err = s.openJournal(folded); err == nil {
			s.startFolder()
		}
	}
	return s, nil
}

// prepare checks the schema version, initializes or migrates the store
// when needed (one write transaction), caches the secret and applies
// what a journal left beside it (replayJournal), returning the journal
// generation the store has folded. An up-to-date store is only read, so
// opening it costs no write.
//
// Only a file that create is making may be fresh (no buckets at all): an
// existing store.db always holds a store, so an empty one is damage —
// never a new store, whose empty release list would then let the sweep
// delete every installed release.
func (s *Store) prepare(readOnly, creating bool) (uint64, error) {
	folded, err := s.prepareStore(readOnly, creating)
	if err != nil || creating {
		return 0, err
	}
	return s.replayJournal(readOnly, folded)
}

// prepareStore is prepare without the journal, whose folded generation
// it returns.
func (s *Store) prepareStore(readOnly, creating bool) (folded uint64, err error) {
	var version uint64
	var fresh bool
	err = s.run(false, func(tx *bolt.Tx) error {
		var err error
		version, fresh, err = readVersion(tx)
		return err
	})
	if ce := (*CorruptError)(nil); errors.As(err, &ce) {
		return 0, err
	} else if err != nil {
		return 0, fmt.Errorf("the store at %s: %w", s.path, err)
	}
	if fresh && !creating {
		return 0, damaged(s.path, errors.New("it holds no buckets at all, not even the meta bucket every store has"))
	}
	if version > SchemaVersion {
		return 0, &FutureError{Path: s.path, Found: version, Supported: SchemaVersion}
	}
	if version < SchemaVersion {
		if readOnly {
			return 0, &OldError{Path: s.path, Found: version, Supported: SchemaVersion}
		}
		err := s.run(true, func(tx *bolt.Tx) error { return migrate(tx, version) })
		if ce := (*CorruptError)(nil); errors.As(err, &ce) {
			return 0, err
		} else if err != nil {
			return 0, fmt.Errorf("migrate the store at %s from schema version %d: %w", s.path, version, err)
		}
	}
	err = s.run(false, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		secret := meta.Get(keySecret)
		if len(secret) != secretSize {
			return &CorruptError{Bucket: string(bucketMeta), Key: string(keySecret), Err: fmt.Errorf("secret has %d bytes, want %d", len(secret), secretSize)}
		}
		s.secret = append([]byte(nil), secret...)
		folded, err = foldedGeneration(meta)
		return err
	})
	return folded, err
}

// ensureStoreFile makes sure a store file exists at path before bbolt
// opens it; the caller holds the lock file. A missing file is created
// whole (create) for a read-write open, unless its directory shows that a
// store was there (lostStore): then it is a *MissingError, unless
// recreate. An existing file is checked with
// plain reads first: bbolt would initialize an empty file as a new
// database, refuse a short one with its own words ("file size too
// small"), or panic on zeroed meta pages, and every one of those is
// damage (*CorruptError). It returns the file it checked, open, and its
// device and inode, for openBolt to tell whether bbolt opened that same
// file; none for a file it created.
func ensureStoreFile(path string, readOnly, recreate bool) (*os.File, fileID, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !readOnly:
		if lost := lostStore(path); lost != nil && !recreate {
			return nil, fileID{}, lost
		}
		return nil, fileID{}, create(path)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fileID{}, fmt.Errorf("no store at %s: %w", path, err)
	case err != nil:
		return nil, fileID{}, &UnavailableError{Path: path, Err: err}
	}
	id, err := statID(f)
	if err != nil {
		f.Close()
		return nil, fileID{}, &UnavailableError{Path: path, Err: err}
	}
	if err := checkFile(f, false, false); err != nil {
		f.Close()
		return nil, fileID{}, damaged(path, err)
	}
	return f, id, nil
}

// testHookChecked lets tests change the store file between its check and
// bbolt's open.
var testHookChecked = func(path string) {}

// create makes a new, initialized store at path: bbolt lays it out in a
// file beside it, every bucket and the secret are written, and only then
// is it renamed into place (and the directory synced). So store.db either
// does not exist or holds a whole store, whatever kills the process.
func create(path string) error {
	tmp := path + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create the store at %s: %w", path, err)
	}
	db, id, err := openBolt(tmp, fileID{}, &bolt.Options{Timeout: lockRetry})
	if err != nil {
		return fmt.Errorf("create the store at %s: %w", path, err)
	}
	s := &Store{db: db, path: tmp, id: id}
	_, err = s.prepare(false, true)
	if cerr := s.closeBolt(); err == nil {
		err = cerr
	}
	if err == nil {
		err = renameInPlace(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create the store at %s: %w", path, err)
	}
	return nil
}

// renameInPlace renames tmp, whole and synced, to path and syncs their
// directory, so that the name survives a crash; tmp is removed when
// either fails.
func renameInPlace(tmp, path string) error {
	err := os.Rename(tmp, path)
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readVersion reports the schema version of the store, 0 and fresh for a
// file with no buckets at all. A file with buckets but no meta bucket is
// not a Rukh store.
func readVersion(tx *bolt.Tx) (version uint64, fresh bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty, ours := true, false
		_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			empty = false
			ours = ours || slices.ContainsFunc(topBuckets, func(b []byte) bool { return bytes.Equal(b, name) })
			return nil
		})
		if ours {
			return 0, false, &CorruptError{Bucket: string(bucketMeta), Err: errors.New("bucket is missing")}
		}
		if !empty {
			return 0, false, errors.New("this bbolt file is not a " + cliname.Name() + " store (no meta bucket)")
		}
		return 0, true, nil
	}
	v := meta.Get(keySchema)
	if len(v) != 8 {
		return 0, false, &CorruptError{Bucket: string(bucketMeta), Key: string(keySchema), Err: fmt.Errorf("schema version has %d bytes, want 8", len(v))}
	}
	version = binary.BigEndian.Uint64(v)
	if version > maxSchemaVersion {
		return 0, false, &CorruptError{Bucket: string(bucketMeta), Key: string(keySchema), Err: fmt.Errorf("schema version %d is not one any build writes", version)}
	}
	return version, false, nil
}

// Close releases the file locks. Transactions must have finished.
func (s *Store) Close() error {
	s.closeJournal()
	err := s.closeBolt()
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

// Path is the absolute path of the store file.
func (s *Store) Path() string { return s.path }

// View runs fn in a read-only transaction. Damage to the file that bbolt
// meets on the way — a panic in bbolt, a fault reading the file — is a
// *CorruptError, as is a record that does not decode.
func (s *Store) View(fn func(*Tx) error) error {
	return s.runTx(txMode{}, fn)
}

// Update runs fn in one read-write transaction, committed when fn returns
// nil and rolled back when it returns an error (or panics). Damage to the
// file is a *CorruptError, as in View.
func (s *Store) Update(fn func(*Tx) error) error {
	return s.runTx(txMode{write: true}, fn)
}

// Tx is a transaction with typed accessors. It is valid only inside the
// View or Update callback that received it; values it returns are copies
// and stay valid afterwards.
type Tx struct {
	tx *bolt.Tx
	s  *Store
	// pend are the journal's entries not yet folded when a read
	// transaction began (overlay); a write transaction folds them.
	pend []journalEntry
	// pruned counts the finished records this transaction pruned
	// (pruneInvocations).
	pruned int
}

// Secret returns a copy of the per-store 32-byte random secret (for
// keyed MACs such as listing cursors).
func (tx *Tx) Secret() []byte { return append([]byte(nil), tx.s.secret...) }

// Writable reports whether the transaction may write.
func (tx *Tx) Writable() bool { return tx.tx.Writable() }

// bucket returns a top-level bucket that every store of this schema
// version has; a missing one is corruption.
func (tx *Tx) bucket(name []byte) (*bolt.Bucket, error) {
	b := tx.tx.Bucket(name)
	if b == nil {
		return nil, &CorruptError{Bucket: string(name), Err: errors.New("bucket is missing")}
	}
	return b, nil
}

// newSecret returns fresh random bytes for the store secret.
func newSecret() ([]byte, error) {
	b := make([]byte, secretSize)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Created returns when the store was initialized.
func (tx *Tx) Created() time.Time {
	meta := tx.tx.Bucket(bucketMeta)
	if meta == nil {
		return time.Time{}
	}
	n, _ := keyU64(meta.Get(keyCreated))
	return fromNanos(int64(n))
}
