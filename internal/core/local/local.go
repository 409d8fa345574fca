// Package local is Rukh's core as one host: the in-process Host that the
// CLI runs on when no daemon serves it, and that the daemon rukhd holds
// warm for its clients. Everything a presentation asks of the core goes
// through a Host (docs/architecture.md, "The seam"); for `rukh mcp`,
// package client picks between a Host in this process and the daemon's
// (the thin client makes that choice for a command line).
package local

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/core/store"
)

// Host is Rukh's core in this process, as a presentation uses it: it
// resolves and lists the projection, invokes commands, runs the owner's
// administration and observes invocations for the CLI, and serves
// seam.ToolHost for `rukh mcp`. Opened with New, it opens the store for
// each operation and closes it before returning, so it never holds the
// lock across a user-visible wait; the daemon's (NewHeld) keeps it open.
type Host struct {
	admin    *admin.Admin
	core     *invoke.Core
	cache    *projection.Cache
	profiles sync.Map // revision → *profile.Profile of cached projections
	visibles sync.Map // visibleKey → []*projection.Tool, for cached projections
	runs     detachedRuns
}

// New returns the in-process Host for a data directory: it opens the
// store per operation.
func New(dataDir string) *Host {
	return &Host{admin: admin.New(dataDir), core: invoke.New(dataDir), cache: projection.NewCache(projection.DefaultCacheSize)}
}

// HoldStore has the start of this command line's one call run on one
// read-write open of the store (store.Hold), from its first transaction
// until the call's begin record is committed: the resolution, the
// admission and the begin record then cost one wait for the lock and one
// look at the file, not one per transaction. The lock is let go before
// the command runs, as Files would have; release lets it go at once (it
// may be called more than once). A host that holds its store for its
// whole life (NewHeld) is left as it is.
func (l *Host) HoldStore() (release func()) {
	f, ok := l.core.Store.(store.Files)
	if !ok {
		return func() {}
	}
	h := store.Hold(f)
	l.core.Store, l.admin.Store = h, h
	release = func() { h.Release() }
	l.core.Begun = release
	return release
}

// Hide names the home's directories (data, config, runtime), which no
// restricted command sees (invoke.Core.Hidden).
func (l *Host) Hide(dirs ...string) { l.core.Hidden = dirs }

// NewCore returns the in-process Host around core, as the caller
// set it up (its store Provider, its timings); owner operations use the
// same Provider.
func NewCore(core *invoke.Core) *Host {
	l := New(core.DataDir)
	l.core, l.admin.Store = core, core.Store
	return l
}

// NewHeld returns a Host for a data directory whose store s stays open
// (the daemon's, a *store.Held). The admin subject is uid, read from the
// kernel.
func NewHeld(dataDir string, s store.Provider, uid int) *Host {
	l := New(dataDir)
	l.admin.Store, l.core.Store, l.admin.UID = s, s, uid
	// It serves call after call: each takes the reserve an earlier one
	// kept (invoke.Core.KeepReserves), and the daemon gives them back as
	// it exits.
	l.core.KeepReserves = invoke.MaxFreeReserves
	return l
}

// FinishThrough has a call this host runs be recorded by the daemon s
// reaches, when one started (and holds the store) while it ran.
func (l *Host) FinishThrough(s invoke.Settler) { l.core.Elsewhere = s }

// Admin is the owner's side of this host: trust, releases, the profile,
// the revisions. The CLI asks it directly; an MCP client never reaches it
// (the administrative fence).
func (l *Host) Admin() *admin.Admin { return l.admin }

// Core is the invocation core of this host: resolving routes, the calls,
// their records and approvals.
func (l *Host) Core() *invoke.Core { return l.core }

// NewStore creates a new, empty store where store.db is missing, though
// the data directory holds what an earlier one recorded (which no other
// operation does: store.MissingError): the owner's recovery step, `doctor
// --new-store`. It returns the store's path. Only a host that opens the
// store per operation (New) can; a daemon holds its own.
func (l *Host) NewStore() (string, error) {
	path := l.admin.StorePath()
	s, err := store.Open(path, store.Options{Recreate: true, Timeout: store.FilesTimeout})
	if err != nil {
		return path, err
	}
	return path, s.Close()
}

// WatchRevisions reports the active revisions published after the call,
// by any process (store.WatchRevisions).
func (l *Host) WatchRevisions(ctx context.Context) (<-chan uint64, error) {
	return store.WatchRevisions(ctx, l.admin.StorePath())
}

// Projection builds the projection of the active revision once per
// revision and serves it from the cache after.
func (l *Host) Projection(context.Context) (*projection.Projection, *profile.Profile, error) {
	const stale = "stale"
	for range 3 {
		n, err := l.core.ActiveRevision()
		if err != nil {
			return nil, nil, err
		}
		p, errs := l.cache.Get(n, func() (*projection.Projection, []*projection.Error) {
			st, err := l.admin.State()
			if err != nil {
				return nil, []*projection.Error{{Code: "state", Message: err.Error()}}
			}
			if st.Projection.Revision != n {
				return nil, []*projection.Error{{Code: stale}}
			}
			l.profiles.Store(n, st.Profile)
			l.forgetBefore(n)
			return st.Projection, nil
		})
		switch {
		case len(errs) > 0 && errs[0].Code == stale:
			continue // a change landed between reading the number and building
		case len(errs) > 0:
			return nil, nil, errs[0]
		}
		prof, ok := l.profiles.Load(n)
		if !ok {
			continue
		}
		return p, prof.(*profile.Profile), nil
	}
	return nil, nil, fmt.Errorf("the profile revision keeps changing; try again")
}

// forgetBefore drops the profiles and visible tools of revisions the
// projection cache no longer holds, once per new revision n (not on every
// page and call).
func (l *Host) forgetBefore(n uint64) {
	l.profiles.Range(func(k, _ any) bool {
		if k.(uint64)+projection.DefaultCacheSize < n {
			l.profiles.Delete(k)
		}
		return true
	})
	l.visibles.Range(func(k, _ any) bool {
		if k.(visibleKey).p.Revision+projection.DefaultCacheSize < n {
			l.visibles.Delete(k)
		}
		return true
	})
}

// CursorKey signs list cursors; it is derived from the store secret.
func (l *Host) CursorKey(context.Context) ([]byte, error) {
	secret, err := l.core.Secret()
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("rukh.mcp-cursor/1"))
	return mac.Sum(nil), nil
}

// ResolveTool pins a tool of revision rev, or returns invoke.ErrStale
// when rev is no longer active.
func (l *Host) ResolveTool(_ context.Context, rev uint64, tool *projection.Tool) (*invoke.Target, error) {
	return l.core.ResolveCommand(rev, tool.Digest, tool.Command)
}
