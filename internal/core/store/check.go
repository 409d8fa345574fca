package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// maxCheckErrors bounds how many problems Check reports.
const maxCheckErrors = 100

// Check verifies the store in this transaction: bbolt's own page-level
// consistency, then Rukh's invariants. Every record decodes; the schema
// version is current and the secret is present; revision numbers are
// 1..N without gaps and each parent is older; the active pointer names an
// existing revision (and exists once any revision does); the active
// revision's packages name installed releases; every route index belongs
// to an existing revision, has the size its record declares, and points
// only at that revision's packages; audit sequence numbers are 1..M
// without gaps. It returns nil or all problems found (up to 100),
// joined.
//
// The pages are first checked with plain reads of the file (every page
// pointer inside the file, every key and value inside its page, no page
// reached twice), because bbolt's check runs in a goroutine of its own
// where a fault on a damaged pointer would crash the process, and loops
// on a cycle; bbolt's check runs only on a file that passed.
//
// What it finds is a *CorruptError for the store, listing the problems.
func (tx *Tx) Check() error {
	if err := tx.check(); err != nil {
		return &CorruptError{Path: tx.s.path, Err: err}
	}
	return nil
}

func (tx *Tx) check() error {
	c := &checker{}
	if err := tx.checkPages(); err != nil {
		c.add(err)
		return c.err()
	}
	for err := range tx.tx.Check() {
		c.add(fmt.Errorf("bbolt: %w", err))
	}
	tx.checkBuckets(c)
	if len(c.errs) > 0 {
		return c.err()
	}
	tx.checkMeta(c)
	releases := tx.checkReleases(c)
	tx.checkTrust(c)
	tx.checkNames(c)
	revs := tx.checkRevisions(c)
	tx.checkActive(c, revs, releases)
	tx.checkRoutes(c, revs)
	tx.checkAudit(c)
	return c.err()
}

// checkPages checks every page of the file with plain reads, from the
// meta page bbolt uses, and reports a damaged meta page too (bbolt falls
// back to the other one, losing the last transaction).
func (tx *Tx) checkPages() error {
	f, err := os.Open(tx.s.path)
	if err != nil {
		return fmt.Errorf("read the store file: %w", err)
	}
	defer f.Close()
	if err := checkFile(f, true, true); err != nil {
		return fmt.Errorf("pages: %w", err)
	}
	return nil
}

// Check runs Tx.Check in a read-only transaction.
func (s *Store) Check() error {
	return s.View(func(tx *Tx) error { return tx.Check() })
}

type checker struct {
	errs    []error
	dropped int
}

func (c *checker) add(err error) {
	if len(c.errs) < maxCheckErrors {
		c.errs = append(c.errs, err)
	} else {
		c.dropped++
	}
}

func (c *checker) addf(format string, args ...any) { c.add(fmt.Errorf(format, args...)) }

func (c *checker) err() error {
	if c.dropped > 0 {
		return errors.Join(append(c.errs, fmt.Errorf("and %d more problems", c.dropped))...)
	}
	return errors.Join(c.errs...)
}

func (tx *Tx) checkBuckets(c *checker) {
	for _, name := range topBuckets {
		if tx.tx.Bucket(name) == nil {
			c.addf("bucket %s is missing", name)
		}
	}
	_ = tx.tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if !slices.ContainsFunc(topBuckets, func(b []byte) bool { return bytes.Equal(b, name) }) {
			c.addf("unexpected top-level bucket %q", name)
		}
		return nil
	})
}

func (tx *Tx) checkMeta(c *checker) {
	meta := tx.tx.Bucket(bucketMeta)
	if v, ok := keyU64(meta.Get(keySchema)); !ok || v != SchemaVersion {
		c.addf("meta: schema version is %x, want %d", meta.Get(keySchema), SchemaVersion)
	}
	if n := len(meta.Get(keySecret)); n != secretSize {
		c.addf("meta: secret has %d bytes, want %d", n, secretSize)
	}
	if _, ok := keyU64(meta.Get(keyCreated)); !ok {
		c.addf("meta: creation time is missing or malformed")
	}
}

func (tx *Tx) checkReleases(c *checker) map[string]bool {
	have := map[string]bool{}
	_ = tx.tx.Bucket(bucketReleases).ForEach(func(k, v []byte) error {
		if _, err := decodeRelease(k, v); err != nil {
			c.add(err)
		} else {
			have[string(k)] = true
		}
		return nil
	})
	return have
}

func (tx *Tx) checkTrust(c *checker) {
	_ = tx.tx.Bucket(bucketTrust).ForEach(func(k, v []byte) error {
		if _, err := decodeKey(k, v); err != nil {
			c.add(err)
		}
		return nil
	})
}

func (tx *Tx) checkNames(c *checker) {
	_ = tx.tx.Bucket(bucketNames).ForEach(func(k, v []byte) error {
		if _, err := decodeName(k, v); err != nil {
			c.add(err)
		}
		return nil
	})
}

// revInfo is what the later checks need of a revision.
type revInfo struct {
	rev    *Revision
	routes uint64
}

func (tx *Tx) checkRevisions(c *checker) map[uint64]revInfo {
	revs := map[uint64]revInfo{}
	var want uint64 = 1
	_ = tx.tx.Bucket(bucketRevisions).ForEach(func(k, v []byte) error {
		n, ok := keyU64(k)
		if !ok {
			c.addf("revisions: key %q is not a revision number", k)
			return nil
		}
		if n != want {
			c.addf("revisions: number %d follows %d; numbers must be contiguous from 1", n, want-1)
		}
		want = n + 1
		r, err := decodeRevision(k, v)
		if err != nil {
			c.add(err)
			return nil
		}
		count, _ := routeCount(v) // decodeRevision succeeded, so this does
		revs[n] = revInfo{rev: r, routes: count}
		return nil
	})
	return revs
}

func (tx *Tx) checkActive(c *checker, revs map[uint64]revInfo, releases map[string]bool) {
	active := tx.tx.Bucket(bucketActive)
	_ = active.ForEach(func(k, _ []byte) error {
		if !bytes.Equal(k, keyRevision) {
			c.addf("active: unexpected key %q", k)
		}
		return nil
	})
	n, err := activeNumber(active)
	if err != nil {
		c.add(err)
		return
	}
	last, _ := tx.tx.Bucket(bucketRevisions).Cursor().Last()
	switch {
	case n == 0 && last != nil:
		c.addf("active: no active revision although revisions exist")
	case n == 0:
	case tx.tx.Bucket(bucketRevisions).Get(u64key(n)) == nil:
		c.addf("active: the pointer names revision %d, which does not exist", n)
	default:
		info, ok := revs[n]
		if !ok {
			return // its decoding error is already reported
		}
		for _, p := range info.rev.Packages {
			if !releases[p.Digest] {
				c.addf("active revision %d: package %s %s names release %s, which is not installed", n, p.Package, p.Version, p.Digest)
			}
		}
	}
}

func (tx *Tx) checkRoutes(c *checker, revs map[uint64]revInfo) {
	routes := tx.tx.Bucket(bucketRoutes)
	seen := map[uint64]bool{}
	_ = routes.ForEach(func(k, v []byte) error {
		n, ok := keyU64(k)
		if v != nil || !ok {
			c.addf("routes: entry %s is not a revision's route index", printKey(k))
			return nil
		}
		seen[n] = true
		info, ok := revs[n]
		if !ok {
			if tx.tx.Bucket(bucketRevisions).Get(k) == nil {
				c.addf("routes: route index %d belongs to no revision", n)
			}
			return nil
		}
		digests := map[string]bool{}
		for _, p := range info.rev.Packages {
			digests[p.Digest] = true
		}
		var count uint64
		_ = routes.Bucket(k).ForEach(func(rk, rv []byte) error {
			count++
			rt, err := decodeRoute(n, rk, rv)
			if err != nil {
				c.add(err)
				return nil
			}
			if !digests[rt.Digest] {
				c.addf("routes: revision %d route %q points at release %s, which is not among its packages", n, rt.Words, rt.Digest)
			}
			return nil
		})
		if count != info.routes {
			c.addf("routes: revision %d has %d routes, its record declares %d", n, count, info.routes)
		}
		return nil
	})
	for n := range revs {
		if !seen[n] {
			c.addf("routes: revision %d has no route index", n)
		}
	}
}

func (tx *Tx) checkAudit(c *checker) {
	audit := tx.tx.Bucket(bucketAudit)
	var want uint64 = 1
	_ = audit.ForEach(func(k, v []byte) error {
		e, err := decodeAudit(k, v)
		if err != nil {
			c.add(err)
			if seq, ok := keyU64(k); ok {
				want = seq + 1
			}
			return nil
		}
		if e.Seq != want {
			c.addf("audit: sequence number %d follows %d; numbers must be contiguous from 1", e.Seq, want-1)
		}
		want = e.Seq + 1
		return nil
	})
	if seq := audit.Sequence(); seq != want-1 {
		c.addf("audit: the bucket sequence is %d but the last entry is %d", seq, want-1)
	}
}
