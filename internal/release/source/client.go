package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// Limits of fetching (docs/limits.md, "Release sources").
const (
	// MaxManifestBytes bounds an OCI manifest; a release's has one layer
	// and a few annotations, well under 2 KiB.
	MaxManifestBytes = 64 << 10
	// MaxArchiveBytes bounds a release archive fetched from a registry or
	// an https URL, checked against the declared size before fetching
	// and while reading: the unpacked limits of a release (trust) and
	// room for the tar headers and gzip framing.
	MaxArchiveBytes = 288 << 20
	// MaxTagPages bounds the pages of a registry's tag list read by `ext
	// outdated` and `ext upgrade`, each at most 4 MiB (oras-go's bound).
	MaxTagPages = 64
	// MaxRedirects bounds the redirects an https source may answer with.
	MaxRedirects = 10
	// DefaultTimeout is how long any step of a request may go without
	// progress: connecting, the TLS handshake, waiting for the response
	// and every read of its body (--timeout changes it).
	DefaultTimeout = 30 * time.Second
	// MaxTimeout bounds --timeout.
	MaxTimeout = 10 * time.Minute
	// MaxOperation bounds one operation (a fetch, a push, a resolve, a
	// tag list) in all, however steadily bytes arrive, so a source that
	// trickles a byte just within every --timeout can not hold a command
	// for days: the largest archive moves in it at 164 KiB/s.
	MaxOperation = 30 * time.Minute
	// maxConfigBytes bounds the container credential file read to say
	// which credential was tried.
	maxConfigBytes = 4 << 20
)

// Client fetches and pushes releases. Its zero value is not usable: set
// Getenv.
type Client struct {
	// Getenv reads the caller's environment: DOCKER_CONFIG and HOME (the
	// credential file), HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their
	// lowercase forms), SSL_CERT_FILE and SSL_CERT_DIR (trusted roots).
	// Through rukhd this is the client's environment, not the daemon's.
	Getenv func(string) string
	// PlainHTTP allows plain HTTP to any registry or URL; without it,
	// only a loopback registry that does not speak TLS is spoken to in
	// plain HTTP.
	PlainHTTP bool
	// Timeout replaces DefaultTimeout when > 0.
	Timeout time.Duration
	// Stderr receives what a credential helper prints on its stderr (the
	// caller's stderr); nil drops it.
	Stderr io.Writer
	// MaxManifest and MaxArchive replace the limits when > 0 (tests).
	MaxManifest, MaxArchive int64
	// MaxOperation replaces the bound of one operation when > 0 (tests).
	MaxOperation time.Duration

	once     sync.Once
	http     *http.Client
	initErr  error
	mu       sync.Mutex
	plain    map[string]bool   // registry → spoken to in plain HTTP
	tried    map[string]string // registry → the credential sent, described
	creds    *credentials.FileStore
	credPath string
	proxy    func(*url.URL) (*url.URL, error) // the caller's proxy for a URL
}

// proxyFor names the proxy a request to host goes through, without its
// userinfo, or "" when none does.
func (c *Client) proxyFor(host string) string {
	if c.proxy == nil {
		return ""
	}
	p, err := c.proxy(&url.URL{Scheme: "https", Host: host})
	if err != nil || p == nil {
		return ""
	}
	p.User = nil
	return p.String()
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Client) maxManifest() int64 {
	if c.MaxManifest > 0 {
		return c.MaxManifest
	}
	return MaxManifestBytes
}

func (c *Client) maxArchive() int64 {
	if c.MaxArchive > 0 {
		return c.MaxArchive
	}
	return MaxArchiveBytes
}

func (c *Client) getenv(k string) string {
	if c.Getenv == nil {
		return ""
	}
	return c.Getenv(k)
}

// envOr is the first non-empty of the variables named.
func (c *Client) envOr(names ...string) string {
	for _, n := range names {
		if v := c.getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func (c *Client) init() error {
	c.once.Do(func() {
		roots, err := c.roots()
		if err != nil {
			c.initErr = err
			return
		}
		proxy := (&httpproxy.Config{
			HTTPProxy:  c.envOr("HTTP_PROXY", "http_proxy"),
			HTTPSProxy: c.envOr("HTTPS_PROXY", "https_proxy"),
			NoProxy:    c.envOr("NO_PROXY", "no_proxy"),
		}).ProxyFunc()
		d := c.timeout()
		c.proxy = proxy
		tr := &http.Transport{
			Proxy:                 func(r *http.Request) (*url.URL, error) { return proxy(r.URL) },
			DialContext:           (&net.Dialer{Timeout: d, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:   d,
			ResponseHeaderTimeout: d,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       d,
			ForceAttemptHTTP2:     true,
			// A .tar.gz served with Content-Encoding: gzip is the archive
			// itself: never decompress it on the way (its digest and the
			// size limits are of the bytes served).
			DisableCompression: true,
			MaxIdleConns:       4,
		}
		c.http = &http.Client{Transport: progressTransport{tr}, CheckRedirect: c.checkRedirect}
		c.plain, c.tried = map[string]bool{}, map[string]string{}
		c.credPath = c.configPath()
		store, err := credentials.NewFileStore(c.credPath)
		if err != nil {
			c.initErr = fmt.Errorf("read the container credentials in %s: %w", c.credPath, err)
			return
		}
		c.creds = store
	})
	return c.initErr
}

// checkRedirect refuses a redirect from https to plain http, a redirect
// to plain http that leaves loopback (unless --plain-http allows plain
// http anywhere), and a chain longer than MaxRedirects (a loop).
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return &RedirectError{fmt.Sprintf("redirected %d times (last to %s), a loop or a chain longer than the limit of %d", len(via), Redact(req.URL.String()), MaxRedirects)}
	}
	prev := via[len(via)-1]
	if req.URL.Scheme == "https" {
		return nil
	}
	if prev.URL.Scheme == "https" {
		return &RedirectError{fmt.Sprintf("%s redirected to %s, which is not https; a release is never fetched over plain http after https", Redact(prev.URL.String()), Redact(req.URL.String()))}
	}
	if !c.PlainHTTP && !Loopback(req.URL.Hostname()) {
		return &RedirectError{fmt.Sprintf("%s redirected to %s, which is plain http off this machine; a release is fetched over plain http only from a loopback address, or anywhere with --plain-http", Redact(prev.URL.String()), Redact(req.URL.String()))}
	}
	return nil
}

// configPath is the container credential file: $DOCKER_CONFIG/config.json,
// or ~/.docker/config.json.
func (c *Client) configPath() string {
	if d := c.getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home := c.getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".docker", "config.json")
}

// roots are the TLS roots: the system's, and when the caller's
// SSL_CERT_FILE or SSL_CERT_DIR differ from this process's (rukhd serving
// a client), the certificates they name as well.
func (c *Client) roots() (*x509.CertPool, error) {
	file, dir := c.getenv("SSL_CERT_FILE"), c.getenv("SSL_CERT_DIR")
	if file == os.Getenv("SSL_CERT_FILE") && dir == os.Getenv("SSL_CERT_DIR") {
		return nil, nil // the process's own roots are the caller's
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	var files []string
	if file != "" {
		files = append(files, file)
	}
	if dir != "" {
		for _, d := range filepath.SplitList(dir) {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				files = append(files, filepath.Join(d, e.Name()))
			}
		}
	}
	for _, f := range files {
		data, err := readBounded(f, maxConfigBytes)
		if err != nil {
			if f == file {
				return nil, fmt.Errorf("SSL_CERT_FILE: %w", err)
			}
			continue
		}
		pool.AppendCertsFromPEM(data)
	}
	return pool, nil
}

func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, err
}

// credential resolves the registry credential from the container
// credential store and remembers what it sent, for AuthError.
func (c *Client) credential(ctx context.Context, hostport string) (auth.Credential, error) {
	cred, err := c.lookup(ctx, hostport)
	desc := c.describeCredential(hostport, err == nil && cred != auth.EmptyCredential)
	if err != nil {
		desc = fmt.Sprintf("no credentials: looking them up for %s failed (%v)", hostport, err)
	}
	c.mu.Lock()
	c.tried[hostport] = desc
	c.mu.Unlock()
	return cred, err
}

// describeCredential says where the credential for host comes from,
// never what it is.
func (c *Client) describeCredential(host string, found bool) string {
	cfg := c.helperConfig()
	from := c.credPath
	switch {
	case cfg.CredHelpers[host] != "":
		from = fmt.Sprintf("the credential helper docker-credential-%s (credHelpers in %s)", cfg.CredHelpers[host], c.credPath)
	case cfg.CredsStore != "":
		from = fmt.Sprintf("the credential helper docker-credential-%s (credsStore in %s)", cfg.CredsStore, c.credPath)
	}
	if !found {
		return fmt.Sprintf("no credentials (none for %s in %s)", host, from)
	}
	return fmt.Sprintf("credentials for %s from %s", host, from)
}

func (c *Client) triedFor(host string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tried[host]; ok {
		return t
	}
	return c.describeCredential(host, false)
}

// A watch bounds one operation: it fails once no request starts, no
// response arrives and no body byte is read for the timeout.
// watch is an operation's stall watchdog: kick resets it.
type watch struct{ reset func() }

type watchKey struct{}

// watch returns ctx bounded by a fresh watch and by the bound of one
// operation, and its stop.
func (c *Client) watch(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	d := c.timeout()
	idle := time.AfterFunc(d, func() { cancel(errStalled) })
	total := time.AfterFunc(c.maxOperation(), func() { cancel(errTooLong) })
	w := &watch{reset: func() { idle.Reset(d) }}
	return context.WithValue(ctx, watchKey{}, w), func() { idle.Stop(); total.Stop(); cancel(nil) }
}

func (c *Client) maxOperation() time.Duration {
	if c.MaxOperation > 0 {
		return c.MaxOperation
	}
	return MaxOperation
}

// stallError is the StallError of what, for the bound that ended ctx.
func (c *Client) stallError(ctx context.Context, what string) *StallError {
	if errors.Is(context.Cause(ctx), errTooLong) {
		return &StallError{What: what, Timeout: c.timeout(), Total: c.maxOperation()}
	}
	return &StallError{What: what, Timeout: c.timeout()}
}

func kick(ctx context.Context) {
	if w, ok := ctx.Value(watchKey{}).(*watch); ok {
		w.reset()
	}
}

// stalled reports whether ctx ended because its watch fired or the
// operation went on for too long.
func stalled(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, errStalled) || errors.Is(cause, errTooLong)
}

// progressTransport kicks the request's watch when it starts, at every
// read of the request's body (an upload), when its response arrives and
// at every read of the response's body that returns bytes.
type progressTransport struct{ base http.RoundTripper }

func (t progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	kick(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		// An upload makes progress as its body is read: every read kicks
		// the watch, so a long push that never stalls is not cut off.
		r := *req
		r.Body = &progressBody{req.Body, ctx}
		if get := req.GetBody; get != nil {
			r.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil || b == nil || b == http.NoBody {
					return b, err
				}
				return &progressBody{b, ctx}, nil
			}
		}
		req = &r
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	kick(ctx)
	resp.Body = &progressBody{resp.Body, ctx}
	return resp, nil
}

type progressBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		kick(b.ctx)
	}
	return n, err
}
