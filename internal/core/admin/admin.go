// Package admin carries out the owner's changes — trust, install, remove,
// activate, deactivate, profile apply — each as one new profile revision
// that is published in a single store transaction only after its CLI
// routes and MCP projection both validated.
package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/wrapper"
	"github.com/rukh-cli/rukh/internal/jsoncanon"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// Admin performs owner operations on one data directory, through its
// store Provider: opened per operation in-process (store.Files), so it
// never holds the lock across a user-visible wait, or held by rukhd.
type Admin struct {
	DataDir string
	Store   store.Provider
	Now     func() time.Time
	UID     int // the subject recorded in audit entries
	// Core is the whole core binary, NAMEd, which the owner's wrappers'
	// release holds a copy of; this executable when empty. The one-shot
	// core sets it (to the NAMEd beside it) when it applies an
	// embedder's starting profile (Builtins.Exe).
	Core string
}

// New returns an Admin for dataDir that opens the store per operation,
// with the current time and uid.
func New(dataDir string) *Admin {
	a := &Admin{DataDir: dataDir, Now: time.Now, UID: os.Getuid()}
	a.Store = store.Files{Path: a.StorePath()}
	return a
}

// StorePath is the bbolt file.
func (a *Admin) StorePath() string { return filepath.Join(a.DataDir, "store.db") }

// ReleasesDir holds the installed, content-addressed releases.
func (a *Admin) ReleasesDir() string { return filepath.Join(a.DataDir, "releases") }

// view runs fn in a read transaction. A store that does not exist yet is
// read as empty (fn gets a nil Tx) rather than created by a read.
func (a *Admin) view(fn func(tx *store.Tx) error) error { return a.Store.View(fn) }

// Candidate is a revision being built: the configuration and the command
// generation that a change edits before it is validated.
type Candidate struct {
	Profile  *profile.Profile
	Packages map[string]store.ActivePackage // by package name
	Keys     map[string]bool                // "publisher/keyid"
	// then runs in the same transaction after the revision is published,
	// for records that may only change once the new revision is active
	// (deleting a release the old revision still used).
	then []func(tx *store.Tx) error
	// undo runs when the change is rolled back, and after runs when it
	// committed; both while the store's lock is still held, so that files
	// under the data dir change only under the same lock as the records
	// that refer to them.
	undo  []func()
	after []func() error
}

// State is the active revision as the owner sees it.
type State struct {
	Revision   *store.Revision // nil before the first change
	Profile    *profile.Profile
	Projection *projection.Projection
	Releases   []*store.Release
	// Names are the package names held for their publishers, with a
	// release installed or not (store.Name).
	Names []*store.Name
}

// RejectedError says why a candidate revision was not published. The
// active revision is unchanged.
type RejectedError struct {
	Op       string
	Problems []string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s refused; the active revision is unchanged:\n  %s", e.Op, strings.Join(e.Problems, "\n  "))
}

// Result is what a published change did.
type Result struct {
	Op       string
	Old, New uint64 // revision numbers; equal when nothing changed
	Changed  bool
	Revision *store.Revision
}

// activeCandidate reads the active revision and its candidate.
func activeCandidate(tx *store.Tx) (*store.Revision, *Candidate, error) {
	cur, err := tx.ActiveRevision()
	if err != nil {
		return nil, nil, err
	}
	c, err := candidateFrom(cur)
	return cur, c, err
}

// candidateFrom reads the active revision (or the defaults) into a
// candidate.
func candidateFrom(rev *store.Revision) (*Candidate, error) {
	c := &Candidate{Profile: profile.Default(), Packages: map[string]store.ActivePackage{}, Keys: map[string]bool{}}
	if rev == nil {
		return c, nil
	}
	p, err := profile.Parse(rev.Profile)
	if err != nil {
		// It was valid when it was published.
		return nil, &store.CorruptError{Bucket: "revisions", Key: fmt.Sprint(rev.Number), Err: fmt.Errorf("unreadable profile: %w", err)}
	}
	c.Profile = p
	for _, ap := range rev.Packages {
		c.Packages[ap.Package] = ap
	}
	for _, k := range rev.Keys {
		c.Keys[k] = true
	}
	return c, nil
}

// publish builds a candidate from the active revision, lets change edit
// it (and write records in the same transaction), validates the result
// and publishes it as the next revision — or rolls everything back.
func (a *Admin) publish(op string, change func(tx *store.Tx, c *Candidate) error) (*Result, error) {
	return a.commit(op, false, change)
}

// publishAudited is publish for changes that write records even when the
// revision's content stays the same (removing an inactive release): those
// get an audit entry from the unchanged revision to itself.
func (a *Admin) publishAudited(op string, change func(tx *store.Tx, c *Candidate) error) (*Result, error) {
	return a.commit(op, true, change)
}

func (a *Admin) commit(op string, auditAlways bool, change func(tx *store.Tx, c *Candidate) error) (*Result, error) {
	var res *Result
	var cand *Candidate
	err := a.Store.Update(func(tx *store.Tx) error {
		a.sweepReleases(tx)
		cur, c, err := activeCandidate(tx)
		if err != nil {
			return err
		}
		cand = c
		if err := change(tx, c); err != nil {
			return err
		}
		proj, problems, err := project(tx, c, 0)
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return &RejectedError{Op: op, Problems: problems}
		}
		rev := &store.Revision{
			Profile:  c.Profile.Canonical(),
			Packages: sortedPackages(c.Packages),
			Keys:     sortedKeys(c.Keys),
			Routes:   storeRoutes(proj.Routes),
			Created:  a.Now().UTC(),
			Op:       op,
			By:       a.UID,
		}
		rev.Hash = revisionHash(rev)
		res = &Result{Op: op}
		if cur != nil {
			res.Old, rev.Parent = cur.Number, cur.Number
			if cur.Hash == rev.Hash {
				res.New, res.Revision = cur.Number, cur
				if auditAlways {
					if _, err := tx.AppendAudit(&store.AuditEntry{Time: rev.Created, UID: a.UID, Op: op, Old: cur.Number, New: cur.Number}); err != nil {
						return err
					}
				}
				return runThen(tx, c)
			}
		}
		n, err := tx.PublishRevision(rev)
		if err != nil {
			return err
		}
		rev.Number = n
		res.New, res.Changed, res.Revision = n, true, rev
		return runThen(tx, c)
	})
	if cand != nil {
		if err != nil {
			for _, fn := range cand.undo {
				fn()
			}
		} else {
			for _, fn := range cand.after {
				if aerr := fn(); aerr != nil {
					return res, aerr
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func runThen(tx *store.Tx, c *Candidate) error {
	for _, fn := range c.then {
		if err := fn(tx); err != nil {
			return err
		}
	}
	return nil
}

// project validates a candidate and derives its projection: every active
// release must exist and still be trusted (or pinned), its descriptor must
// decode, and routes and tools must be consistent. revision is the number
// the names are computed for (0 while a candidate has none yet: names are
// checked for uniqueness, which does not depend on the number).
//
// A release record that does not read, or a stored descriptor that no
// longer decodes (it was validated when it was installed), is damage to
// the store, returned as the error, never a problem of the candidate.
func project(tx *store.Tx, c *Candidate, revision uint64) (*projection.Projection, []string, error) {
	var problems []string
	var pkgs []projection.Package
	for _, name := range sortedNames(c.Packages) {
		ap := c.Packages[name]
		rel, err := tx.Release(ap.Digest)
		switch {
		case err != nil:
			return nil, nil, err
		case rel == nil:
			problems = append(problems, fmt.Sprintf("%s %s: release %s is not installed", name, ap.Version, ap.Digest))
			continue
		case !rel.Pinned && !c.Keys[rel.Publisher+"/"+rel.SignedBy]:
			problems = append(problems, fmt.Sprintf("%s %s is active and signed by %s key %s, which would no longer be trusted; deactivate or remove it first",
				name, ap.Version, rel.Publisher, rel.SignedBy))
			continue
		}
		d, err := descriptor.Decode(rel.Descriptor)
		if err != nil {
			return nil, nil, &store.CorruptError{Bucket: "releases", Key: ap.Digest, Err: fmt.Errorf("the stored descriptor of %s %s no longer decodes: %v", name, ap.Version, err)}
		}
		pkgs = append(pkgs, projection.Package{Digest: rel.Digest, Descriptor: d})
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	proj, errs := projection.Build(projection.Input{
		Namespace: c.Profile.EndpointNamespace,
		Revision:  revision,
		Naming:    projection.Naming(c.Profile.Naming()),
		Expose:    c.Profile.MCP.Expose,
		Packages:  pkgs,
	})
	for _, e := range errs {
		problems = append(problems, e.Error())
	}
	return proj, problems, nil
}

// State returns the active revision, its profile, projection and the
// installed releases.
func (a *Admin) State() (*State, error) {
	st := &State{Profile: profile.Default()}
	err := a.view(func(tx *store.Tx) error {
		if tx == nil {
			proj, _ := projection.Build(projection.Input{Namespace: st.Profile.EndpointNamespace, Naming: projection.Naming(st.Profile.Naming())})
			st.Projection = proj
			return nil
		}
		cur, c, err := activeCandidate(tx)
		if err != nil {
			return err
		}
		var rev uint64
		if cur != nil {
			rev = cur.Number
		}
		proj, problems, err := project(tx, c, rev)
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			// It projected when it was published: what changed is the
			// store.
			return &store.CorruptError{Bucket: "revisions", Key: fmt.Sprint(rev),
				Err: fmt.Errorf("the active revision does not project: %s", strings.Join(problems, "; "))}
		}
		st.Revision, st.Profile, st.Projection = cur, c.Profile, proj
		if st.Releases, err = tx.Releases(); err != nil {
			return err
		}
		st.Names, err = tx.Names()
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// History returns the revisions, newest first, and the audit log.
func (a *Admin) History() ([]*store.Revision, []*store.AuditEntry, error) {
	var revs []*store.Revision
	var audit []*store.AuditEntry
	err := a.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		if revs, err = tx.Revisions(); err != nil {
			return err
		}
		slices.Reverse(revs)
		audit, err = tx.Audit(0)
		return err
	})
	return revs, audit, err
}

// ApplyProfile replaces the profile and returns what changed.
func (a *Admin) ApplyProfile(data []byte) (*Result, []profile.Change, error) {
	p, err := profile.Parse(data)
	if err == nil {
		err = p.CheckApply()
	}
	if err != nil {
		return nil, nil, err
	}
	// The wrappers' release is built and verified before the store's
	// lock is taken, and installed with the profile in one revision.
	ow, err := a.stageWrappers(p)
	if err != nil {
		return nil, nil, err
	}
	if ow != nil {
		defer ow.install.cleanup()
	}
	var changes []profile.Change
	res, err := a.publish("profile apply", func(tx *store.Tx, c *Candidate) error {
		changes = profile.Diff(c.Profile, p)
		c.Profile = p
		if ow == nil {
			delete(c.Packages, wrapper.Package)
			return nil
		}
		return ow.apply(tx, c)
	})
	if err != nil {
		return nil, nil, err
	}
	return res, changes, nil
}

func sortedNames(m map[string]store.ActivePackage) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sortedPackages(m map[string]store.ActivePackage) []store.ActivePackage {
	out := make([]store.ActivePackage, 0, len(m))
	for _, n := range sortedNames(m) {
		out = append(out, m[n])
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func storeRoutes(rs []projection.Route) []store.Route {
	out := make([]store.Route, len(rs))
	for i, r := range rs {
		out[i] = store.Route{Words: strings.Join(r.Words, " "), Identity: r.Identity, Digest: r.Digest,
			Command: r.Command, Alias: r.Alias, Summary: r.Summary}
	}
	return out
}

// revisionHash is the content hash of a revision: SHA-256 over the RFC
// 8785 form of its configuration and command generation. The number,
// time and author are not content.
func revisionHash(r *store.Revision) string {
	raw, err := json.Marshal(struct {
		Format   string                `json:"format"`
		Profile  json.RawMessage       `json:"profile"`
		Packages []store.ActivePackage `json:"packages"`
		Keys     []string              `json:"keys"`
	}{"rukh.revision/1", r.Profile, r.Packages, r.Keys})
	if err != nil {
		panic(err)
	}
	canon, err := jsoncanon.Transform(raw)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}
