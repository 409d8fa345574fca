package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ActivePackage is one release of a revision's command generation.
type ActivePackage struct {
	Package string
	Version string
	Digest  string // "sha256:<hex>" of an installed release
}

// Revision is one profile revision: the owner's configuration together
// with the command generation it activates. Revisions are immutable once
// published; exactly one of them is active.
type Revision struct {
	Number   uint64          // 1, 2, 3 …; assigned by PublishRevision
	Parent   uint64          // the revision it replaced (0 for the first)
	Hash     string          // "sha256:<hex>" over (Profile, Packages, Keys), computed by the caller
	Profile  []byte          // canonical JSON of the owner profile (opaque here)
	Packages []ActivePackage // the active releases, sorted by Package
	Keys     []string        // trusted "publisher/keyid" pairs at this revision, sorted
	// Routes is the precomputed CLI route index of the revision, sorted
	// by Words (byte order). It is stored apart from the revision record,
	// so ResolveRoute never decodes the record; Revisions and History
	// leave it nil (use Routes).
	Routes  []Route
	Created time.Time
	Op      string // "install acme.deploy 1.4.0", "profile apply", …
	By      int    // uid
}

// Route is one entry of a revision's CLI route index.
type Route struct {
	Words    string // the route words joined by single spaces: "deploy status"
	Identity string // canonical command identity: "acme.deploy/status"
	Digest   string // the release that declares the command
	Command  int    // index in the descriptor's commands
	Alias    bool   // an alias route rather than the command's path
	Summary  string
}

// check validates the record part of a revision (everything but Number
// and Routes).
func (r *Revision) check() error {
	var errs problems
	errs.add(
		checkDigest("hash", r.Hash),
		checkText("op", r.Op, true, maxName))
	if r.By < 0 {
		errs.add(fmt.Errorf("uid %d is negative", r.By))
	}
	if len(r.Packages) > maxList {
		errs.add(fmt.Errorf("%d packages; at most %d", len(r.Packages), maxList))
	}
	for i, p := range r.Packages {
		errs.add(
			checkText("package", p.Package, true, maxName),
			checkText("package version", p.Version, true, maxName),
			checkDigest("package digest", p.Digest))
		if i > 0 && r.Packages[i-1].Package >= p.Package {
			errs.add(fmt.Errorf("packages are not sorted by name without repeats at %q", p.Package))
		}
	}
	if len(r.Keys) > maxList {
		errs.add(fmt.Errorf("%d keys; at most %d", len(r.Keys), maxList))
	}
	for i, k := range r.Keys {
		errs.add(checkText("key", k, true, maxName))
		if i > 0 && r.Keys[i-1] >= k {
			errs.add(fmt.Errorf("keys are not sorted without repeats at %q", k))
		}
	}
	return errs.err()
}

// checkRoutes validates a candidate's route index: well-formed, unique
// words, each pointing at one of the revision's packages.
func (r *Revision) checkRoutes() error {
	digests := make(map[string]bool, len(r.Packages))
	for _, p := range r.Packages {
		digests[p.Digest] = true
	}
	seen := make(map[string]bool, len(r.Routes))
	var errs problems
	for i := range r.Routes {
		rt := &r.Routes[i]
		if err := rt.check(); err != nil {
			errs.add(err)
			continue
		}
		if seen[rt.Words] {
			errs.add(fmt.Errorf("route %q appears twice", rt.Words))
		}
		seen[rt.Words] = true
		if !digests[rt.Digest] {
			errs.add(fmt.Errorf("route %q points at release %s, which is not among the revision's packages", rt.Words, rt.Digest))
		}
	}
	return errs.err()
}

func (rt *Route) check() error {
	var errs problems
	errs.add(
		checkRouteWords(rt.Words),
		checkText("route identity", rt.Identity, true, maxName),
		checkDigest("route digest", rt.Digest),
		checkText("route summary", rt.Summary, false, 4096))
	if rt.Command < 0 {
		errs.add(fmt.Errorf("route %q: command index %d is negative", rt.Words, rt.Command))
	}
	return errs.err()
}

// PublishRevision publishes r as the new active revision, in the
// caller's transaction: it assigns r.Number (the last number + 1), writes
// the revision record and its route index, moves the active pointer and
// appends an audit entry {Op: r.Op, Old: r.Parent, New: r.Number}. A zero
// r.Created becomes the current time.
//
// r.Parent must be the number of the active revision (0 when there is
// none): the candidate was built from it. Otherwise PublishRevision
// writes nothing and returns *ConflictError; rebuild the candidate from
// the active revision and retry. Invalid candidates are refused before
// anything is written too. Any other error may leave the transaction
// half-done: return it from the Update function so that it rolls back.
func (tx *Tx) PublishRevision(r *Revision) (uint64, error) {
	if err := errors.Join(r.check(), r.checkRoutes()); err != nil {
		return 0, fmt.Errorf("publish revision: %w", err)
	}
	revs, err := tx.bucket(bucketRevisions)
	if err != nil {
		return 0, err
	}
	routes, err := tx.bucket(bucketRoutes)
	if err != nil {
		return 0, err
	}
	active, err := tx.bucket(bucketActive)
	if err != nil {
		return 0, err
	}
	cur, err := activeNumber(active)
	if err != nil {
		return 0, err
	}
	if r.Parent != cur {
		return 0, &ConflictError{Parent: r.Parent, Active: cur}
	}
	var n uint64 = 1
	if k, _ := revs.Cursor().Last(); k != nil {
		last, ok := keyU64(k)
		if !ok {
			return 0, &CorruptError{Bucket: string(bucketRevisions), Key: printKey(k), Err: errors.New("key is not a revision number")}
		}
		n = last + 1
	}
	created := r.Created
	if created.IsZero() {
		created = time.Now()
	}
	pkgs := make([]activePackageRec, len(r.Packages))
	for i, p := range r.Packages {
		pkgs[i] = activePackageRec(p)
	}
	data, err := encode(&revisionRec{
		Parent: r.Parent, Hash: r.Hash, Profile: r.Profile, Packages: pkgs, Keys: r.Keys,
		Routes: uint64(len(r.Routes)), Created: nanos(created), Op: r.Op, By: r.By,
	})
	if err != nil {
		return 0, err
	}
	key := u64key(n)
	if err := revs.Put(key, data); err != nil {
		return 0, err
	}
	rb, err := routes.CreateBucket(key)
	if err != nil {
		return 0, &CorruptError{Bucket: string(bucketRoutes), Key: printKey(key), Err: fmt.Errorf("a route index for a new revision: %w", err)}
	}
	sorted := slices.Clone(r.Routes)
	slices.SortFunc(sorted, func(a, b Route) int { return strings.Compare(a.Words, b.Words) })
	for _, rt := range sorted {
		v, err := encode(&routeRec{Identity: rt.Identity, Digest: rt.Digest, Command: rt.Command, Alias: rt.Alias, Summary: rt.Summary})
		if err != nil {
			return 0, err
		}
		if err := rb.Put([]byte(rt.Words), v); err != nil {
			return 0, err
		}
	}
	if err := active.Put(keyRevision, key); err != nil {
		return 0, err
	}
	if _, err := tx.AppendAudit(&AuditEntry{Time: created, UID: r.By, Op: r.Op, Old: r.Parent, New: n}); err != nil {
		return 0, err
	}
	r.Number, r.Created = n, created
	tx.tx.OnCommit(func() { tx.s.announce(n) })
	return n, nil
}

// activeNumber reads the active pointer; 0 when there is none.
func activeNumber(active *bolt.Bucket) (uint64, error) {
	v := active.Get(keyRevision)
	if v == nil {
		return 0, nil
	}
	n, ok := keyU64(v)
	if !ok || n == 0 {
		return 0, &CorruptError{Bucket: string(bucketActive), Key: string(keyRevision), Err: fmt.Errorf("not a revision number: %x", v)}
	}
	return n, nil
}

// ActiveNumber returns the number of the active revision, 0 when none
// has been published. It reads only the active pointer.
func (tx *Tx) ActiveNumber() (uint64, error) {
	active, err := tx.bucket(bucketActive)
	if err != nil {
		return 0, err
	}
	return activeNumber(active)
}

// ActiveRevision returns the active revision with its routes, or nil, nil
// when none has been published.
func (tx *Tx) ActiveRevision() (*Revision, error) {
	n, err := tx.ActiveNumber()
	if err != nil || n == 0 {
		return nil, err
	}
	r, err := tx.Revision(n)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, &CorruptError{Bucket: string(bucketActive), Key: string(keyRevision), Err: fmt.Errorf("the active pointer names revision %d, which does not exist", n)}
	}
	return r, nil
}

// Revision returns revision n with its routes, or nil, nil if there is no
// such revision.
func (tx *Tx) Revision(n uint64) (*Revision, error) {
	r, err := tx.RevisionHeader(n)
	if err != nil || r == nil {
		return r, err
	}
	routes, err := tx.Routes(n)
	if err != nil {
		return nil, err
	}
	r.Routes = make([]Route, len(routes))
	for i, rt := range routes {
		r.Routes[i] = *rt
	}
	return r, nil
}

// RevisionHeader returns revision n without its routes (Routes is nil):
// the cheap read for a caller that resolves routes through the index.
func (tx *Tx) RevisionHeader(n uint64) (*Revision, error) {
	revs, err := tx.bucket(bucketRevisions)
	if err != nil {
		return nil, err
	}
	key := u64key(n)
	data := revs.Get(key)
	if data == nil {
		return nil, nil
	}
	return decodeRevision(key, data)
}

// Revisions returns every revision, oldest first, without routes.
func (tx *Tx) Revisions() ([]*Revision, error) {
	revs, err := tx.bucket(bucketRevisions)
	if err != nil {
		return nil, err
	}
	var out []*Revision
	err = revs.ForEach(func(k, v []byte) error {
		r, err := decodeRevision(k, v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// History returns at most limit revisions (all for limit <= 0), newest
// first, without routes.
func (tx *Tx) History(limit int) ([]*Revision, error) {
	revs, err := tx.bucket(bucketRevisions)
	if err != nil {
		return nil, err
	}
	var out []*Revision
	c := revs.Cursor()
	for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
		r, err := decodeRevision(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Routes returns the route index of revision n sorted by Words, or nil,
// nil if there is no such revision.
func (tx *Tx) Routes(n uint64) ([]*Route, error) {
	routes, err := tx.bucket(bucketRoutes)
	if err != nil {
		return nil, err
	}
	rb := routes.Bucket(u64key(n))
	if rb == nil {
		revs, err := tx.bucket(bucketRevisions)
		if err != nil {
			return nil, err
		}
		if revs.Get(u64key(n)) != nil {
			return nil, &CorruptError{Bucket: string(bucketRoutes), Key: fmt.Sprint(n), Err: errors.New("the revision has no route index")}
		}
		return nil, nil
	}
	out := []*Route{}
	err = rb.ForEach(func(k, v []byte) error {
		rt, err := decodeRoute(n, k, v)
		if err != nil {
			return err
		}
		out = append(out, rt)
		return nil
	})
	return out, err
}

// activeRoutes returns the route bucket of the active revision, nil when
// there is no active revision. It decodes nothing.
func (tx *Tx) activeRoutes() (*bolt.Bucket, uint64, error) {
	n, err := tx.ActiveNumber()
	if err != nil || n == 0 {
		return nil, 0, err
	}
	routes, err := tx.bucket(bucketRoutes)
	if err != nil {
		return nil, 0, err
	}
	rb := routes.Bucket(u64key(n))
	if rb == nil {
		return nil, 0, &CorruptError{Bucket: string(bucketRoutes), Key: fmt.Sprint(n), Err: errors.New("the active revision has no route index")}
	}
	return rb, n, nil
}

// ResolveRoute finds the longest route of the active revision whose words
// are a prefix of words, and returns it with the number of words it
// consumed; the rest are the command's arguments. It returns nil, 0, nil
// when no route matches (a group word alone is not a route: see
// RoutesWithPrefix) or when no revision is active.
//
// It reads the active pointer and at most MaxRouteWords keys of the
// active route index and decodes one route record, so its cost does not
// grow with the number of routes. Scanning stops at the first word that
// cannot be a route word (empty, containing a space or control
// character, or starting with "-").
func (tx *Tx) ResolveRoute(words []string) (*Route, int, error) {
	rb, n, err := tx.activeRoutes()
	if err != nil || rb == nil {
		return nil, 0, err
	}
	var ends [MaxRouteWords]int
	key := make([]byte, 0, 128)
	count := 0
	for count < len(words) && count < MaxRouteWords {
		w := words[count]
		if len(key)+1+len(w) > MaxRouteKey || !checkRouteWord(w) {
			break
		}
		if count > 0 {
			key = append(key, ' ')
		}
		key = append(key, w...)
		ends[count] = len(key)
		count++
	}
	for i := count; i >= 1; i-- {
		k := key[:ends[i-1]]
		if v := rb.Get(k); v != nil {
			rt, err := decodeRoute(n, k, v)
			if err != nil {
				return nil, 0, err
			}
			return rt, i, nil
		}
	}
	return nil, 0, nil
}

// RoutesWithPrefix returns the active revision's routes whose words start
// with the words of prefix (the route equal to prefix included), sorted
// by Words. An empty prefix returns every route. It is the listing for a
// group's help.
func (tx *Tx) RoutesWithPrefix(prefix []string) ([]*Route, error) {
	for _, w := range prefix {
		if !checkRouteWord(w) {
			return nil, nil
		}
	}
	rb, n, err := tx.activeRoutes()
	if err != nil || rb == nil {
		return nil, err
	}
	p := []byte(strings.Join(prefix, " "))
	var out []*Route
	if len(p) > 0 {
		if v := rb.Get(p); v != nil {
			rt, err := decodeRoute(n, p, v)
			if err != nil {
				return nil, err
			}
			out = append(out, rt)
		}
		p = append(p, ' ')
	}
	c := rb.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		rt, err := decodeRoute(n, k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, nil
}

func decodeRevision(key, data []byte) (*Revision, error) {
	r, err := decodeRevisionRec(key, data)
	if err != nil {
		return nil, &CorruptError{Bucket: string(bucketRevisions), Key: printKey(key), Err: err}
	}
	return r, nil
}

func decodeRevisionRec(key, data []byte) (*Revision, error) {
	if data == nil {
		return nil, errors.New("a bucket where a record was expected")
	}
	n, ok := keyU64(key)
	if !ok || n == 0 {
		return nil, errors.New("key is not a revision number")
	}
	if err := checkMap(data); err != nil {
		return nil, err
	}
	rec, err := decode[revisionRec](data)
	if err != nil {
		return nil, err
	}
	r := &Revision{
		Number: n, Parent: rec.Parent, Hash: rec.Hash, Profile: rec.Profile,
		Keys: rec.Keys, Created: fromNanos(rec.Created), Op: rec.Op, By: rec.By,
	}
	if len(rec.Packages) > 0 {
		r.Packages = make([]ActivePackage, len(rec.Packages))
		for i, p := range rec.Packages {
			r.Packages[i] = ActivePackage(p)
		}
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	if r.Parent >= r.Number {
		return nil, fmt.Errorf("parent %d is not older than the revision", r.Parent)
	}
	return r, nil
}

// routeCount reads the number of routes a revision record declares.
func routeCount(data []byte) (uint64, error) {
	rec, err := decode[revisionRec](data)
	if err != nil {
		return 0, err
	}
	return rec.Routes, nil
}

func decodeRoute(rev uint64, key, data []byte) (*Route, error) {
	rt, err := decodeRouteRec(key, data)
	if err != nil {
		return nil, &CorruptError{Bucket: fmt.Sprintf("%s/%d", bucketRoutes, rev), Key: fmt.Sprintf("%q", key), Err: err}
	}
	return rt, nil
}

func decodeRouteRec(key, data []byte) (*Route, error) {
	if data == nil {
		return nil, errors.New("a bucket where a record was expected")
	}
	if err := checkMap(data); err != nil {
		return nil, err
	}
	rec, err := decode[routeRec](data)
	if err != nil {
		return nil, err
	}
	rt := &Route{Words: string(key), Identity: rec.Identity, Digest: rec.Digest, Command: rec.Command, Alias: rec.Alias, Summary: rec.Summary}
	if err := rt.check(); err != nil {
		return nil, err
	}
	return rt, nil
}
