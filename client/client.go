// Package client is the seam between a presentation and Rukh's core. A
// Host lists the projection, invokes commands, runs the owner's
// administration and observes invocations, for the CLI; a ToolHost serves
// `rukh mcp`. Local is the core in this process, with its store opened per
// operation (NewLocal) or held by the daemon (NewHeld); Auto picks, per
// operation, the daemon when one answers and Local otherwise.
package client

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
	"github.com/rukh-cli/rukh/wire"
)

// Host is everything a presentation may ask of Rukh.
type Host interface {
	// List: resolve route words to one pinned command; the routes under a
	// group; the active revision with its projection.
	Resolve(ctx context.Context, words []string) (*invoke.Target, int, error)
	Children(ctx context.Context, prefix []string) ([]*store.Route, error)
	State(ctx context.Context) (*admin.State, error)
	// Projection is the MCP projection of the active revision, cached by
	// revision; CursorKey signs list cursors (derived from the store
	// secret); ResolveTool pins a tool of revision rev, or returns
	// invoke.ErrStale when rev is no longer active.
	Projection(ctx context.Context) (*projection.Projection, *profile.Profile, error)
	CursorKey(ctx context.Context) ([]byte, error)
	ResolveTool(ctx context.Context, rev uint64, tool *projection.Tool) (*invoke.Target, error)

	// Invoke runs one call of a pinned command through the invocation core.
	Invoke(ctx context.Context, t *invoke.Target, req *invoke.Request) (*invoke.Outcome, error)

	// Admin: the owner's changes, each one new profile revision.
	Install(ctx context.Context, src, pin string, opts admin.InstallOptions) (*admin.InstallResult, error)
	Remove(ctx context.Context, ref string) (*admin.Result, error)
	Activate(ctx context.Context, ref string) (*admin.Result, error)
	Deactivate(ctx context.Context, pkg string) (*admin.Result, error)
	TrustAdd(ctx context.Context, publisher, pubKeyFile string) (*admin.Result, string, error)
	TrustRemove(ctx context.Context, publisher string) (*admin.Result, error)
	TrustedKeys(ctx context.Context) ([]*store.Key, error)
	ApplyProfile(ctx context.Context, data []byte) (*admin.Result, []profile.Change, error)
	History(ctx context.Context) ([]*store.Revision, []*store.AuditEntry, error)

	// Observe: invocation records.
	Invocations(ctx context.Context, limit int) ([]*store.Invocation, error)
	Invocation(ctx context.Context, id string) (*store.Invocation, error)
	// WaitFor observes invocations of every task until each is terminal,
	// none can change by waiting, or timeout has passed (invoke.Core.Wait).
	WaitFor(ctx context.Context, ids []string, timeout time.Duration) (*wire.WaitResult, error)
	// Approvals: the calls waiting for (or given) the owner's approval;
	// Approve is the owner's answer at a terminal (`rukh approve`).
	Approvals(ctx context.Context) ([]*store.Approval, error)
	Approval(ctx context.Context, id string) (*store.Approval, error)
	Approve(ctx context.Context, id string) (*store.Approval, error)
	// CheckStore checks the store's consistency.
	CheckStore(ctx context.Context) error
	// Enforceable says, per enforcement profile, whether this machine
	// applies it and how, or why not.
	Enforceable(ctx context.Context) map[string]string
}

// Local is the in-process Host: it opens the store for each operation and
// closes it before returning, so it never holds the lock across a
// user-visible wait.
type Local struct {
	admin    *admin.Admin
	core     *invoke.Core
	cache    *projection.Cache
	profiles sync.Map // revision → *profile.Profile of cached projections
	runs     detachedRuns
}

// NewLocal returns the in-process Host for a data directory: it opens the
// store per operation.
func NewLocal(dataDir string) *Local {
	return &Local{admin: admin.New(dataDir), core: invoke.New(dataDir), cache: projection.NewCache(projection.DefaultCacheSize)}
}

// NewLocalCore returns the in-process Host around core, as the caller
// set it up (its store Provider, its timings); owner operations use the
// same Provider.
func NewLocalCore(core *invoke.Core) *Local {
	l := NewLocal(core.DataDir)
	l.core, l.admin.Store = core, core.Store
	return l
}

// NewHeld returns a Host for a data directory whose store s stays open
// (the daemon's, a *store.Held). The admin subject is uid, read from the
// kernel.
func NewHeld(dataDir string, s store.Provider, uid int) *Local {
	l := NewLocal(dataDir)
	l.admin.Store, l.core.Store, l.admin.UID = s, s, uid
	return l
}

// SettleNow commits the outcomes other hosts saved aside because this one
// held the store (invoke.Core.SettleNow).
func (l *Local) SettleNow() error { return l.core.SettleNow() }

// ResolveLost finalizes the records of hosts that are gone (host_lost).
func (l *Local) ResolveLost() ([]string, error) { return l.core.ResolveLost() }

// Enforceable says which enforcement profiles this machine applies.
func (l *Local) Enforceable(context.Context) map[string]string { return l.core.Enforceable() }

// CheckStore checks the store's consistency.
func (l *Local) CheckStore(context.Context) error { return l.core.CheckStore() }

// StoreWriteFailure says why this host's writes to the store fail, and
// since when (invoke.Core.StoreWriteFailure); nil when they do not.
func (l *Local) StoreWriteFailure() (since time.Time, err error) { return l.core.StoreWriteFailure() }

// WatchRevisions reports the active revisions published after the call,
// by any process (store.WatchRevisions).
func (l *Local) WatchRevisions(ctx context.Context) (<-chan uint64, error) {
	return store.WatchRevisions(ctx, l.admin.StorePath())
}

// ActiveRevision is the active revision's number (0 before the first).
func (l *Local) ActiveRevision() (uint64, error) { return l.core.ActiveRevision() }

var _ Host = (*Local)(nil)

func (l *Local) Resolve(_ context.Context, words []string) (*invoke.Target, int, error) {
	return l.core.Resolve(words)
}

func (l *Local) Children(_ context.Context, prefix []string) ([]*store.Route, error) {
	return l.core.Children(prefix)
}

func (l *Local) State(context.Context) (*admin.State, error) { return l.admin.State() }

// Projection builds the projection of the active revision once per
// revision and serves it from the cache after.
func (l *Local) Projection(context.Context) (*projection.Projection, *profile.Profile, error) {
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
		l.profiles.Range(func(k, _ any) bool { // keep what the cache can hold
			if k.(uint64)+projection.DefaultCacheSize < n {
				l.profiles.Delete(k)
			}
			return true
		})
		return p, prof.(*profile.Profile), nil
	}
	return nil, nil, fmt.Errorf("the profile revision keeps changing; try again")
}

func (l *Local) CursorKey(context.Context) ([]byte, error) {
	secret, err := l.core.Secret()
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("rukh.mcp-cursor/1"))
	return mac.Sum(nil), nil
}

func (l *Local) ResolveTool(_ context.Context, rev uint64, tool *projection.Tool) (*invoke.Target, error) {
	return l.core.ResolveCommand(rev, tool.Digest, tool.Command)
}

func (l *Local) Invoke(ctx context.Context, t *invoke.Target, req *invoke.Request) (*invoke.Outcome, error) {
	return l.core.Invoke(ctx, t, req)
}

func (l *Local) Install(_ context.Context, src, pin string, opts admin.InstallOptions) (*admin.InstallResult, error) {
	return l.admin.Install(src, pin, opts)
}

func (l *Local) Remove(_ context.Context, ref string) (*admin.Result, error) {
	res, _, err := l.admin.Remove(ref)
	return res, err
}

func (l *Local) Activate(_ context.Context, ref string) (*admin.Result, error) {
	return l.admin.Activate(ref)
}

func (l *Local) Deactivate(_ context.Context, pkg string) (*admin.Result, error) {
	return l.admin.Deactivate(pkg)
}

func (l *Local) TrustAdd(_ context.Context, publisher, pubKeyFile string) (*admin.Result, string, error) {
	return l.admin.TrustAdd(publisher, pubKeyFile)
}

func (l *Local) TrustRemove(_ context.Context, publisher string) (*admin.Result, error) {
	return l.admin.TrustRemove(publisher)
}

func (l *Local) TrustedKeys(context.Context) ([]*store.Key, error) { return l.admin.TrustedKeys() }

func (l *Local) ApplyProfile(_ context.Context, data []byte) (*admin.Result, []profile.Change, error) {
	return l.admin.ApplyProfile(data)
}

func (l *Local) History(context.Context) ([]*store.Revision, []*store.AuditEntry, error) {
	return l.admin.History()
}

func (l *Local) Invocations(_ context.Context, limit int) ([]*store.Invocation, error) {
	return l.core.Invocations(limit)
}

func (l *Local) Invocation(_ context.Context, id string) (*store.Invocation, error) {
	return l.core.Invocation(id)
}

func (l *Local) Approvals(context.Context) ([]*store.Approval, error) { return l.core.Approvals() }

func (l *Local) Approval(_ context.Context, id string) (*store.Approval, error) {
	return l.core.Approval(id)
}

func (l *Local) Approve(_ context.Context, id string) (*store.Approval, error) {
	return l.core.Approve(id)
}
