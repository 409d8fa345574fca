package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/mod/semver"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// The OCI artifact of a release: an image manifest (image-spec 1.1) with
// this artifact type, the empty config, and the release archive as its
// one layer.
const (
	ArtifactType   = "application/vnd.rukh.release.v1"
	LayerMediaType = "application/vnd.rukh.release.layer.v1.tar+gzip"
)

// Annotations of a release manifest: the standard ones a registry's UI
// shows, and Rukh's own. They are informational: the signed descriptor
// inside the archive decides, and an install refuses a release whose
// annotations disagree with it.
const (
	AnnotationVersion   = ocispec.AnnotationVersion // org.opencontainers.image.version
	AnnotationTitle     = ocispec.AnnotationTitle   // the package, and the layer's file name
	AnnotationVendor    = ocispec.AnnotationVendor  // the publisher
	AnnotationPackage   = "dev.rukh.release.package"
	AnnotationPublisher = "dev.rukh.release.publisher"
	AnnotationDigest    = "dev.rukh.release.digest" // the release digest (what --pin names)
	AnnotationKey       = "dev.rukh.release.key"    // the id of the key that signed it
)

// Meta is what Push writes into the annotations.
type Meta struct {
	Package, Version, Publisher, ReleaseDigest, Key string
}

// Fetched is a release archive fetched into a file.
type Fetched struct {
	// Ref is the reference fetched, with the digest it resolved to.
	Ref *Ref
	// Resolved is the digest that identifies what was fetched: the OCI
	// manifest's, or the sha256 of the archive an https URL served.
	Resolved string
	// Path is the archive, a file in the directory given to Fetch; the
	// caller removes it.
	Path string
	// Annotations of the OCI manifest (nil for https).
	Annotations map[string]string
}

// repository is the remote repository of ref, authenticated with the
// container credentials, in plain HTTP when allowed and needed.
func (c *Client) repository(ctx context.Context, ref *Ref) (*remote.Repository, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	plain, err := c.plainHTTP(ctx, ref.Registry)
	if err != nil {
		return nil, err
	}
	return &remote.Repository{
		Client: &auth.Client{Client: c.http, Credential: c.credential, Cache: auth.NewCache(),
			Header: http.Header{"User-Agent": {"rukh-release-source"}}},
		Reference:          registry.Reference{Registry: ref.Registry, Repository: ref.Repository},
		PlainHTTP:          plain,
		ManifestMediaTypes: []string{ocispec.MediaTypeImageManifest},
		TagListMaxPages:    MaxTagPages,
	}, nil
}

// plainHTTP decides how to speak to registry: HTTPS, unless --plain-http
// says otherwise, or the registry is on a loopback address and answers
// HTTPS with plain HTTP (as docker treats localhost registries).
func (c *Client) plainHTTP(ctx context.Context, reg string) (bool, error) {
	if c.PlainHTTP {
		return true, nil
	}
	if !LoopbackHost(reg) {
		return false, nil
	}
	c.mu.Lock()
	plain, known := c.plain[reg]
	c.mu.Unlock()
	if known {
		return plain, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+reg+"/v2/", nil)
	if err != nil {
		return false, err
	}
	resp, err := c.http.Do(req)
	switch {
	case err == nil:
		resp.Body.Close()
	case errors.Is(err, http.ErrSchemeMismatch) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		plain = true
	case tlsFailure(err) && !stalled(ctx):
		// A loopback server that does not answer TLS with HTTP (it
		// closes, or answers garbage): ask it in plain HTTP, as docker
		// does for localhost.
		preq, perr := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+reg+"/v2/", nil)
		if perr != nil {
			return false, perr
		}
		presp, perr := c.http.Do(preq)
		if perr != nil {
			return false, c.netError(ctx, reg, "the registry", fmt.Errorf("%w (and in plain http: %v); if it is a plain-http registry, give --plain-http", innermost(err), innermost(perr)))
		}
		presp.Body.Close()
		plain = true
	case !stalled(ctx) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		// It hung up on the TLS hello: perhaps plain HTTP, perhaps not;
		// only the owner knows.
		return false, c.netError(ctx, reg, "the registry", fmt.Errorf("%w (it closed the connection on the TLS handshake; if it is a plain-http registry, give --plain-http)", innermost(err)))
	default:
		return false, c.netError(ctx, reg, "the registry", err)
	}
	c.mu.Lock()
	c.plain[reg] = plain
	c.mu.Unlock()
	return plain, nil
}

// tlsFailure reports whether err is a TLS handshake that failed because
// the server does not speak TLS (not a certificate it refused).
func tlsFailure(err error) bool {
	var rhe tls.RecordHeaderError
	return errors.As(err, &rhe) || strings.Contains(err.Error(), "tls: first record does not look like a TLS handshake")
}

// netError classifies err of a request to host.
func (c *Client) netError(ctx context.Context, host, what string, err error) error {
	var re *RedirectError
	var ae *AuthError
	var nf *NotFoundError
	var er *errcode.ErrorResponse
	var he *HelperError
	var st *StallError
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &st):
		return st
	case stalled(ctx):
		return c.stallError(ctx, what)
	case errors.As(err, &re), errors.As(err, &ae), errors.As(err, &nf):
		if re != nil {
			return re
		}
		if ae != nil {
			return ae
		}
		return nf
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return &AuthError{Status: http.StatusUnauthorized, Host: host, Tried: c.triedFor(host)}
	case errors.As(err, &er) && (er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden):
		return &AuthError{Status: er.StatusCode, Host: host, Tried: c.triedFor(host)}
	case errors.As(err, &er) && er.StatusCode == http.StatusNotFound, errors.Is(err, errdef.ErrNotFound):
		return &NotFoundError{What: what}
	case errors.As(err, &er):
		return fmt.Errorf("%s answered HTTP %d: %v", host, er.StatusCode, er.Errors)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:") {
		return &UnreachableError{Host: host, Proxy: c.proxyFor(host), Err: innermost(err)}
	}
	return err
}

// innermost drops the url.Error wrapping, which repeats the URL.
func innermost(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Fetch fetches the release archive ref names into a new file in dir,
// within the limits and the timeout, and checks it against the digests
// it was asked by: the digest a reference names, the manifest's digest,
// the layer's digest and size. It verifies no signature: the archive
// goes to the install path like a local one.
func (c *Client) Fetch(ctx context.Context, ref *Ref, dir string) (*Fetched, error) {
	ctx, stop := c.watch(ctx)
	defer stop()
	var f *Fetched
	var err error
	if ref.Scheme == SchemeHTTPS {
		f, err = c.fetchHTTPS(ctx, ref, dir)
	} else {
		f, err = c.fetchOCI(ctx, ref, dir)
	}
	if err != nil {
		return nil, &Error{Ref: ref.Display(), Err: err}
	}
	return f, nil
}

// Resolve is the digest of the manifest ref names now, with its
// annotations, without fetching the archive.
func (c *Client) Resolve(ctx context.Context, ref *Ref) (string, map[string]string, error) {
	ctx, stop := c.watch(ctx)
	defer stop()
	repo, err := c.repository(ctx, ref)
	if err != nil {
		return "", nil, &Error{Ref: ref.Display(), Err: err}
	}
	_, m, err := c.manifest(ctx, repo, ref)
	if err != nil {
		return "", nil, &Error{Ref: ref.Display(), Err: err}
	}
	return m.digest, m.Annotations, nil
}

// receivedDigest finds the digest a registry answered in oras-go's
// "digest mismatch in Docker-Content-Digest" error.
var receivedDigest = regexp.MustCompile(`digest mismatch in Docker-Content-Digest: received "(sha256:[0-9a-f]{64})"`)

type releaseManifest struct {
	ocispec.Manifest
	digest string
}

// manifest resolves and fetches the manifest ref names and checks that
// it is a release's.
func (c *Client) manifest(ctx context.Context, repo *remote.Repository, ref *Ref) (ocispec.Descriptor, *releaseManifest, error) {
	what := "the manifest"
	desc, err := repo.Resolve(ctx, ref.reference())
	if err != nil {
		if m := receivedDigest.FindStringSubmatch(err.Error()); m != nil && ref.Digest != "" {
			return desc, nil, &DigestError{What: what, Want: ref.Digest, Got: m[1], Size: -1}
		}
		return desc, nil, c.netError(ctx, ref.Registry, what, err)
	}
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return desc, nil, &NotReleaseError{fmt.Sprintf("the manifest has media type %q, not %q", desc.MediaType, ocispec.MediaTypeImageManifest)}
	}
	if ref.Digest != "" && desc.Digest.String() != ref.Digest {
		return desc, nil, &DigestError{What: what, Want: ref.Digest, Got: desc.Digest.String(), Size: desc.Size}
	}
	if limit := c.maxManifest(); desc.Size > limit {
		return desc, nil, &TooLargeError{What: what, Size: desc.Size, Limit: limit}
	}
	rc, err := repo.Manifests().Fetch(ctx, desc)
	if err != nil {
		if strings.Contains(err.Error(), "mismatch Content-Type") {
			return desc, nil, &NotReleaseError{fmt.Sprintf("the registry served the manifest as another media type than %q", ocispec.MediaTypeImageManifest)}
		}
		return desc, nil, c.netError(ctx, ref.Registry, what, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, c.maxManifest()+1))
	if err != nil {
		return desc, nil, c.readError(ctx, ref.Registry, what, err)
	}
	if int64(len(data)) > c.maxManifest() {
		return desc, nil, &TooLargeError{What: what, Size: -1, Limit: c.maxManifest()}
	}
	if got := digest.FromBytes(data); got != desc.Digest {
		return desc, nil, &DigestError{What: what, Want: desc.Digest.String(), Got: got.String(), Size: int64(len(data))}
	}
	var m releaseManifest
	if err := json.Unmarshal(data, &m.Manifest); err != nil {
		return desc, nil, &NotReleaseError{fmt.Sprintf("the manifest is not JSON: %v", err)}
	}
	m.digest = desc.Digest.String()
	switch {
	case m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest:
		return desc, nil, &NotReleaseError{fmt.Sprintf("the manifest says media type %q, not %q", m.MediaType, ocispec.MediaTypeImageManifest)}
	case m.ArtifactType != ArtifactType:
		return desc, nil, &NotReleaseError{fmt.Sprintf("artifact type %q, not %q", m.ArtifactType, ArtifactType)}
	case len(m.Layers) != 1:
		return desc, nil, &NotReleaseError{fmt.Sprintf("%d layers; a release has exactly one, its archive", len(m.Layers))}
	case m.Layers[0].MediaType != LayerMediaType:
		return desc, nil, &NotReleaseError{fmt.Sprintf("the layer has media type %q, not %q", m.Layers[0].MediaType, LayerMediaType)}
	case m.Layers[0].Digest.Algorithm() != digest.SHA256 || m.Layers[0].Digest.Validate() != nil:
		return desc, nil, &NotReleaseError{fmt.Sprintf("the layer's digest %q is not a sha256 digest", m.Layers[0].Digest)}
	}
	return desc, &m, nil
}

func (c *Client) fetchOCI(ctx context.Context, ref *Ref, dir string) (*Fetched, error) {
	repo, err := c.repository(ctx, ref)
	if err != nil {
		return nil, err
	}
	_, m, err := c.manifest(ctx, repo, ref)
	if err != nil {
		return nil, err
	}
	layer := m.Layers[0]
	what := "the release archive " + layer.Digest.String()
	if layer.Size < 0 {
		return nil, &NotReleaseError{fmt.Sprintf("the layer declares a negative size (%d bytes)", layer.Size)}
	}
	if limit := c.maxArchive(); layer.Size > limit {
		return nil, &TooLargeError{What: what, Size: layer.Size, Limit: limit}
	}
	rc, err := repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		if strings.Contains(err.Error(), "mismatch Content-Length") || strings.Contains(err.Error(), "mismatch digest") {
			return nil, &DigestError{What: what, Want: layer.Digest.String(), Got: "another (the registry's headers say so)", Size: -1}
		}
		return nil, c.netError(ctx, ref.Registry, what, err)
	}
	defer rc.Close()
	path, got, n, err := c.save(ctx, ref.Registry, what, rc, layer.Size, dir)
	if err != nil {
		return nil, err
	}
	if got != layer.Digest.String() || n != layer.Size {
		os.Remove(path)
		return nil, &DigestError{What: what, Want: layer.Digest.String(), Got: got, Size: n}
	}
	return &Fetched{Ref: ref.WithDigest(m.digest), Resolved: m.digest, Path: path, Annotations: m.Annotations}, nil
}

// save copies at most limit bytes (want, or the archive limit when want
// is -1) of r into a new file in dir and returns its path, sha256 and
// length. A read past the limit fails; so does a stall.
func (c *Client) save(ctx context.Context, host, what string, r io.Reader, want int64, dir string) (string, string, int64, error) {
	limit := c.maxArchive()
	if want >= 0 {
		limit = min(want, limit)
	}
	f, err := os.CreateTemp(dir, ".fetch-*.tar.gz")
	if err != nil {
		return "", "", 0, err
	}
	ok := false
	defer func() {
		f.Close()
		if !ok {
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, limit+1))
	got := "sha256:" + hex.EncodeToString(h.Sum(nil))
	switch {
	case err != nil && errors.Is(err, io.ErrUnexpectedEOF) && !stalled(ctx):
		return "", "", 0, &DigestError{What: what, Want: fmt.Sprintf("%d bytes", want), Got: got + " of a body cut short", Size: n}
	case err != nil:
		return "", "", 0, c.readError(ctx, host, what, err)
	case n > limit && (want < 0 || limit < want):
		return "", "", 0, &TooLargeError{What: what, Size: -1, Limit: c.maxArchive()}
	case n > limit:
		return "", "", 0, &DigestError{What: what, Want: fmt.Sprintf("%d bytes", want), Got: "more bytes than the manifest declares", Size: n}
	}
	if err := f.Close(); err != nil {
		return "", "", 0, err
	}
	ok = true
	return f.Name(), got, n, nil
}

func (c *Client) readError(ctx context.Context, host, what string, err error) error {
	if stalled(ctx) {
		return c.stallError(ctx, "reading "+what)
	}
	return c.netError(ctx, host, what, err)
}

// Tags lists the tags of ref's repository.
func (c *Client) Tags(ctx context.Context, ref *Ref) ([]string, error) {
	ctx, stop := c.watch(ctx)
	defer stop()
	repo, err := c.repository(ctx, ref)
	if err != nil {
		return nil, &Error{Ref: ref.Display(), Err: err}
	}
	var tags []string
	err = repo.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		return nil
	})
	if err != nil {
		return nil, &Error{Ref: ref.Display(), Err: c.netError(ctx, ref.Registry, "the tag list of "+ref.Repository, err)}
	}
	return tags, nil
}

// Newest is the tag of the highest semantic version among tags (a
// leading "v" allowed), pre-releases only when pre is set; "" when none
// is a version.
func Newest(tags []string, pre bool) string {
	best := ""
	for _, t := range tags {
		v := Canonical(t)
		if v == "" || (!pre && semver.Prerelease(v) != "") {
			continue
		}
		if best == "" || semver.Compare(v, Canonical(best)) > 0 {
			best = t
		}
	}
	return best
}

// SortVersions sorts semantic-version tags, lowest first.
func SortVersions(tags []string) {
	sort.SliceStable(tags, func(i, j int) bool { return semver.Compare(Canonical(tags[i]), Canonical(tags[j])) < 0 })
}

// Canonical is a version (or a tag "vX.Y.Z") as golang.org/x/mod/semver
// reads it, or "" when it is not a full semantic version.
func Canonical(v string) string {
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) || strings.Count(strings.SplitN(strings.SplitN(v, "-", 2)[0], "+", 2)[0], ".") != 2 {
		return ""
	}
	return v
}

// Newer reports whether version a is higher than version b.
func Newer(a, b string) bool {
	ca, cb := Canonical(a), Canonical(b)
	return ca != "" && cb != "" && semver.Compare(ca, cb) > 0
}

// Push publishes the release archive at path to ref (a tag): its layer,
// the empty config and the manifest, tagged. It returns the manifest's
// digest.
func (c *Client) Push(ctx context.Context, ref *Ref, path string, meta Meta) (string, error) {
	ctx, stop := c.watch(ctx)
	defer stop()
	d, err := c.push(ctx, ref, path, meta)
	if err != nil {
		return "", &Error{Ref: ref.Display(), Err: err}
	}
	return d, nil
}

func (c *Client) push(ctx context.Context, ref *Ref, path string, meta Meta) (string, error) {
	if ref.Scheme != SchemeOCI || ref.Tag == "" || ref.Digest != "" {
		return "", errors.New("publish to a tag: oci://HOST/REPO:TAG")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Size() > c.maxArchive() {
		return "", &TooLargeError{What: "the archive", Size: fi.Size(), Limit: c.maxArchive()}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	layer := ocispec.Descriptor{
		MediaType: LayerMediaType, Digest: digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)), Size: fi.Size(),
		Annotations: map[string]string{AnnotationTitle: filepath.Base(fmt.Sprintf("%s-%s.tar.gz", meta.Package, meta.Version))},
	}
	repo, err := c.repository(ctx, ref)
	if err != nil {
		return "", err
	}
	pushBlob := func(desc ocispec.Descriptor, r func() (io.Reader, error)) error {
		ok, err := repo.Exists(ctx, desc)
		if err != nil {
			return c.netError(ctx, ref.Registry, "blob "+desc.Digest.String(), err)
		}
		if ok {
			return nil
		}
		body, err := r()
		if err != nil {
			return err
		}
		if err := repo.Push(ctx, desc, body); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return c.netError(ctx, ref.Registry, "blob "+desc.Digest.String(), err)
		}
		return nil
	}
	if err := pushBlob(layer, func() (io.Reader, error) {
		_, err := f.Seek(0, io.SeekStart)
		return f, err
	}); err != nil {
		return "", err
	}
	if err := pushBlob(ocispec.DescriptorEmptyJSON, func() (io.Reader, error) {
		return bytes.NewReader(ocispec.DescriptorEmptyJSON.Data), nil
	}); err != nil {
		return "", err
	}
	config := ocispec.DescriptorEmptyJSON
	config.Data = nil
	m := ocispec.Manifest{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       config,
		Layers:       []ocispec.Descriptor{layer},
		Annotations: map[string]string{
			AnnotationVersion: meta.Version, AnnotationTitle: meta.Package, AnnotationVendor: meta.Publisher,
			AnnotationPackage: meta.Package, AnnotationPublisher: meta.Publisher,
			AnnotationDigest: meta.ReleaseDigest, AnnotationKey: meta.Key,
		},
	}
	m.SchemaVersion = 2
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), ref.Tag); err != nil {
		return "", c.netError(ctx, ref.Registry, "the manifest", err)
	}
	return desc.Digest.String(), nil
}
