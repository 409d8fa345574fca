package trust

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// Keyring is the owner's trusted keys, by publisher.
type Keyring interface {
	// Keys returns the keys trusted to sign for publisher, or none.
	Keys(publisher string) []PublicKey
}

// KeyMap is a Keyring held in memory.
type KeyMap map[string][]PublicKey

// Keys implements Keyring.
func (k KeyMap) Keys(publisher string) []PublicKey { return k[publisher] }

// Release is a release directory Verify accepted.
type Release struct {
	Dir        string
	Manifest   *Manifest
	Signature  *Signature // rukh-release.sig as read; nil if the release is unsigned
	Descriptor *descriptor.Descriptor
	Key        PublicKey // the trusted key Signature verified under; nil if accepted by pin alone
	Pinned     bool      // accepted because the pin named its digest
}

// Digest returns the release digest, Manifest.Digest().
func (r *Release) Digest() string { return r.Manifest.Digest() }

// Verify checks the release directory dir and decides whether to trust
// it. A directory with rukh-release.json must hold exactly the files its
// manifest lists, and the manifest must agree with the descriptor; a
// directory without one is an unsigned working directory, described by
// BuildManifest. The release is accepted when pin is "" and the signature
// is the descriptor publisher's, made by a key keys trusts for that
// publisher; or when pin ("sha256:" and 64 lowercase hex digits) equals
// the release digest. Every refusal is an *Error.
func Verify(dir string, keys Keyring, pin string) (*Release, error) {
	if pin != "" && !descriptor.ValidDigest(pin) {
		return nil, refuse(CodeBadPin, "", "pin %q is not \"sha256:\" and 64 lowercase hex digits; copy the digest %s printed", pin, cliname.Name())
	}
	rel, err := open(dir)
	if err != nil {
		return nil, err
	}
	m, d, sig := rel.Manifest, rel.Descriptor, rel.Signature
	digest := m.Digest()
	if pin != "" {
		if pin != digest {
			return nil, refuse(CodePinMismatch, "", "release %s %s has digest %s, not the pinned %s; check that you named the right release",
				m.Package, m.Version, digest, pin)
		}
		rel.Pinned = true
		if sig != nil && sig.Publisher == d.Publisher {
			if k := keyByID(keys, d.Publisher, sig.Key); k != nil && sig.verify(m, k) {
				rel.Key = k
			}
		}
		return rel, nil
	}
	if sig == nil {
		return nil, refuse(CodeUnsigned, "", "release %s %s by %q is not signed (digest %s); "+
			"sign it with "+cliname.Cmd("ext pack --key")+", or pass --pin %s to trust this exact release for local development",
			m.Package, m.Version, m.Publisher, digest, digest)
	}
	if sig.Publisher != d.Publisher {
		return nil, refuse(CodePublisherMismatch, SignatureName, "signed for publisher %q, but the descriptor's publisher is %q; the publisher must sign its own releases",
			sig.Publisher, d.Publisher)
	}
	if len(trustedKeys(keys, d.Publisher)) == 0 {
		return nil, refuse(CodeUnknownPublisher, "", "no key is trusted for publisher %q; if you trust it, run "+cliname.Cmd("trust add %s KEY.pub")+" with its public key",
			d.Publisher, d.Publisher)
	}
	k := keyByID(keys, d.Publisher, sig.Key)
	if k == nil {
		return nil, refuse(CodeKeyMismatch, SignatureName, "signed by key %s, which is not trusted for publisher %q; get the publisher's current key and run "+cliname.Cmd("trust add %s KEY.pub"),
			sig.Key, d.Publisher, d.Publisher)
	}
	if !sig.verify(m, k) {
		return nil, refuse(CodeBadSignature, SignatureName, "the signature does not match the manifest; the release was altered or damaged, so get it again from its publisher")
	}
	rel.Key = k
	return rel, nil
}

func trustedKeys(keys Keyring, publisher string) []PublicKey {
	if keys == nil {
		return nil
	}
	return keys.Keys(publisher)
}

func keyByID(keys Keyring, publisher, id string) PublicKey {
	for _, k := range trustedKeys(keys, publisher) {
		if len(k) == 32 && k.ID() == id {
			return k
		}
	}
	return nil
}

// open reads the release in dir and checks it is whole and consistent,
// without deciding trust.
func open(dir string) (*Release, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open release directory: %w", err)
	}
	defer root.Close()
	mdata, err := readDoc(root, ManifestName, limits.manifestBytes)
	if err != nil {
		return nil, err
	}
	sdata, err := readDoc(root, SignatureName, limits.signatureBytes)
	if err != nil {
		return nil, err
	}
	rel := &Release{Dir: dir}
	if mdata == nil {
		if sdata != nil {
			return nil, refuse(CodeBadManifest, ManifestName, "the release has %s but no %s; repack it with "+cliname.Cmd("ext pack"), SignatureName, ManifestName)
		}
		rel.Manifest, rel.Descriptor, err = buildManifest(dir)
		if err != nil {
			return nil, err
		}
		return rel, nil
	}
	if rel.Manifest, err = ParseManifest(mdata); err != nil {
		return nil, err
	}
	if sdata != nil {
		if rel.Signature, err = ParseSignature(sdata); err != nil {
			return nil, err
		}
	}
	files, _, err := walkFiles(root, nil) // exactly as signed
	if err != nil {
		return nil, err
	}
	if e := compareFiles(rel.Manifest.Files, files); e != nil {
		return nil, e
	}
	if rel.Descriptor, err = loadDescriptor(dir); err != nil {
		return nil, err
	}
	m, d := rel.Manifest, rel.Descriptor
	for _, f := range []struct{ name, manifest, descriptor string }{
		{"package", m.Package, d.Package}, {"version", m.Version, d.Version}, {"publisher", m.Publisher, d.Publisher},
	} {
		if f.manifest != f.descriptor {
			return nil, refuse(CodeManifestMismatch, ManifestName, "the manifest's %s is %q but the descriptor's is %q; repack the release with "+cliname.Cmd("ext pack"),
				f.name, f.manifest, f.descriptor)
		}
	}
	return rel, nil
}

// readDoc reads the release document name at the root, or returns nil
// when there is none.
func readDoc(root *os.Root, name string, limit int64) ([]byte, error) {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if e := checkFileMode(name, fi.Mode()); e != nil {
		return nil, e
	}
	if fi.IsDir() {
		return nil, refuse(CodeUnsafePath, name, "is a directory; it must be the release's own document")
	}
	if fi.Size() > limit {
		return nil, refuse(CodeTooLarge, name, "file is %d bytes; the limit is %d", fi.Size(), limit)
	}
	var buf bytes.Buffer
	if _, err := hashFile(root, name, fi, &buf); err != nil {
		return nil, err
	}
	return append([]byte{}, buf.Bytes()...), nil
}

// compareFiles requires the files found to be exactly those the manifest
// lists. A missing file is reported first, then an added one, then a
// changed one.
func compareFiles(want, got []File) *Error {
	const again = "; the release changed after it was signed, so get it again from its publisher"
	inGot := make(map[string]File, len(got))
	for _, f := range got {
		inGot[f.Path] = f
	}
	inWant := make(map[string]bool, len(want))
	for _, f := range want {
		inWant[f.Path] = true
	}
	var added []string
	for _, f := range got {
		if !inWant[f.Path] {
			added = append(added, f.Path)
		}
	}
	for _, f := range want {
		if _, ok := inGot[f.Path]; !ok {
			hint := ""
			if len(added) > 0 {
				hint = fmt.Sprintf(" (the release has %q instead, which the manifest does not list)", added[0])
			}
			return refuse(CodeFileMissing, f.Path, "the manifest lists this file but the release does not have it%s%s", hint, again)
		}
	}
	if len(added) > 0 {
		return refuse(CodeFileAdded, added[0], "the release has this file but the manifest does not list it"+again)
	}
	for _, f := range want {
		g := inGot[f.Path]
		switch {
		case g.Size != f.Size:
			return refuse(CodeFileChanged, f.Path, "file is %d bytes, the manifest says %d%s", g.Size, f.Size, again)
		case g.Mode != f.Mode:
			return refuse(CodeFileChanged, f.Path, "file mode is %s, the manifest says %s%s", g.Mode, f.Mode, again)
		case g.SHA256 != f.SHA256:
			return refuse(CodeFileChanged, f.Path, "file content differs from the manifest (sha256 %s, expected %s)%s", g.SHA256, f.SHA256, again)
		}
	}
	return nil
}
