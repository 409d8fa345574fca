package invoke

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// ErrNoCommand means the words name no installed command.
var ErrNoCommand = errors.New("no such command")

// view runs fn in a short read transaction; a store that does not exist
// yet is passed as nil.
func (c *Core) view(fn func(tx *store.Tx) error) error { return c.Store.View(fn) }

// Resolve finds the command the route words name in the active revision,
// reading one route record and one release — never the whole catalogue —
// and pins it. It returns how many words the route used; ErrNoCommand
// when none matches.
func (c *Core) Resolve(words []string) (*Target, int, error) {
	var t *Target
	var used int
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return ErrNoCommand
		}
		rt, n, err := tx.ResolveRoute(words)
		if err != nil {
			return err
		}
		if rt == nil {
			return ErrNoCommand
		}
		rev, err := tx.ActiveNumber()
		if err != nil {
			return err
		}
		t, err = pin(tx, rev, rt.Digest, rt.Command)
		if err != nil {
			return err
		}
		t.Words, used = words[:n], n
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return t, used, nil
}

// pin loads the profile of revision rev and command index cmd of release
// digest. What it finds inconsistent was consistent when the revision was
// published, so it is a damaged store (*store.CorruptError).
func pin(tx *store.Tx, rev uint64, digest string, cmd int) (*Target, error) {
	hdr, err := tx.RevisionHeader(rev)
	if err != nil {
		return nil, err
	}
	revision := func(format string, args ...any) error {
		return &store.CorruptError{Bucket: "revisions", Key: fmt.Sprint(rev), Err: fmt.Errorf(format, args...)}
	}
	release := func(format string, args ...any) error {
		return &store.CorruptError{Bucket: "releases", Key: digest, Err: fmt.Errorf(format, args...)}
	}
	if hdr == nil {
		return nil, revision("the revision is missing")
	}
	p, err := decoded(hdr.Profile, profile.Parse)
	if err != nil {
		return nil, revision("unreadable profile: %w", err)
	}
	rel, err := tx.Release(digest)
	if err != nil {
		return nil, err
	}
	if rel == nil {
		return nil, release("the release of revision %d is not installed", rev)
	}
	d, err := decoded(rel.Descriptor, descriptor.Decode)
	if err != nil {
		return nil, release("stored descriptor: %w", err)
	}
	if cmd < 0 || cmd >= len(d.Commands) {
		return nil, release("the release has no command #%d", cmd)
	}
	return &Target{Revision: rev, Profile: p, Release: rel, Package: d, Command: d.Commands[cmd]}, nil
}

// Children lists the routes under a group prefix (all routes for an empty
// prefix), for help and completion. It reads route records only.
func (c *Core) Children(prefix []string) ([]*store.Route, error) {
	var out []*store.Route
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		out, err = tx.RoutesWithPrefix(prefix)
		return err
	})
	return out, err
}

// Invocations returns the most recent invocation records, newest first.
func (c *Core) Invocations(limit int) ([]*store.Invocation, error) {
	var out []*store.Invocation
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		out, err = tx.Invocations(limit)
		return err
	})
	return out, err
}

// Invocation finds one invocation record by id or unique id prefix.
func (c *Core) Invocation(prefix string) (*store.Invocation, error) {
	var out *store.Invocation
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		out, err = tx.FindInvocation(strings.ToLower(prefix))
		return err
	})
	if err == nil && out == nil {
		err = fmt.Errorf("no invocation %s; see `invocations list`", prefix)
	}
	return out, err
}

// ErrStale means the revision a name or cursor was computed for is no
// longer the active one.
var ErrStale = errors.New("the active revision changed")

// ActiveRevision returns the active revision number (0 before the first).
func (c *Core) ActiveRevision() (uint64, error) {
	var n uint64
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		n, err = tx.ActiveNumber()
		return err
	})
	return n, err
}

// ResolveCommand pins command index cmd of release digest in revision rev,
// which must still be the active revision (ErrStale otherwise): a name
// from an older revision never reaches a newer release.
func (c *Core) ResolveCommand(rev uint64, digest string, cmd int) (*Target, error) {
	var t *Target
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return ErrStale
		}
		active, err := tx.ActiveNumber()
		if err != nil {
			return err
		}
		if active != rev {
			return ErrStale
		}
		t, err = pin(tx, rev, digest, cmd)
		return err
	})
	return t, err
}

// Secret returns the store's per-store secret (for cursor integrity).
func (c *Core) Secret() ([]byte, error) {
	var s []byte
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return errors.New("no store yet: nothing is installed")
		}
		s = tx.Secret()
		return nil
	})
	return s, err
}

// ResolveLost finalizes the open records whose host process is gone as
// execution_failed / host_lost (a daemon does this when it starts) and
// returns their ids; outcomes their hosts saved aside (PendingDir) are
// committed first and are not lost. Nothing is re-run.
func (c *Core) ResolveLost() ([]string, error) {
	var lost []string
	err := c.updateSettled(func(tx *store.Tx) error {
		var err error
		lost, err = tx.ResolveLost(c.hostAlive, c.Now().UTC())
		return err
	})
	if err == nil {
		c.health.forget(lost)
	}
	return lost, err
}

// CheckStore checks the store's consistency (store.Tx.Check).
func (c *Core) CheckStore() error {
	return c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		return tx.Check()
	})
}

// decodeCache keeps what pin decoded, by the SHA-256 of the stored bytes:
// a warm host (rukhd, rukh mcp) then pins a command without decoding its
// release's descriptor and the profile again on every call. The values
// are never modified after decoding; the cache is bounded and starts over
// when full.
var decodeCache struct {
	sync.Mutex
	m map[[32]byte]any
}

const decodeCacheSize = 256

func decoded[T any](data []byte, decode func([]byte) (T, error)) (T, error) {
	key := sha256.Sum256(data)
	decodeCache.Lock()
	v, ok := decodeCache.m[key]
	decodeCache.Unlock()
	if ok {
		return v.(T), nil
	}
	t, err := decode(data)
	if err != nil {
		return t, err
	}
	decodeCache.Lock()
	if decodeCache.m == nil || len(decodeCache.m) >= decodeCacheSize {
		decodeCache.m = map[[32]byte]any{}
	}
	decodeCache.m[key] = t
	decodeCache.Unlock()
	return t, nil
}
