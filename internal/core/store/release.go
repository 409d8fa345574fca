package store

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Release is an installed release. Its directory is content-addressed
// and read-only; Digest is its identity.
type Release struct {
	Digest      string // "sha256:<hex>", the key
	Package     string
	Version     string
	Publisher   string
	Dir         string // absolute path of the installed, read-only release directory
	SignedBy    string // key id ("sha256:<hex>"), or "" for a pinned, unsigned release
	Pinned      bool
	InstalledAt time.Time
	InstalledBy int    // uid
	Descriptor  []byte // raw rukh-extension.json
	// Source is where the release was fetched from, or nil for one
	// installed from a local file or directory.
	Source *Source
}

// Source is the remote reference a release was installed from (`ext
// install oci://…|https://…`), what `ext outdated` and `ext upgrade`
// ask again (docs/adr/0016-release-sources.md).
type Source struct {
	// Ref is the reference as given: oci://HOST/REPO:TAG,
	// oci://HOST/REPO@sha256:HEX or https://….
	Ref string
	// Resolved is the digest that was fetched: the OCI manifest's, or the
	// sha256 of the archive an https URL served.
	Resolved string
	// Fixed: installed by digest or with --pin; `ext upgrade` moves it
	// only when named with a new reference.
	Fixed bool
	// PlainHTTP: fetched with --plain-http from a registry that is not on
	// a loopback address; asked again the same way.
	PlainHTTP bool
}

// maxRef bounds a stored source reference.
const maxRef = 4096

func (s *Source) check() error {
	var errs problems
	errs.add(checkText("source reference", s.Ref, true, maxRef), checkDigest("source digest", s.Resolved))
	return errs.err()
}

func (r *Release) check() error {
	var errs problems
	errs.add(
		checkDigest("digest", r.Digest),
		checkText("package", r.Package, true, maxName),
		checkText("version", r.Version, true, maxName),
		checkText("publisher", r.Publisher, true, maxName),
		checkText("dir", r.Dir, true, 4096),
	)
	if r.Dir != "" && !filepath.IsAbs(r.Dir) {
		errs.add(fmt.Errorf("dir %q is not an absolute path", r.Dir))
	}
	if r.SignedBy != "" {
		errs.add(checkDigest("signed-by key id", r.SignedBy))
	}
	if r.InstalledBy < 0 {
		errs.add(fmt.Errorf("installed-by uid %d is negative", r.InstalledBy))
	}
	if len(r.Descriptor) == 0 {
		errs.add(errors.New("descriptor is empty"))
	}
	if r.Source != nil {
		errs.add(r.Source.check())
	}
	return errs.err()
}

// PutRelease adds or replaces the release with r.Digest.
func (tx *Tx) PutRelease(r *Release) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("put release: %w", err)
	}
	b, err := tx.bucket(bucketReleases)
	if err != nil {
		return err
	}
	rec := &releaseRec{
		Package: r.Package, Version: r.Version, Publisher: r.Publisher, Dir: r.Dir,
		SignedBy: r.SignedBy, Pinned: r.Pinned,
		InstalledAt: nanos(r.InstalledAt), InstalledBy: r.InstalledBy,
		Descriptor: r.Descriptor,
	}
	if s := r.Source; s != nil {
		rec.Source = &sourceRec{Ref: s.Ref, Resolved: s.Resolved, Fixed: s.Fixed, PlainHTTP: s.PlainHTTP}
	}
	data, err := encode(rec)
	if err != nil {
		return err
	}
	return b.Put([]byte(r.Digest), data)
}

// Release returns the release with digest, or nil, nil if there is none.
func (tx *Tx) Release(digest string) (*Release, error) {
	b, err := tx.bucket(bucketReleases)
	if err != nil {
		return nil, err
	}
	data := b.Get([]byte(digest))
	if data == nil {
		return nil, nil
	}
	return decodeRelease([]byte(digest), data)
}

// Releases returns every release, sorted by package, then installation
// time, then digest. (Version order is semantic and left to the caller.)
func (tx *Tx) Releases() ([]*Release, error) {
	b, err := tx.bucket(bucketReleases)
	if err != nil {
		return nil, err
	}
	var out []*Release
	err = b.ForEach(func(k, v []byte) error {
		r, err := decodeRelease(k, v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *Release) int {
		return cmp.Or(
			cmp.Compare(a.Package, b.Package),
			a.InstalledAt.Compare(b.InstalledAt),
			cmp.Compare(a.Digest, b.Digest))
	})
	return out, nil
}

// DeleteRelease removes the release with digest; removing one that is
// not there is not an error. A release that the active revision uses is
// refused with *InUseError.
func (tx *Tx) DeleteRelease(digest string) error {
	b, err := tx.bucket(bucketReleases)
	if err != nil {
		return err
	}
	if b.Get([]byte(digest)) == nil {
		return nil
	}
	active, err := tx.ActiveRevision()
	if err != nil {
		return err
	}
	if active != nil {
		for _, p := range active.Packages {
			if p.Digest == digest {
				return &InUseError{Digest: digest, Revision: active.Number}
			}
		}
	}
	return b.Delete([]byte(digest))
}

func decodeRelease(key, data []byte) (*Release, error) {
	r, err := decodeReleaseRec(key, data)
	if err != nil {
		return nil, &CorruptError{Bucket: string(bucketReleases), Key: fmt.Sprintf("%q", key), Err: err}
	}
	return r, nil
}

func decodeReleaseRec(key, data []byte) (*Release, error) {
	if data == nil {
		return nil, errors.New("a bucket where a record was expected")
	}
	if err := checkMap(data); err != nil {
		return nil, err
	}
	rec, err := decode[releaseRec](data)
	if err != nil {
		return nil, err
	}
	r := &Release{
		Digest: string(key), Package: rec.Package, Version: rec.Version, Publisher: rec.Publisher,
		Dir: rec.Dir, SignedBy: rec.SignedBy, Pinned: rec.Pinned,
		InstalledAt: fromNanos(rec.InstalledAt), InstalledBy: rec.InstalledBy,
		Descriptor: rec.Descriptor,
	}
	if s := rec.Source; s != nil {
		r.Source = &Source{Ref: s.Ref, Resolved: s.Resolved, Fixed: s.Fixed, PlainHTTP: s.PlainHTTP}
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// checkMap requires data to start with a definite-length CBOR map, the
// shape of every record (so null or a bare number is not a record).
func checkMap(data []byte) error {
	if len(data) == 0 || data[0]>>5 != 5 {
		return errors.New("not a CBOR map")
	}
	return nil
}
