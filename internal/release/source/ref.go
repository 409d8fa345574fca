// Package source fetches release archives from where teams keep them — an
// OCI registry (oci://HOST/REPO:TAG or @sha256:HEX) or an HTTPS URL — and
// pushes them to registries, within bounded sizes and times. It decides no
// trust: what it fetches is verified by the install path like any local
// archive (docs/adr/0016-release-sources.md).
package source

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"oras.land/oras-go/v2/registry"
)

// Schemes of a source reference.
const (
	SchemeOCI   = "oci"
	SchemeHTTPS = "https"
)

// Ref is a parsed source reference.
type Ref struct {
	Scheme string // SchemeOCI or SchemeHTTPS
	// OCI
	Registry   string // host[:port]
	Repository string
	Tag        string // "" when the reference names a digest only
	Digest     string // sha256:HEX, when named
	// HTTPS
	URL *url.URL
}

// IsSource reports whether s is written as a source reference rather
// than a local path: it starts with oci://, https:// or http://.
func IsSource(s string) bool {
	for _, p := range []string{"oci://", "https://", "http://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Parse parses oci://HOST/REPO:TAG, oci://HOST/REPO@sha256:HEX and
// https://…; http:// URLs are refused unless the host is a loopback
// address or plainHTTP allows them.
func Parse(s string, plainHTTP bool) (*Ref, error) {
	switch {
	case strings.HasPrefix(s, "oci://"):
		r, err := registry.ParseReference(strings.TrimPrefix(s, "oci://"))
		if err != nil {
			return nil, fmt.Errorf("%s is not an OCI reference of the form oci://HOST/REPO:TAG or oci://HOST/REPO@sha256:HEX: %v", s, err)
		}
		ref := &Ref{Scheme: SchemeOCI, Registry: r.Registry, Repository: r.Repository}
		if rest := strings.TrimPrefix(s, "oci://"+r.Registry+"/"+r.Repository); strings.HasPrefix(rest, ":") {
			ref.Tag, _, _ = strings.Cut(rest[1:], "@")
		}
		if d, err := r.Digest(); err == nil {
			if d.Algorithm() != "sha256" {
				return nil, fmt.Errorf("%s names a %s digest; name a sha256 one", s, d.Algorithm())
			}
			ref.Digest = d.String()
		}
		if ref.Tag == "" && ref.Digest == "" {
			return nil, fmt.Errorf("%s names no tag or digest; write oci://%s/%s:TAG or @sha256:HEX", s, r.Registry, r.Repository)
		}
		return ref, nil
	case strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "http://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("%s is not an https URL of a release archive (https://HOST/PATH/NAME.tar.gz, no user info)", s)
		}
		if u.Scheme == "http" && !plainHTTP && !Loopback(u.Hostname()) {
			return nil, fmt.Errorf("%s is plain http: a release is fetched over https, or over http only from a loopback address or with --plain-http", s)
		}
		u.Fragment = ""
		return &Ref{Scheme: SchemeHTTPS, URL: u}, nil
	}
	return nil, fmt.Errorf("%s is not a source reference: write oci://HOST/REPO:TAG, oci://HOST/REPO@sha256:HEX or https://…/NAME.tar.gz", s)
}

// String is the reference as it is written.
func (r *Ref) String() string {
	if r.Scheme == SchemeHTTPS {
		return r.URL.String()
	}
	s := "oci://" + r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Display is the reference as it is shown to a person: an https URL's
// query (often a pre-signed token) is "…" and its password "xxxxx"; the
// reference is kept and fetched as it is written (String).
func (r *Ref) Display() string { return Redact(r.String()) }

// Redact is Display of a reference as written (a stored source).
func Redact(ref string) string {
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return ref
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
		return u.Redacted() + "?…"
	}
	return u.Redacted()
}

// Host is what a reference connects to: the registry or the URL's host.
func (r *Ref) Host() string {
	if r.Scheme == SchemeHTTPS {
		return r.URL.Host
	}
	return r.Registry
}

// WithTag is the reference to another tag of the same repository.
func (r *Ref) WithTag(tag string) *Ref {
	c := *r
	c.Tag, c.Digest = tag, ""
	return &c
}

// WithDigest is the reference to digest in the same repository, keeping
// the tag it was resolved from for display.
func (r *Ref) WithDigest(digest string) *Ref {
	c := *r
	c.Digest = digest
	return &c
}

// reference is what oras-go resolves: the digest when one is named.
func (r *Ref) reference() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// Loopback reports whether host (without a port) is a loopback name or
// address: a registry there may be spoken to over plain HTTP.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackHost reports whether hostport (host, host:port, [v6] or
// [v6]:port) names a loopback host.
func LoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return Loopback(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}
