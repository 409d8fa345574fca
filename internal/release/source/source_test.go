package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// fakeRegistry serves the distribution API for one repository, acme/x,
// from memory, with hooks that misbehave.
type fakeRegistry struct {
	t         *testing.T
	mu        sync.Mutex
	manifests map[string][]byte // tag or digest → manifest
	mediaType string            // Content-Type of manifests; OCI manifest when ""
	blobs     map[string][]byte
	// blob, when set, answers blob GETs instead.
	blob     func(w http.ResponseWriter, r *http.Request, data []byte)
	status   int    // when set, every /v2/acme/ request answers it
	user     string // when set, require basic auth user:pass
	pass     string
	blobGets int
}

func newFake(t *testing.T) (*fakeRegistry, *httptest.Server) {
	f := &fakeRegistry{t: t, manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != f.user || p != f.pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
	}
	if r.URL.Path == "/v2/" {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/acme/x/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		return
	}
	switch {
	case rest == "tags/list":
		var tags []string
		for k := range f.manifests {
			if !strings.HasPrefix(k, "sha256:") {
				tags = append(tags, k)
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"name": "acme/x", "tags": tags})
	case strings.HasPrefix(rest, "manifests/"):
		m, ok := f.manifests[strings.TrimPrefix(rest, "manifests/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		mt := f.mediaType
		if mt == "" {
			mt = ocispec.MediaTypeImageManifest
		}
		w.Header().Set("Content-Type", mt)
		w.Header().Set("Docker-Content-Digest", digest.FromBytes(m).String())
		w.Header().Set("Content-Length", fmt.Sprint(len(m)))
		if r.Method != http.MethodHead {
			w.Write(m)
		}
	case strings.HasPrefix(rest, "blobs/"):
		d := strings.TrimPrefix(rest, "blobs/")
		data, ok := f.blobs[d]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodGet {
			f.blobGets++
		}
		if f.blob != nil {
			f.mu.Unlock()
			f.blob(w, r, data)
			f.mu.Lock()
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.Write(data)
	default:
		http.NotFound(w, r)
	}
}

// release puts an archive (any bytes: nothing here unpacks it) under tag
// with a manifest edited by edit, and returns the manifest's digest.
func (f *fakeRegistry) release(tag string, archive []byte, edit func(m *ocispec.Manifest)) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	layer := ocispec.Descriptor{MediaType: LayerMediaType, Digest: digest.FromBytes(archive), Size: int64(len(archive))}
	f.blobs[layer.Digest.String()] = archive
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType,
		Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{layer},
		Annotations: map[string]string{AnnotationVersion: tag}}
	m.Config.Data = nil
	m.SchemaVersion = 2
	if edit != nil {
		edit(&m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		f.t.Fatal(err)
	}
	d := digest.FromBytes(data).String()
	f.manifests[tag], f.manifests[d] = data, data
	return d
}

func client(t *testing.T, env map[string]string) *Client {
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["DOCKER_CONFIG"]; !ok {
		env["DOCKER_CONFIG"] = t.TempDir()
	}
	return &Client{Getenv: func(k string) string { return env[k] }, Timeout: 5 * time.Second}
}

func ociRef(t *testing.T, srv *httptest.Server, ref string) *Ref {
	t.Helper()
	r, err := Parse("oci://"+srv.Listener.Addr().String()+"/acme/x"+ref, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fetchErr fetches ref and requires it to fail with exactly want (with
// REF for the reference); nothing may be left in the fetch directory.
func fetchErr(t *testing.T, c *Client, ref *Ref, want string) error {
	t.Helper()
	dir := t.TempDir()
	got, err := c.Fetch(context.Background(), ref, dir)
	if err == nil {
		t.Fatalf("fetched %+v, want an error", got)
	}
	want = strings.ReplaceAll(want, "REF", ref.String())
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	var se *Error
	if !errors.As(err, &se) || se.Ref != ref.String() {
		t.Errorf("error %T does not name the reference", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a failed fetch left %d files behind", len(entries))
	}
	return err
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestFetchOCI(t *testing.T) {
	f, srv := newFake(t)
	archive := []byte("the archive bytes")
	d := f.release("1.0.0", archive, nil)
	for _, ref := range []string{":1.0.0", "@" + d, ":1.0.0@" + d} {
		got, err := client(t, nil).Fetch(context.Background(), ociRef(t, srv, ref), t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		data, _ := os.ReadFile(got.Path)
		if string(data) != string(archive) || got.Resolved != d || got.Annotations[AnnotationVersion] != "1.0.0" {
			t.Errorf("%s: fetched %q as %s", ref, data, got.Resolved)
		}
	}
}

func TestFetchRefusals(t *testing.T) {
	archive := []byte(strings.Repeat("release ", 64))
	t.Run("wrong artifact type", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, func(m *ocispec.Manifest) { m.ArtifactType = "application/vnd.example.sbom" })
		fetchErr(t, client(t, nil), ociRef(t, srv, ":1.0.0"), `REF: not a release artifact: artifact type "application/vnd.example.sbom", not "application/vnd.rukh.release.v1" (publish releases with `+"`ext publish ARCHIVE oci://…`)")
	})
	t.Run("wrong layer media type", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, func(m *ocispec.Manifest) { m.Layers[0].MediaType = ocispec.MediaTypeImageLayerGzip })
		fetchErr(t, client(t, nil), ociRef(t, srv, ":1.0.0"), `REF: not a release artifact: the layer has media type "application/vnd.oci.image.layer.v1.tar+gzip", not "application/vnd.rukh.release.layer.v1.tar+gzip" (publish releases with `+"`ext publish ARCHIVE oci://…`)")
	})
	t.Run("wrong manifest media type", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		f.mediaType = ocispec.MediaTypeImageIndex
		fetchErr(t, client(t, nil), ociRef(t, srv, ":1.0.0"), `REF: not a release artifact: the manifest has media type "application/vnd.oci.image.index.v1+json", not "application/vnd.oci.image.manifest.v1+json" (publish releases with `+"`ext publish ARCHIVE oci://…`)")
	})
	t.Run("substituted blob", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		other := []byte(strings.Repeat("evil!!! ", 64))
		f.blob = func(w http.ResponseWriter, r *http.Request, data []byte) { w.Write(other) }
		fetchErr(t, client(t, nil), ociRef(t, srv, ":1.0.0"), fmt.Sprintf("REF: the release archive %s has digest %s (512 bytes), not %[1]s: it was truncated or substituted on the way; nothing of it is used", sha(archive), sha(other)))
	})
	t.Run("truncated blob", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		f.blob = func(w http.ResponseWriter, r *http.Request, data []byte) {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data[:100])
		}
		fetchErr(t, client(t, nil), ociRef(t, srv, ":1.0.0"), fmt.Sprintf("REF: the release archive %s has digest %s of a body cut short (100 bytes), not 512 bytes: it was truncated or substituted on the way; nothing of it is used", sha(archive), sha(archive[:100])))
	})
	t.Run("digest reference of another manifest", func(t *testing.T) {
		f, srv := newFake(t)
		d := f.release("1.0.0", archive, nil)
		other := "sha256:" + strings.Repeat("0", 64)
		f.manifests[other] = f.manifests[d] // the registry answers another manifest for it
		fetchErr(t, client(t, nil), ociRef(t, srv, "@"+other), fmt.Sprintf("REF: the manifest has digest %s, not %s: it was truncated or substituted on the way; nothing of it is used", d, other))
	})
	t.Run("404", func(t *testing.T) {
		_, srv := newFake(t)
		fetchErr(t, client(t, nil), ociRef(t, srv, ":9.9.9"), "REF: the manifest was not found (HTTP 404); check the repository and the tag or digest (`ext outdated` lists what a source offers)")
	})
	t.Run("401 without credentials", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		f.user, f.pass = "ci", "s3cret"
		dc := t.TempDir()
		host := srv.Listener.Addr().String()
		fetchErr(t, client(t, map[string]string{"DOCKER_CONFIG": dc}), ociRef(t, srv, ":1.0.0"),
			fmt.Sprintf("REF: the registry refused access (HTTP 401) with no credentials (none for %[1]s in %[2]s); log in with `docker login %[1]s` (or `oras login %[1]s`), which writes the credential Rukh reads", host, filepath.Join(dc, "config.json")))
	})
	t.Run("401 with wrong credentials", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		f.user, f.pass = "ci", "s3cret"
		dc := t.TempDir()
		host := srv.Listener.Addr().String()
		cfg := fmt.Sprintf(`{"auths": {%q: {"auth": "Y2k6d3JvbmdwYXNzd29yZA=="}}}`, host) // ci:wrongpassword
		if err := os.WriteFile(filepath.Join(dc, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		err := fetchErr(t, client(t, map[string]string{"DOCKER_CONFIG": dc}), ociRef(t, srv, ":1.0.0"),
			fmt.Sprintf("REF: the registry refused access (HTTP 401) with credentials for %[1]s from %[2]s; log in with `docker login %[1]s` (or `oras login %[1]s`), which writes the credential Rukh reads", host, filepath.Join(dc, "config.json")))
		if strings.Contains(err.Error(), "wrongpassword") || strings.Contains(err.Error(), "Y2k6") {
			t.Errorf("the error shows the credential: %v", err)
		}
	})
	t.Run("right credentials", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		f.user, f.pass = "ci", "s3cret"
		dc := t.TempDir()
		cfg := fmt.Sprintf(`{"auths": {%q: {"auth": "Y2k6czNjcmV0"}}}`, srv.Listener.Addr().String()) // ci:s3cret
		if err := os.WriteFile(filepath.Join(dc, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := client(t, map[string]string{"DOCKER_CONFIG": dc}).Fetch(context.Background(), ociRef(t, srv, ":1.0.0"), t.TempDir()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stall mid-blob", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		f.blob = func(w http.ResponseWriter, r *http.Request, data []byte) {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data[:10])
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the client gives up: its bound
		}
		c := client(t, nil)
		c.Timeout = 300 * time.Millisecond
		fetchErr(t, c, ociRef(t, srv, ":1.0.0"), fmt.Sprintf("REF: reading the release archive %s made no progress for 300ms (the --timeout); the connection was closed", sha(archive)))
	})
	t.Run("manifest over the limit", func(t *testing.T) {
		f, srv := newFake(t)
		d := f.release("1.0.0", archive, func(m *ocispec.Manifest) { m.Annotations["pad"] = strings.Repeat("x", 2000) })
		c := client(t, nil)
		c.MaxManifest = 1024
		fetchErr(t, c, ociRef(t, srv, ":1.0.0"), fmt.Sprintf("REF: the manifest is %d bytes; the limit is 1024, so it was not fetched", len(f.manifests[d])))
	})
	t.Run("negative layer size", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, func(m *ocispec.Manifest) { m.Layers[0].Size = -1 })
		fetchErr(t, client(t, nil), ociRef(t, srv, ":1.0.0"), "REF: not a release artifact: the layer declares a negative size (-1 bytes) (publish releases with `ext publish ARCHIVE oci://…`)")
	})
	t.Run("archive over the limit", func(t *testing.T) {
		f, srv := newFake(t)
		f.release("1.0.0", archive, nil)
		c := client(t, nil)
		c.MaxArchive = 511
		fetchErr(t, c, ociRef(t, srv, ":1.0.0"), fmt.Sprintf("REF: the release archive %s is 512 bytes; the limit is 511, so it was not fetched", sha(archive)))
		if f.blobGets != 0 {
			t.Errorf("the blob was fetched %d times although its declared size is over the limit", f.blobGets)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ref, _ := Parse("oci://"+addr+"/acme/x:1.0.0", false)
		err = fetchErr(t, client(t, nil), ref, fmt.Sprintf("REF: could not reach %s: dial tcp %[1]s: connect: connection refused", addr))
		var ue *UnreachableError
		if !errors.As(err, &ue) {
			t.Errorf("%T is not an UnreachableError", err)
		}
	})
}

func TestFetchHTTPS(t *testing.T) {
	archive := []byte(strings.Repeat("release ", 64))
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	zw.Write(archive)
	zw.Close()
	gzipped := zbuf.Bytes()
	mux := http.NewServeMux()
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	plain := httptest.NewServer(mux)
	t.Cleanup(plain.Close)
	mux.HandleFunc("/r.tar.gz", func(w http.ResponseWriter, r *http.Request) { w.Write(archive) })
	mux.HandleFunc("/loop.tar.gz", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop.tar.gz", http.StatusFound) })
	mux.HandleFunc("/down.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/r.tar.gz", http.StatusFound)
	})
	mux.HandleFunc("/encoded.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		// Servers often label a .tar.gz so; the bytes are the archive.
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(gzipped)
	})
	mux.HandleFunc("/away.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.0.2.2/r.tar.gz", http.StatusFound)
	})
	mux.HandleFunc("/big.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write(archive)
	})
	mux.HandleFunc("/chunked.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		for range 4 {
			w.Write(archive)
			w.(http.Flusher).Flush()
		}
	})
	c := client(t, nil)
	c.MaxArchive = 1024
	c.init()
	c.http.Transport.(progressTransport).base.(*http.Transport).TLSClientConfig.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	ref := func(p string) *Ref {
		if !strings.HasPrefix(p, "http") {
			p = srv.URL + p
		}
		r, err := Parse(p, false)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	got, err := c.Fetch(context.Background(), ref("/r.tar.gz"), t.TempDir())
	if err != nil || got.Resolved != sha(archive) {
		t.Fatalf("fetch: %+v %v", got, err)
	}
	got, err = c.Fetch(context.Background(), ref("/encoded.tar.gz"), t.TempDir())
	if err != nil {
		t.Fatalf("fetch of an archive served with Content-Encoding: gzip: %v", err)
	}
	if data, _ := os.ReadFile(got.Path); got.Resolved != sha(gzipped) || !bytes.Equal(data, gzipped) {
		t.Errorf("an archive served with Content-Encoding: gzip was fetched as %d bytes %s, not the %d bytes served (%s)", len(data), got.Resolved, len(gzipped), sha(gzipped))
	}
	fetchErr(t, c, ref("/loop.tar.gz"), "REF: redirected 10 times (last to "+srv.URL+"/loop.tar.gz), a loop or a chain longer than the limit of 10")
	fetchErr(t, c, ref("/down.tar.gz"), "REF: "+srv.URL+"/down.tar.gz redirected to "+plain.URL+"/r.tar.gz, which is not https; a release is never fetched over plain http after https")
	// Plain http from loopback may not leave it by a redirect.
	fetchErr(t, c, ref(plain.URL+"/away.tar.gz"), "REF: "+plain.URL+"/away.tar.gz redirected to http://192.0.2.2/r.tar.gz, which is plain http off this machine; a release is fetched over plain http only from a loopback address, or anywhere with --plain-http")
	if got, err := c.Fetch(context.Background(), ref(plain.URL+"/r.tar.gz"), t.TempDir()); err != nil || got.Resolved != sha(archive) {
		t.Errorf("plain http on loopback: %+v %v", got, err)
	}
	fetchErr(t, c, ref("/big.tar.gz"), "REF: the archive at "+srv.URL+"/big.tar.gz is 1000000 bytes; the limit is 1024, so it was not fetched")
	fetchErr(t, c, ref("/chunked.tar.gz"), "REF: the archive at "+srv.URL+"/chunked.tar.gz is over the limit of 1024 bytes; it was not read further")
	fetchErr(t, c, ref("/none.tar.gz"), "REF: the archive at "+srv.URL+"/none.tar.gz was not found (HTTP 404); check the repository and the tag or digest (`ext outdated` lists what a source offers)")
	if _, err := Parse("http://example.com/r.tar.gz", false); err == nil || err.Error() != "http://example.com/r.tar.gz is plain http: a release is fetched over https, or over http only from a loopback address or with --plain-http" {
		t.Errorf("plain http to a remote host: %v", err)
	}
}

func TestNewest(t *testing.T) {
	tags := []string{"latest", "0.9.0", "1.10.0", "1.2.0", "v1.11.0-rc.1", "1.9", "sha256-abc.sig"}
	if got := Newest(tags, false); got != "1.10.0" {
		t.Errorf("Newest = %q, want 1.10.0", got)
	}
	if got := Newest(tags, true); got != "v1.11.0-rc.1" {
		t.Errorf("Newest with pre-releases = %q, want v1.11.0-rc.1", got)
	}
	if Newest([]string{"latest"}, true) != "" {
		t.Error("a non-version tag is a version")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "oci://r.example:5000/acme/greet:1.0.0", want: "oci://r.example:5000/acme/greet:1.0.0"},
		{in: "oci://r.example/acme/greet@sha256:" + strings.Repeat("a", 64), want: "oci://r.example/acme/greet@sha256:" + strings.Repeat("a", 64)},
		{in: "oci://r.example/acme/greet", err: "oci://r.example/acme/greet names no tag or digest; write oci://r.example/acme/greet:TAG or @sha256:HEX"},
		{in: "https://h.example/x/greet.tar.gz", want: "https://h.example/x/greet.tar.gz"},
		{in: "http://127.0.0.1:8080/greet.tar.gz", want: "http://127.0.0.1:8080/greet.tar.gz"},
	} {
		r, err := Parse(tc.in, false)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("Parse(%q) error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || r.String() != tc.want):
			t.Errorf("Parse(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
		}
	}
}

// TestArchiveLimitHoldsARelease: every archive trust accepts unpacked
// fits MaxArchiveBytes (gzip adds a few bytes per 32 KiB block at worst,
// tar 512 bytes of header per entry).
func TestArchiveLimitHoldsARelease(t *testing.T) {
	worst := int64(trust.MaxTotalBytes+trust.MaxManifestBytes+trust.MaxSignatureBytes) + (2*trust.MaxFiles+4)*1024
	worst += worst / 1000
	if MaxArchiveBytes < worst {
		t.Errorf("MaxArchiveBytes %d is less than the largest release archive, about %d bytes", MaxArchiveBytes, worst)
	}
}

// TestUploadProgress: an upload that takes longer than the timeout in
// all but never pauses that long (a big push on a slow link) is not cut
// off: every read of the request's body is progress, and kicks the
// operation's watch. The test feeds the body a chunk at a time and waits,
// after each, for the kick its read makes (an event, not a clock); the
// round trip's own kicks come at its start and when the answer arrives.
func TestUploadProgress(t *testing.T) {
	kicks := make(chan struct{})
	ctx := context.WithValue(context.Background(), watchKey{}, &watch{reset: func() { kicks <- struct{}{} }})
	kicked := func(what string) {
		t.Helper()
		select {
		case <-kicks:
		case <-time.After(time.Minute): // a hang guard
			t.Fatalf("no kick of the watch %s", what)
		}
	}
	received := make(chan int, 1)
	// The server's side of the round trip: it reads the whole body.
	server := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			t.Errorf("server: reading the upload: %v", err)
		}
		received <- int(n)
		return &http.Response{StatusCode: http.StatusCreated, Body: http.NoBody, Request: r}, nil
	})
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://registry.test/upload", pr)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := progressTransport{base: server}.RoundTrip(req)
		done <- result{resp, err}
	}()
	kicked("when the request starts")
	chunk := []byte(strings.Repeat("x", 1024))
	sent := 0
	for i := range 12 {
		if _, err := pw.Write(chunk); err != nil {
			t.Fatal(err)
		}
		sent += len(chunk)
		kicked(fmt.Sprintf("by the read of chunk %d of the body", i+1))
	}
	pw.Close()
	kicked("when the answer arrives")
	res := <-done
	if res.err != nil {
		t.Fatalf("an upload that never paused for the timeout failed: %v", res.err)
	}
	if res.resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload answered %s", res.resp.Status)
	}
	if n := <-received; n != sent {
		t.Errorf("the server received %d bytes of %d", n, sent)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// helperDir writes docker-credential-NAME scripts into a directory that
// is only on the PATH given to the client, never on this process's.
func helperDir(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, "docker-credential-"+name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCredentialHelpers: a credsStore or credHelpers helper is found on
// the caller's PATH (not this process's) and run with the caller's
// environment; its failure names it and the file, never what it printed
// on stdout; and a helper whose child keeps its output open is ended,
// with its child, by the timeout.
func TestCredentialHelpers(t *testing.T) {
	archive := []byte(strings.Repeat("release ", 64))
	bin := helperDir(t, map[string]string{
		// The protocol: the server on stdin, the credential as JSON; the
		// password is in the caller's HOME, which is not this process's.
		"good": `read server; printf '{"ServerURL":"%s","Username":"ci","Secret":"%s"}' "$server" "$(cat "$HOME/secret")"` + "\n",
		"none": "echo 'credentials not found in native keychain'; exit 1\n",
		"bad":  "echo 'leaked-s3cret'; echo 'the keyring is locked' >&2; exit 3\n",
		"hang": "sleep 300 &\nsleep 300\n",
	})
	for _, tc := range []struct {
		name, cfg, want string
		timeout         time.Duration
	}{
		{name: "credsStore", cfg: `{"credsStore": "good"}`},
		{name: "credHelpers", cfg: `{"credsStore": "bad", "credHelpers": {"HOST": "good"}}`},
		{name: "not found", cfg: `{"credsStore": "none"}`,
			want: "REF: the registry refused access (HTTP 401) with no credentials (none for HOST in the credential helper docker-credential-none (credsStore in CONFIG)); log in with `docker login HOST` (or `oras login HOST`), which writes the credential Rukh reads"},
		{name: "fails", cfg: `{"credsStore": "bad"}`,
			want: "REF: credential helper docker-credential-bad (credsStore in CONFIG) failed: it exited with exit status 3 (what it printed is not shown: it could hold a secret; run `echo HOST | docker-credential-bad get` to see it)"},
		{name: "missing", cfg: `{"credHelpers": {"HOST": "gone"}}`,
			want: "REF: credential helper docker-credential-gone (credHelpers in CONFIG) failed: docker-credential-gone is not on the PATH of the command (install it, or change credsStore/credHelpers in the credential file)"},
		{name: "hangs", cfg: `{"credsStore": "hang"}`, timeout: 300 * time.Millisecond,
			want: "REF: the credential helper docker-credential-hang (credsStore in CONFIG) made no progress for 300ms (the --timeout); the connection was closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t)
			f.release("1.0.0", archive, nil)
			f.user, f.pass = "ci", "from-the-callers-env"
			host := srv.Listener.Addr().String()
			dc := t.TempDir()
			config := filepath.Join(dc, "config.json")
			if err := os.WriteFile(config, []byte(strings.ReplaceAll(tc.cfg, "HOST", host)), 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr testhome.Buffer
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "secret"), []byte("from-the-callers-env"), 0o600); err != nil {
				t.Fatal(err)
			}
			c := client(t, map[string]string{"DOCKER_CONFIG": dc, "PATH": bin + ":/usr/bin:/bin", "HOME": home})
			c.Stderr = &stderr
			if tc.timeout > 0 {
				c.Timeout = tc.timeout
			}
			ref := ociRef(t, srv, ":1.0.0")
			// The hang guard: far beyond the timeout, failing with what
			// it waited for.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.Fetch(ctx, ref, t.TempDir())
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-ctx.Done():
				t.Fatal("the fetch did not return within a minute of a credential helper that hangs: the helper and its child were not killed at the timeout")
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("fetch with the helper's credential: %v", err)
				}
				return
			}
			want := strings.NewReplacer("REF", ref.String(), "HOST", host, "CONFIG", config).Replace(tc.want)
			if err == nil || err.Error() != want {
				t.Fatalf("error\n%v\nwant\n%s", err, want)
			}
			if strings.Contains(err.Error(), "leaked-s3cret") {
				t.Errorf("the error shows what the helper printed on stdout: %v", err)
			}
			if tc.name == "fails" && !strings.Contains(stderr.String(), "the keyring is locked") {
				t.Errorf("the helper's stderr did not reach the caller's: %q", stderr.String())
			}
		})
	}
}

// TestHelperEnvReachesTheDaemon: every variable a credential helper runs
// with is one a client passes to rukhd, so that through the daemon it is
// the caller's.
func TestHelperEnvReachesTheDaemon(t *testing.T) {
	for _, k := range helperEnv {
		if got := envpolicy.ForDaemon("RUKH_HOME", []string{k + "=v"}); len(got) != 1 {
			t.Errorf("%s, which a credential helper runs with, is not passed to rukhd (envpolicy.Sources)", k)
		}
	}
}

// notTLSListener serves plain HTTP, and answers a TLS hello with bytes
// that are neither TLS nor HTTP, then closes: a plain-http registry that
// Go's TLS client can not recognize as one.
type notTLSListener struct {
	net.Listener
	hangUp bool // close on a TLS hello without a byte
}

func (l notTLSListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		first := make([]byte, 1)
		if _, err := io.ReadFull(conn, first); err != nil {
			conn.Close()
			continue
		}
		if first[0] == 0x16 { // a TLS handshake record
			if !l.hangUp {
				conn.Write([]byte("nope\r\n"))
			}
			conn.Close()
			continue
		}
		return &prefixConn{conn, first}, nil
	}
}

type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// TestLoopbackPlainHTTPWithoutHint: a loopback registry in plain HTTP
// whose answer to a TLS hello is not an HTTP response is still found to
// be plain HTTP (as docker treats localhost), without --plain-http.
func TestLoopbackPlainHTTPWithoutHint(t *testing.T) {
	f := &fakeRegistry{t: t, manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	archive := []byte("the archive bytes")
	d := f.release("1.0.0", archive, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: notTLSListener{Listener: ln}, Config: &http.Server{Handler: f}}
	srv.Start()
	t.Cleanup(srv.Close)
	got, err := client(t, nil).Fetch(context.Background(), ociRef(t, srv, ":1.0.0"), t.TempDir())
	if err != nil {
		t.Fatalf("fetch from a loopback plain-http registry that answers TLS with garbage: %v", err)
	}
	if got.Resolved != d {
		t.Errorf("resolved %s, want %s", got.Resolved, d)
	}

	// One that hangs up on a TLS hello may or may not be plain HTTP: the
	// error says to give --plain-http.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv2 := &httptest.Server{Listener: notTLSListener{ln2, true}, Config: &http.Server{Handler: f}}
	srv2.Start()
	t.Cleanup(srv2.Close)
	_, err = client(t, nil).Fetch(context.Background(), ociRef(t, srv2, ":1.0.0"), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "it closed the connection on the TLS handshake; if it is a plain-http registry, give --plain-http") {
		t.Errorf("a loopback registry that hangs up on TLS: %v", err)
	}
	c := client(t, nil)
	c.PlainHTTP = true
	if _, err := c.Fetch(context.Background(), ociRef(t, srv2, ":1.0.0"), t.TempDir()); err != nil {
		t.Errorf("with --plain-http: %v", err)
	}
}

// TestOperationBound: a registry that trickles the archive a byte at a
// time, each well within the timeout, is cut off by the bound of one
// operation (injected small here; MaxOperation in use).
func TestOperationBound(t *testing.T) {
	f, srv := newFake(t)
	archive := []byte(strings.Repeat("release ", 64))
	f.release("1.0.0", archive, nil)
	f.blob = func(w http.ResponseWriter, r *http.Request, data []byte) {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		for i := range data {
			if _, err := w.Write(data[i : i+1]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done(): // the client gave up
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	c := client(t, nil)
	c.Timeout = 10 * time.Second
	c.MaxOperation = 300 * time.Millisecond
	err := fetchErr(t, c, ociRef(t, srv, ":1.0.0"), fmt.Sprintf("REF: reading the release archive %s did not finish within 300ms, the bound of one operation however steadily bytes arrive; the connection was closed", sha(archive)))
	var st *StallError
	if !errors.As(err, &st) || st.Total != c.MaxOperation {
		t.Errorf("%T is not the StallError of the operation's bound", err)
	}
}

func TestLoopbackHost(t *testing.T) {
	for in, want := range map[string]bool{
		"localhost": true, "localhost:5000": true, "127.0.0.1": true, "127.0.0.1:5000": true,
		"[::1]": true, "[::1]:5000": true, "::1": true,
		"registry.example": false, "registry.example:5000": false, "192.0.2.2:80": false, "[2001:db8::1]:5000": false,
	} {
		if got := LoopbackHost(in); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", in, got, want)
		}
	}
}
