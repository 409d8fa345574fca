package store_test

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// A held name is kept apart from its releases: deleting every release
// of the package leaves it, and only DeleteName releases it.
func TestNameOutlivesReleases(t *testing.T) {
	_, s := openPath(t)
	defer s.Close()
	rel := release("rt.attack", "1.0.0")
	mustUpdate(t, s, func(tx *store.Tx) error {
		if err := tx.PutRelease(rel); err != nil {
			return err
		}
		return tx.PutName(&store.Name{Package: "rt.attack", Publisher: "acme", Since: t0, By: 1000})
	})
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.DeleteRelease(rel.Digest) })
	mustUpdate(t, s, func(tx *store.Tx) error {
		n, err := tx.Name("rt.attack")
		if err != nil || n == nil || n.Publisher != "acme" || !n.Since.Equal(t0) || n.By != 1000 {
			t.Errorf("after removing every release: %+v, %v; want held for acme", n, err)
		}
		names, err := tx.Names()
		if err != nil || len(names) != 1 {
			t.Errorf("names: %v, %v", names, err)
		}
		if ok, err := tx.DeleteName("rt.attack"); !ok || err != nil {
			t.Errorf("delete: %v, %v", ok, err)
		}
		if ok, err := tx.DeleteName("rt.attack"); ok || err != nil {
			t.Errorf("delete again: %v, %v", ok, err)
		}
		n, err = tx.Name("rt.attack")
		if n != nil || err != nil {
			t.Errorf("after DeleteName: %+v, %v", n, err)
		}
		return nil
	})
	if err := storetest.Check(s); err != nil {
		t.Error(err)
	}
}

// A store written before names were kept (schema version 1: no names
// bucket) opens — read-write, and read-only through Files, which
// migrates it first — and its installed packages hold their names for
// the publisher of the release installed last. A package whose releases
// were all removed then holds none: version 1 did not know it.
func TestOpenVersion1Store(t *testing.T) {
	for _, how := range []string{"read-write", "Files.View"} {
		t.Run(how, func(t *testing.T) {
			path, s := openPath(t)
			a := release("acme.deploy", "1.0.0")
			b := release("acme.deploy", "1.1.0")
			b.Publisher, b.InstalledAt = "newco", t0.Add(time.Hour)
			mustUpdate(t, s, func(tx *store.Tx) error {
				for _, r := range []*store.Release{b, a, release("acme.greet", "0.1.0")} {
					if err := tx.PutRelease(r); err != nil {
						return err
					}
				}
				return nil
			})
			s.Close()
			// What a version 1 build wrote: no names bucket, version 1.
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				if err := tx.DeleteBucket([]byte("names")); err != nil {
					return err
				}
				return tx.Bucket([]byte("meta")).Put([]byte("schema"), u64(1))
			})
			var names []*store.Name
			read := func(tx *store.Tx) error {
				var err error
				names, err = tx.Names()
				return err
			}
			if how == "read-write" {
				s, err := store.Open(path, store.Options{Timeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if err := s.View(read); err != nil {
					t.Fatal(err)
				}
				if err := storetest.Check(s); err != nil {
					t.Error(err)
				}
			} else if err := (store.Files{Path: path, Timeout: time.Second}).View(read); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, n := range names {
				got[n.Package] = n.Publisher
			}
			if len(got) != 2 || got["acme.deploy"] != "newco" || got["acme.greet"] != "acme" {
				t.Errorf("names after migrating: %v; want acme.deploy held for newco (installed last), acme.greet for acme", got)
			}
		})
	}
}
