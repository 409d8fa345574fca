package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// digest is a well-formed digest derived from s.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

// release is a valid release of pkg at version.
func release(pkg, version string) *store.Release {
	return &store.Release{
		Digest:      digest(pkg + "@" + version),
		Package:     pkg,
		Version:     version,
		Publisher:   "acme",
		Dir:         "/var/lib/rukh/releases/" + pkg + "-" + version,
		SignedBy:    digest("acme-key"),
		InstalledAt: t0,
		InstalledBy: 1000,
		Descriptor:  []byte(`{"schema":"rukh.extension/2","package":"` + pkg + `"}`),
	}
}

// key is a valid trusted key of publisher named by seed.
func key(publisher, seed string) *store.Key {
	pub := sha256.Sum256([]byte(seed))
	return &store.Key{Publisher: publisher, ID: digest(seed), Public: pub[:], AddedAt: t0, AddedBy: 1000}
}

// candidate builds a revision on parent that activates rels, with one
// route per word list in routes (each pointing at rels[0] unless the
// route's first word names another package's last segment).
func candidate(parent uint64, op string, rels []*store.Release, routes ...string) *store.Revision {
	r := &store.Revision{
		Parent:  parent,
		Hash:    digest(fmt.Sprint(parent, op, len(rels), routes)),
		Profile: []byte(`{"endpointNamespace":"team"}`),
		Keys:    []string{"acme/" + digest("acme-key")},
		Created: t0.Add(time.Duration(parent) * time.Minute),
		Op:      op,
		By:      1000,
	}
	for _, rel := range rels {
		r.Packages = append(r.Packages, store.ActivePackage{Package: rel.Package, Version: rel.Version, Digest: rel.Digest})
	}
	slices.SortFunc(r.Packages, func(a, b store.ActivePackage) int { return strings.Compare(a.Package, b.Package) })
	for i, words := range routes {
		owner := rels[0]
		for _, rel := range rels {
			if strings.HasSuffix(rel.Package, "."+strings.Fields(words)[0]) {
				owner = rel
			}
		}
		r.Routes = append(r.Routes, store.Route{
			Words: words, Identity: owner.Package + "/" + strings.ReplaceAll(words, " ", "-"),
			Digest: owner.Digest, Command: i, Summary: "does " + words,
		})
	}
	return r
}

// mustUpdate runs fn in a write transaction and fails the test on error.
func mustUpdate(t testing.TB, s *store.Store, fn func(*store.Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// publish stores rels and publishes a candidate built on the active
// revision; it returns the new revision number.
func publish(t testing.TB, s *store.Store, op string, rels []*store.Release, routes ...string) uint64 {
	t.Helper()
	var n uint64
	mustUpdate(t, s, func(tx *store.Tx) error {
		for _, r := range rels {
			if err := tx.PutRelease(r); err != nil {
				return err
			}
		}
		parent, err := tx.ActiveNumber()
		if err != nil {
			return err
		}
		n, err = tx.PublishRevision(candidate(parent, op, rels, routes...))
		return err
	})
	return n
}

// openPath opens a store at a fresh path in t.TempDir() without the
// storetest cleanup (for tests that break the store on purpose).
func openPath(t testing.TB) (string, *store.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rukh.db")
	s, err := store.Open(path, store.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return path, s
}

// rawUpdate changes the closed store file at path with bbolt directly.
func rawUpdate(t testing.TB, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// u64 is an 8-byte big-endian key.
func u64(n uint64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	return b
}

func asCorrupt(err error) bool {
	var ce *store.CorruptError
	return errors.As(err, &ce)
}
