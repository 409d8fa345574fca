package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/rukh-cli/rukh/internal/cliname"
)

// LockedError is returned by Open when another process held the store's
// lock for longer than Options.Timeout.
type LockedError struct {
	Path string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("the store at %s is locked by another process, most likely "+cliname.Daemon()+" or another "+cliname.Name()+" command; run "+cliname.Cmd("daemon status")+", or retry", e.Path)
}

// FutureError is returned by Open when the store was written by a newer
// build with a schema version this build does not know.
type FutureError struct {
	Path      string
	Found     uint64 // the store's schema version
	Supported uint64 // SchemaVersion of this build
}

func (e *FutureError) Error() string {
	return fmt.Sprintf("the store at %s has schema version %d; this build supports up to %d; upgrade "+cliname.Name(), e.Path, e.Found, e.Supported)
}

// OldError is returned by a read-only Open of a store written by an older
// build: it needs migrating, which only a read-write Open does. (Files
// migrates it and reads again.)
type OldError struct {
	Path      string
	Found     uint64 // the store's schema version
	Supported uint64 // SchemaVersion of this build
}

func (e *OldError) Error() string {
	return fmt.Sprintf("the store at %s has schema version %d and needs migrating to %d; open it read-write once", e.Path, e.Found, e.Supported)
}

// ConflictError is returned by PublishRevision when the candidate was
// built from a revision that is no longer the active one. Nothing was
// written; rebuild the candidate from the active revision and retry.
type ConflictError struct {
	Parent uint64 // the revision the candidate was built from
	Active uint64 // the revision that is active now (0: none)
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the profile changed while this change was prepared (it was built on revision %d, the active revision is now %d); retry", e.Parent, e.Active)
}

// UnavailableError is returned by Open when a file of the store exists
// but cannot be opened: its mode or owner keeps its owner out, the disk
// fails. It is the host's condition, not the command's (the CLI exits
// 75, an agent sees store_unavailable), and nothing was changed.
type UnavailableError struct {
	Path string
	Err  error
}

func (e *UnavailableError) Error() string {
	hint := "check the disk"
	if errors.Is(e.Err, fs.ErrPermission) {
		hint = "it must be readable and writable by its owner (mode 0600): see ls -l, then chmod or chown it"
	}
	cause := e.Err
	if pe := (*fs.PathError)(nil); errors.As(cause, &pe) {
		cause = pe.Err // the path is said already
	}
	return fmt.Sprintf("the store at %s cannot be opened: %v; nothing was changed; %s", e.Path, cause, hint)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// CorruptError reports a damaged store: a record or bucket that does not
// have the shape this schema version writes (Bucket, Key), or damage to
// the file itself that bbolt found, or panicked or faulted on, or that a
// check of its pages found (no Bucket). The CLI exits 75 on it.
type CorruptError struct {
	Path   string // the store file; set by the Store that found it
	Bucket string // "" for damage to the file itself
	Key    string // printable form of the key; "" for a whole bucket
	Err    error
}

// Recovery is what a *CorruptError's message tells the owner to do; the
// owner guide ("Recovering a damaged store", docs/owner.md) has the steps.
func Recovery() string {
	return "copy the file somewhere safe, then run " + cliname.Cmd("doctor") + " and follow \"Recovering a damaged store\" in the owner guide (docs/owner.md)"
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("the store")
	if e.Path != "" {
		b.WriteString(" at " + e.Path)
	}
	b.WriteString(" is damaged: ")
	if e.Bucket != "" {
		where := e.Bucket
		if e.Key != "" {
			where += "/" + e.Key
		}
		fmt.Fprintf(&b, "record %s is corrupt: ", where)
	}
	fmt.Fprintf(&b, "%s; %s", damage(e.Err), Recovery())
	return b.String()
}

// damage is err's text for a *CorruptError's message: the damage found,
// with what nested *CorruptErrors would repeat (that the store is
// damaged, the recovery) said once, by the outer one.
func damage(err error) string {
	text := strings.ReplaceAll(err.Error(), "; "+Recovery(), "")
	return strings.ReplaceAll(text, "the store is damaged: ", "")
}

func (e *CorruptError) Unwrap() error { return e.Err }

// InUseError is returned by DeleteRelease for a release that the active
// revision still uses.
type InUseError struct {
	Digest   string
	Revision uint64
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("release %s is part of the active revision %d; deactivate it first", e.Digest, e.Revision)
}

// Unwritable reports whether err says the store cannot be written at all
// for now, rather than that one write was refused: the disk is full (or
// the quota spent), read-only or failing, or the file is damaged. Waiting
// for the lock does not help; freeing space, or recovery, does.
func Unwritable(err error) bool {
	var corrupt *CorruptError
	var replaced *ReplacedError
	return errors.As(err, &corrupt) || errors.As(err, &replaced) || DiskError(err)
}

// DiskError reports whether err is the disk's: full, over quota,
// read-only or failing.
func DiskError(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EIO)
}
