package store

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Name is a package name held for a publisher: the publisher whose
// release of it was installed first, or whom the owner let take it over.
// It outlives the package's releases — removing every one of them does
// not free the name — so that another publisher's release of it never
// installs unasked and inherits the profile's rules for it. Only the
// owner releases it (DeleteName).
type Name struct {
	Package   string // the key
	Publisher string
	Since     time.Time
	By        int // uid of the owner whose install bound it
}

func (n *Name) check() error {
	var errs problems
	errs.add(
		checkText("package", n.Package, true, maxName),
		checkText("publisher", n.Publisher, true, maxName))
	if n.By < 0 {
		errs.add(fmt.Errorf("bound-by uid %d is negative", n.By))
	}
	return errs.err()
}

// PutName binds n.Package to n.Publisher, replacing any binding.
func (tx *Tx) PutName(n *Name) error {
	if err := n.check(); err != nil {
		return fmt.Errorf("put name: %w", err)
	}
	b, err := tx.bucket(bucketNames)
	if err != nil {
		return err
	}
	data, err := encode(&nameRec{Publisher: n.Publisher, Since: nanos(n.Since), By: n.By})
	if err != nil {
		return err
	}
	return b.Put([]byte(n.Package), data)
}

// Name returns the binding of pkg, or nil, nil if none holds it.
func (tx *Tx) Name(pkg string) (*Name, error) {
	b, err := tx.bucket(bucketNames)
	if err != nil {
		return nil, err
	}
	data := b.Get([]byte(pkg))
	if data == nil {
		return nil, nil
	}
	return decodeName([]byte(pkg), data)
}

// Names returns every held name, sorted by package.
func (tx *Tx) Names() ([]*Name, error) {
	b, err := tx.bucket(bucketNames)
	if err != nil {
		return nil, err
	}
	var out []*Name
	err = b.ForEach(func(k, v []byte) error {
		n, err := decodeName(k, v)
		if err == nil {
			out = append(out, n)
		}
		return err
	})
	return out, err
}

// DeleteName releases pkg's name and reports whether it was held.
func (tx *Tx) DeleteName(pkg string) (bool, error) {
	b, err := tx.bucket(bucketNames)
	if err != nil {
		return false, err
	}
	if b.Get([]byte(pkg)) == nil {
		return false, nil
	}
	return true, b.Delete([]byte(pkg))
}

func decodeName(key, data []byte) (*Name, error) {
	n, err := decodeNameRec(key, data)
	if err != nil {
		return nil, &CorruptError{Bucket: string(bucketNames), Key: fmt.Sprintf("%q", key), Err: err}
	}
	return n, nil
}

func decodeNameRec(key, data []byte) (*Name, error) {
	if data == nil {
		return nil, fmt.Errorf("a bucket where a record was expected")
	}
	if err := checkMap(data); err != nil {
		return nil, err
	}
	rec, err := decode[nameRec](data)
	if err != nil {
		return nil, err
	}
	n := &Name{Package: string(key), Publisher: rec.Publisher, Since: fromNanos(rec.Since), By: rec.By}
	if err := n.check(); err != nil {
		return nil, err
	}
	return n, nil
}

// createV2 adds the names bucket and holds the name of every package
// with an installed release for its publisher — of the release installed
// last when several publishers' are (the owner let the last one take it
// over). A store of version 1 knew a package's publisher only from its
// installed releases, so a package whose releases were all removed holds
// no name: there is nothing to recover for it. A release record that does
// not decode is left to Check.
func createV2(tx *bolt.Tx) error {
	names, err := tx.CreateBucket(bucketNames)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketNames, err)
	}
	var rels []*Release
	_ = tx.Bucket(bucketReleases).ForEach(func(k, v []byte) error {
		if r, err := decodeReleaseRec(k, v); err == nil {
			rels = append(rels, r)
		}
		return nil
	})
	slices.SortFunc(rels, func(a, b *Release) int {
		return cmp.Or(a.InstalledAt.Compare(b.InstalledAt), cmp.Compare(a.Digest, b.Digest))
	})
	latest := map[string]*Release{}
	for _, r := range rels {
		latest[r.Package] = r
	}
	for pkg, r := range latest {
		data, err := encode(&nameRec{Publisher: r.Publisher, Since: nanos(r.InstalledAt), By: r.InstalledBy})
		if err != nil {
			return err
		}
		if err := names.Put([]byte(pkg), data); err != nil {
			return err
		}
	}
	return nil
}
