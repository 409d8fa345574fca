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
	"time"

	"github.com/rukh-cli/rukh/admin"
	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/profile"
	"github.com/rukh-cli/rukh/projection"
	"github.com/rukh-cli/rukh/store"
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
	return l
}

// FinishThrough has a call this host runs be recorded by the daemon s
// reaches, when one started (and holds the store) while it ran.
func (l *Host) FinishThrough(s invoke.Settler) { l.core.Elsewhere = s }

// SettleNow commits the outcomes other hosts saved aside because this one
// held the store (invoke.Core.SettleNow).
func (l *Host) SettleNow() error { return l.core.SettleNow() }

// ResolveLost finalizes the records of hosts that are gone (host_lost).
func (l *Host) ResolveLost() ([]string, error) { return l.core.ResolveLost() }

// Enforceable says which enforcement profiles this machine applies.
func (l *Host) Enforceable(context.Context) map[string]string { return l.core.Enforceable() }

// CheckStore checks the store's consistency.
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

func (l *Host) CheckStore(context.Context) error { return l.core.CheckStore() }

// StoreWriteFailure says why this host's writes to the store fail, and
// since when (invoke.Core.StoreWriteFailure); nil when they do not.
func (l *Host) StoreWriteFailure() (since time.Time, err error) { return l.core.StoreWriteFailure() }

// WatchRevisions reports the active revisions published after the call,
// by any process (store.WatchRevisions).
func (l *Host) WatchRevisions(ctx context.Context) (<-chan uint64, error) {
	return store.WatchRevisions(ctx, l.admin.StorePath())
}

// ActiveRevision is the active revision's number (0 before the first).
func (l *Host) ActiveRevision() (uint64, error) { return l.core.ActiveRevision() }

// Resolve pins the one command route words name, and says how many of
// the words it used.
func (l *Host) Resolve(_ context.Context, words []string) (*invoke.Target, int, error) {
	return l.core.Resolve(words)
}

// Children are the routes under a group.
func (l *Host) Children(_ context.Context, prefix []string) ([]*store.Route, error) {
	return l.core.Children(prefix)
}

// State is the active revision with its projection.
func (l *Host) State(context.Context) (*admin.State, error) { return l.admin.State() }

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

// Invoke runs one call of a pinned command through the invocation core.
func (l *Host) Invoke(ctx context.Context, t *invoke.Target, req *invoke.Request) (*invoke.Outcome, error) {
	return l.core.Invoke(ctx, t, req)
}

// Install, Remove, Activate, Deactivate, TrustAdd, TrustRemove and
// ApplyProfile are the owner's changes, each one new profile revision.
//
// Each honours ctx: one stopped before it starts changes nothing, and an
// install stopped while it copies or verifies stops before it commits.
func (l *Host) Install(ctx context.Context, src, pin string, opts admin.InstallOptions) (*admin.InstallResult, error) {
	return l.admin.InstallContext(ctx, src, pin, opts)
}

func (l *Host) Remove(ctx context.Context, ref string) (*admin.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, _, err := l.admin.Remove(ref)
	return res, err
}

// ForgetPublisher releases a package name from its publisher, removing
// its last release too (admin.ForgetPublisher).
func (l *Host) ForgetPublisher(ctx context.Context, pkg string) (*admin.ForgetResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.admin.ForgetPublisher(pkg)
}

func (l *Host) Activate(ctx context.Context, ref string) (*admin.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.admin.Activate(ref)
}

func (l *Host) Deactivate(ctx context.Context, pkg string) (*admin.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.admin.Deactivate(pkg)
}

func (l *Host) TrustAdd(ctx context.Context, publisher, pubKeyFile string) (*admin.Result, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	return l.admin.TrustAdd(publisher, pubKeyFile)
}

func (l *Host) TrustRemove(ctx context.Context, publisher string) (*admin.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.admin.TrustRemove(publisher)
}

// EnsureBuiltins makes the active revision run the embedder's built-in
// commands b (admin.EnsureBuiltins).
func (l *Host) EnsureBuiltins(ctx context.Context, b *admin.Builtins) error {
	return l.admin.EnsureBuiltins(ctx, b)
}

// TrustedKeys are the publisher keys the owner trusts.
func (l *Host) TrustedKeys(context.Context) ([]*store.Key, error) { return l.admin.TrustedKeys() }

func (l *Host) ApplyProfile(ctx context.Context, data []byte) (*admin.Result, []profile.Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return l.admin.ApplyProfile(data)
}

// History is the revisions and the audit log.
func (l *Host) History(context.Context) ([]*store.Revision, []*store.AuditEntry, error) {
	return l.admin.History()
}

// Invocations are the latest invocation records, at most limit.
func (l *Host) Invocations(_ context.Context, limit int) ([]*store.Invocation, error) {
	return l.core.Invocations(limit)
}

// Invocation is one invocation record.
func (l *Host) Invocation(_ context.Context, id string) (*store.Invocation, error) {
	return l.core.Invocation(id)
}

// Approvals are the calls waiting for (or given) the owner's approval;
// Approve is the owner's answer at a terminal (`approve`).
func (l *Host) Approvals(context.Context) ([]*store.Approval, error) { return l.core.Approvals() }

func (l *Host) Approval(_ context.Context, id string) (*store.Approval, error) {
	return l.core.Approval(id)
}

func (l *Host) Approve(ctx context.Context, id string) (*store.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.core.Approve(id)
}
