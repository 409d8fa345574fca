package tests

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// registryBinary is Debian's docker-registry (distribution 2.8), which
// .ci/run installs. Without it the registry tests skip, except under
// CI=true, where they fail.
func registryBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker-registry is not installed, and CI=true: .ci/run installs it (apt-get install docker-registry)")
		}
		t.Skip("docker-registry is not installed (apt-get install docker-registry); the registry tests need a real registry")
	}
	return bin
}

// testCA is a CA the test makes, and a certificate it signed for
// 127.0.0.1, as PEM files in dir.
type testCA struct{ CA, Cert, Key string }

func makeCA(t *testing.T, dir string) testCA {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rukh test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	out := testCA{filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	for path, block := range map[string]*pem.Block{
		out.CA: {Type: "CERTIFICATE", Bytes: caDER}, out.Cert: {Type: "CERTIFICATE", Bytes: der},
		out.Key: {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// startRegistry runs docker-registry on 127.0.0.1 (over TLS when ca is
// set) with its storage in a temporary directory, until t ends, and
// returns its host:port once /v2/ answers.
func startRegistry(t *testing.T, ca *testCA) string {
	t.Helper()
	bin := registryBinary(t)
	dir := testhome.TempDir(t)
	client := &http.Client{Timeout: 2 * time.Second}
	scheme, tlsConf := "http", ""
	if ca != nil {
		pool := x509.NewCertPool()
		data, _ := os.ReadFile(ca.CA)
		pool.AppendCertsFromPEM(data)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		scheme = "https"
		tlsConf = fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", ca.Cert, ca.Key)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		// The registry takes no port 0: take a free one and hand it over.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cfg := filepath.Join(dir, fmt.Sprintf("config-%d.yml", attempt))
		yml := fmt.Sprintf("version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n%s",
			filepath.Join(dir, fmt.Sprintf("data-%d", attempt)), addr, tlsConf)
		if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(dir, fmt.Sprintf("registry-%d.log", attempt))
		logf, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		// Its log goes to logPath through a pipe the test reads: the line
		// "listening on ADDR" is the registry's own word that it serves.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", cfg)
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		listening := make(chan struct{})
		go func() {
			defer logf.Close()
			defer pr.Close()
			sc := bufio.NewScanner(pr)
			said := false
			for sc.Scan() {
				fmt.Fprintln(logf, sc.Text())
				if !said && strings.Contains(sc.Text(), "listening on "+addr) {
					said = true
					close(listening)
				}
			}
		}()
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			select {
			case <-exited:
			default:
				cmd.Process.Kill()
				<-exited
			}
		}
		ready := false
		select {
		case <-listening:
			resp, err := client.Get(scheme + "://" + addr + "/v2/")
			if err == nil {
				resp.Body.Close()
				ready = resp.StatusCode == http.StatusOK
			}
			if !ready {
				lastErr = fmt.Errorf("GET %s://%s/v2/: %v (%v)", scheme, addr, err, resp)
			}
		case <-exited:
			data, _ := os.ReadFile(logPath)
			lastErr = fmt.Errorf("docker-registry on %s exited: %s", addr, data)
		case <-time.After(15 * time.Second):
			lastErr = fmt.Errorf("docker-registry never said it was listening on %s", addr)
		}
		if ready {
			t.Cleanup(stop)
			return addr
		}
		stop()
	}
	t.Fatalf("docker-registry did not serve: %v", lastErr)
	return ""
}

// sourceEnv is a test's environment for rukh: its own home, an empty
// container credential directory, and the test CA's roots when given.
type sourceEnv struct {
	t    *testing.T
	h    *testHost
	env  []string
	home string
	dir  string
}

func newSourceEnv(t *testing.T, h *testHost, ca *testCA) *sourceEnv {
	dir := testhome.TempDir(t)
	home := filepath.Join(dir, "home")
	docker := filepath.Join(dir, "docker")
	os.MkdirAll(docker, 0o700)
	env := append(os.Environ(), "RUKH_HOME="+home, "DOCKER_CONFIG="+docker, "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=")
	if ca != nil {
		env = append(env, "SSL_CERT_FILE="+ca.CA)
	}
	return &sourceEnv{t: t, h: h, env: env, home: home, dir: dir}
}

// rukh runs the built rukh and returns stdout, stderr and the exit code.
func (e *sourceEnv) rukh(args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(e.h.Rukh, args...)
	cmd.Env = e.env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// ok runs rukh and requires exit status 0.
func (e *sourceEnv) ok(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.rukh(args...)
	if code != 0 {
		e.t.Fatalf("rukh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out + errOut
}

// fails runs rukh, requires it to fail with stderr containing want, and
// requires `ext list --json` to be what it was before.
func (e *sourceEnv) fails(want string, args ...string) {
	e.t.Helper()
	before := e.ok("ext", "list", "--json")
	out, errOut, code := e.rukh(args...)
	if code == 0 || !strings.Contains(errOut, want) {
		e.t.Errorf("rukh %s: exit %d, want a failure saying\n%s\ngot:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
	if after := e.ok("ext", "list", "--json"); after != before {
		e.t.Errorf("rukh %s failed but changed the installed releases:\n%s\nwas\n%s", strings.Join(args, " "), after, before)
	}
}

// release writes a signed archive of acme.greet at version, whose
// command greets with word, and returns its path.
func (e *sourceEnv) release(key, publisher, version, word string) string {
	e.t.Helper()
	dir := filepath.Join(e.dir, "src-"+publisher+"-"+version+"-"+word)
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	desc, err := os.ReadFile(filepath.Join("..", "examples", "greet", "rukh-extension.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	d := strings.Replace(string(desc), `"version": "0.1.0"`, fmt.Sprintf("%q: %q", "version", version), 1)
	d = strings.Replace(d, `"publisher": "acme"`, fmt.Sprintf("%q: %q", "publisher", publisher), 1)
	prog, err := os.ReadFile(filepath.Join("..", "examples", "greet", "bin", "greet"))
	if err != nil {
		e.t.Fatal(err)
	}
	p := strings.Replace(string(prog), `"hello, %s"`, fmt.Sprintf(`"%s, %%s"`, word), 1)
	if err := os.WriteFile(filepath.Join(dir, "rukh-extension.json"), []byte(d), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "greet"), []byte(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	out := filepath.Join(e.dir, fmt.Sprintf("greet-%s-%s-%s.tar.gz", publisher, version, word))
	e.ok("ext", "pack", dir, "--key", key, "-o", out)
	return out
}

type listedRelease struct {
	Package, Version, Digest string
	Active                   bool
	Source                   *struct {
		Ref, Resolved string
		Fixed         bool
	}
}

func (e *sourceEnv) list() []listedRelease {
	e.t.Helper()
	var rows []listedRelease
	if err := json.Unmarshal([]byte(e.ok("ext", "list", "--json")), &rows); err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func (e *sourceEnv) active(pkg string) listedRelease {
	e.t.Helper()
	for _, r := range e.list() {
		if r.Package == pkg && r.Active {
			return r
		}
	}
	e.t.Fatalf("%s is not active", pkg)
	return listedRelease{}
}

type outdated struct {
	Package, Installed, Source, Resolved, Latest, Next string
	Upgrade, Fixed                                     bool
	Error                                              string
}

func (e *sourceEnv) outdated(args ...string) []outdated {
	e.t.Helper()
	var rows []outdated
	if err := json.Unmarshal([]byte(e.ok(append([]string{"ext", "outdated", "--json"}, args...)...)), &rows); err != nil {
		e.t.Fatal(err)
	}
	return rows
}

// digestOf is the digest `ext publish` printed.
func digestOf(t *testing.T, published string) string {
	t.Helper()
	for _, l := range strings.Split(published, "\n") {
		if d, ok := strings.CutPrefix(l, "digest "); ok {
			return d
		}
	}
	t.Fatalf("no digest in %q", published)
	return ""
}

// TestRegistrySources: the owner flow through a real registry, over plain
// HTTP on loopback and over TLS from a test CA, on both hosts: publish,
// install, publish a newer version, see it in outdated, upgrade, and run
// the upgraded command; then the refusals that need a real registry.
func TestRegistrySources(t *testing.T) {
	registryBinary(t)
	for _, withTLS := range []bool{false, true} {
		name := "plain-http"
		if withTLS {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			var ca *testCA
			if withTLS {
				c := makeCA(t, testhome.TempDir(t))
				ca = &c
			}
			addr := startRegistry(t, ca)
			forEachHost(t, func(t *testing.T, h *testHost) {
				e := newSourceEnv(t, h, ca)
				repo := fmt.Sprintf("oci://%s/%s/greet", addr, strings.ReplaceAll(h.Mode, "-", ""))
				key := filepath.Join(e.dir, "acme.key")
				e.ok("trust", "keygen", key)
				e.ok("trust", "add", "acme", key+".pub")
				h.serve(t, e.home)

				v1 := e.release(key, "acme", "0.1.0", "hello")
				pub1 := e.ok("ext", "publish", v1, repo+":0.1.0")
				d1 := digestOf(t, pub1)
				e.ok("ext", "install", repo+":0.1.0")
				e.ok("profile", "apply", "-f", writeFile(t, e.dir, "profile.json", `{"endpointNamespace": "team", "cli": {"task": "owner"}, "mcp": {"expose": ["acme.greet/*"], "task": "agent"},
  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 60000, "maxConcurrent": 4, "enforcement": "host", "allow": [{"action": "*", "resource": "*"}]},
            "agent": {"commands": ["acme.*/*"], "deadlineMs": 60000, "maxConcurrent": 4, "enforcement": "host"}}}`))
				r := e.active("acme.greet")
				if r.Version != "0.1.0" || r.Source == nil || r.Source.Ref != repo+":0.1.0" || r.Source.Resolved != d1 || r.Source.Fixed {
					t.Fatalf("installed %+v (source %+v), want 0.1.0 from %s:0.1.0 at %s", r, r.Source, repo, d1)
				}
				if got := e.ok("ext", "list"); !strings.Contains(got, repo+":0.1.0") {
					t.Errorf("ext list does not show the source:\n%s", got)
				}
				if got := e.ok("greet", "Ana"); !strings.Contains(got, "hello, Ana") {
					t.Errorf("greet 0.1.0: %q", got)
				}
				if rows := e.outdated(); len(rows) != 1 || rows[0].Latest != "0.1.0" || rows[0].Upgrade {
					t.Errorf("outdated before a newer release: %+v", rows)
				}

				// A newer release, and a pre-release outdated shows only with --pre.
				v2 := e.release(key, "acme", "0.2.0", "howdy")
				e.ok("ext", "publish", v2, repo+":0.2.0")
				e.ok("ext", "publish", e.release(key, "acme", "0.3.0-rc.1", "hey"), repo+":0.3.0-rc.1")
				rows := e.outdated()
				if len(rows) != 1 || rows[0].Latest != "0.2.0" || !rows[0].Upgrade || rows[0].Next != repo+":0.2.0" {
					t.Fatalf("outdated: %+v", rows)
				}
				if pre := e.outdated("--pre"); pre[0].Latest != "0.3.0-rc.1" {
					t.Errorf("outdated --pre: %+v", pre)
				}
				if got := e.ok("ext", "upgrade", "--all", "--dry-run"); !strings.Contains(got, "would upgrade acme.greet 0.1.0 to 0.2.0 from "+repo+":0.2.0") {
					t.Errorf("upgrade --dry-run: %q", got)
				}
				if r := e.active("acme.greet"); r.Version != "0.1.0" {
					t.Fatalf("--dry-run changed the active release to %s", r.Version)
				}

				// The tag moves between outdated and upgrade: the newer
				// digest is what is verified and recorded.
				pub2 := e.ok("ext", "publish", e.release(key, "acme", "0.2.0", "gday"), repo+":0.2.0")
				d2 := digestOf(t, pub2)
				out, errOut, code := e.rukh("ext", "upgrade", "--all")
				if code != 0 {
					t.Fatalf("upgrade --all: exit %d\n%s%s", code, out, errOut)
				}
				if !strings.Contains(errOut, "upgraded acme.greet 0.1.0 → 0.2.0") || !strings.Contains(out, "~ tool ") {
					t.Errorf("upgrade did not say what changed:\nstdout %s\nstderr %s", out, errOut)
				}
				r = e.active("acme.greet")
				if r.Version != "0.2.0" || r.Source.Ref != repo+":0.2.0" || r.Source.Resolved != d2 {
					t.Fatalf("after the upgrade %+v (source %+v), want 0.2.0 at %s", r, r.Source, d2)
				}
				if got := e.ok("greet", "Ana"); !strings.Contains(got, "gday, Ana") {
					t.Errorf("the upgraded command: %q", got)
				}
				if got := e.ok("ext", "upgrade", "acme.greet"); !strings.Contains(got, "acme.greet 0.2.0 is up to date") {
					t.Errorf("a second upgrade: %q", got)
				}

				// Installed by digest: exactly that manifest, and not moved.
				e.ok("ext", "install", repo+"@"+d1)
				r = e.active("acme.greet")
				if r.Version != "0.1.0" || !r.Source.Fixed || r.Source.Resolved != d1 {
					t.Fatalf("install by digest: %+v %+v", r, r.Source)
				}
				e.fails("acme.greet 0.1.0 was installed by digest or with --pin ("+repo+"@"+d1+") and is not moved by name", "ext", "upgrade", "acme.greet")
				if got := e.ok("ext", "upgrade", "--all"); !strings.Contains(got, "not moved") || e.active("acme.greet").Version != "0.1.0" {
					t.Errorf("upgrade --all moved a release installed by digest: %s", got)
				}
				if rows := e.outdated(); !rows[0].Fixed || rows[0].Upgrade || rows[0].Latest != "0.2.0" {
					t.Errorf("outdated of a fixed release: %+v", rows)
				}
				e.ok("ext", "upgrade", repo+"@"+d2) // named with a new reference
				if r := e.active("acme.greet"); r.Version != "0.2.0" || r.Source.Resolved != d2 {
					t.Errorf("upgrade by a named reference: %+v", r)
				}

				// A digest that is not in the registry installs nothing.
				missing := "sha256:" + strings.Repeat("0", 64)
				e.fails(repo+"@"+missing+": the manifest was not found (HTTP 404)", "ext", "install", repo+"@"+missing)
				// Signed by a publisher no key is trusted for.
				evil := filepath.Join(e.dir, "evil.key")
				e.ok("trust", "keygen", evil)
				e.ok("ext", "publish", e.release(evil, "mallory", "0.9.0", "gotcha"), repo+":0.9.0")
				e.fails(`no key is trusted for publisher "mallory"`, "ext", "install", repo+":0.9.0")
				// The same package by another trusted publisher: refused
				// as install refuses it, the previous release stays.
				e.ok("trust", "add", "mallory", evil+".pub")
				e.fails(`package acme.greet belongs to publisher "acme"`, "ext", "upgrade", repo+":0.9.0")
				if r := e.active("acme.greet"); r.Version != "0.2.0" {
					t.Errorf("after a refused upgrade %s is active", r.Version)
				}
			})
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHTTPSAndOfflineSources: an https:// source (a TLS file server with
// a test CA passed as SSL_CERT_FILE), outdated saying when the URL serves
// another archive, a 401 from a registry naming the credential tried, and
// a source that is gone: every command says which one and changes
// nothing. No registry binary needed.
func TestHTTPSAndOfflineSources(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		var mu sync.Mutex
		var serving string // the archive the URL serves
		mux := http.NewServeMux()
		mux.HandleFunc("/greet.tar.gz", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			path := serving
			mu.Unlock()
			http.ServeFile(w, r, path)
		})
		mux.HandleFunc("/v2/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
		})
		srv := httptest.NewTLSServer(mux)
		t.Cleanup(srv.Close)
		caFile := filepath.Join(testhome.TempDir(t), "ca.pem")
		if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
			t.Fatal(err)
		}
		e := newSourceEnv(t, h, &testCA{CA: caFile})
		key := filepath.Join(e.dir, "acme.key")
		e.ok("trust", "keygen", key)
		e.ok("trust", "add", "acme", key+".pub")
		serve := func(path string) {
			mu.Lock()
			serving = path
			mu.Unlock()
		}
		serve(e.release(key, "acme", "0.1.0", "hello"))
		h.serve(t, e.home)

		// A pre-signed URL: its query is kept and asked again, and shown
		// to a person as "?…".
		url := srv.URL + "/greet.tar.gz?X-Amz-Signature=s3cr3t"
		said := e.ok("ext", "install", url)
		if r := e.active("acme.greet"); r.Source == nil || r.Source.Ref != url {
			t.Fatalf("installed from https: %+v", r)
		}
		said += e.ok("ext", "list")
		if strings.Contains(said, "s3cr3t") || !strings.Contains(said, srv.URL+"/greet.tar.gz?…") {
			t.Errorf("ext install and ext list show the URL's query, or not the URL:\n%s", said)
		}
		if out := e.ok("ext", "upgrade", "--all"); strings.Contains(out, "s3cr3t") {
			t.Errorf("ext upgrade --all of an unchanged URL shows its query:\n%s", out)
		}
		if rows := e.outdated(); rows[0].Upgrade || rows[0].Latest != "0.1.0" {
			t.Errorf("outdated of an unchanged URL: %+v", rows)
		}
		serve(e.release(key, "acme", "0.2.0", "howdy"))
		if rows := e.outdated(); !rows[0].Upgrade || rows[0].Latest != "changed" {
			t.Errorf("outdated of a URL that serves another archive: %+v", rows)
		}
		// --pin goes with a named reference only.
		for _, args := range [][]string{{"ext", "upgrade", "--all", "--pin", "sha256:" + strings.Repeat("0", 64)}, {"ext", "upgrade", "acme.greet", "--pin", "sha256:" + strings.Repeat("0", 64)}} {
			if out, errOut, code := e.rukh(args...); code != 2 || !strings.Contains(errOut, "--pin goes with a named reference") {
				t.Errorf("rukh %s: exit %d, want a usage error\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
		}
		// A version tag that is not the release's version is a usage error.
		rel := e.release(key, "acme", "0.2.0", "howdy")
		if out, errOut, code := e.rukh("ext", "publish", rel, "oci://127.0.0.1:1/acme/greet:9.9.9"); code != 2 ||
			!strings.Contains(errOut, "the tag 9.9.9 is a version, but the release is acme.greet 0.2.0; tag it 0.2.0, or with a tag that is not a version, like latest") {
			t.Errorf("publish to a version tag of another version: exit %d\n%s%s", code, out, errOut)
		}
		e.ok("ext", "upgrade", "acme.greet")
		if got := e.ok("greet", "Bo"); !strings.Contains(got, "howdy, Bo") {
			t.Errorf("the upgraded command: %q", got)
		}

		// A registry that wants credentials the test has none of.
		host := srv.Listener.Addr().String()
		docker := filepath.Join(e.dir, "docker")
		e.fails(fmt.Sprintf("oci://%s/acme/greet:1.0.0: the registry refused access (HTTP 401) with no credentials (none for %s in %s); log in with `docker login %s`", host, host, filepath.Join(docker, "config.json"), host),
			"ext", "install", "oci://"+host+"/acme/greet:1.0.0")

		// Offline: the server is gone.
		srv.Close()
		shown := srv.URL + "/greet.tar.gz?…" // the URL as a person is shown it
		e.fails(shown+": could not reach "+host, "ext", "install", url)
		out, errOut, code := e.rukh("ext", "outdated")
		if code != 69 || !strings.Contains(errOut, "acme.greet: "+shown+": could not reach "+host) {
			t.Errorf("outdated offline: exit %d\n%s%s", code, out, errOut)
		}
		e.fails("acme.greet: not upgraded: "+shown+": could not reach "+host, "ext", "upgrade", "--all")
		for _, args := range [][]string{{"ext", "upgrade", "--all"}, {"ext", "upgrade", "acme.greet"}} {
			if out, errOut, code := e.rukh(args...); code != 69 {
				t.Errorf("rukh %s offline: exit %d, want 69 (unavailable)\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
		}
	})
}

// TestRegistrySourcesHostileAnnotation: a registry's annotations are
// unverified text. A release installed from a tag that is not a version
// (latest) is outdated when the tag names another manifest; the version
// that manifest claims is shown only when it is a semantic version, and
// nothing a registry wrote reaches the terminal raw: `ext outdated` and
// `ext upgrade --dry-run` print no control character.
func TestRegistrySourcesHostileAnnotation(t *testing.T) {
	registryBinary(t)
	addr := startRegistry(t, nil)
	forEachHost(t, func(t *testing.T, h *testHost) {
		e := newSourceEnv(t, h, nil)
		path := strings.ReplaceAll(h.Mode, "-", "") + "/greet"
		repo := fmt.Sprintf("oci://%s/%s", addr, path)
		key := filepath.Join(e.dir, "acme.key")
		e.ok("trust", "keygen", key)
		e.ok("trust", "add", "acme", key+".pub")
		h.serve(t, e.home)
		e.ok("ext", "publish", e.release(key, "acme", "0.1.0", "hello"), repo+":latest")
		e.ok("ext", "install", repo+":latest")

		// Another manifest under latest, whose version annotation would
		// retitle the terminal and clear the screen.
		murl := fmt.Sprintf("http://%s/v2/%s/manifests/latest", addr, path)
		req, _ := http.NewRequest(http.MethodGet, murl, nil)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		m["annotations"].(map[string]any)["org.opencontainers.image.version"] = "9.9.9\x1b]0;pwned\x07\x1b[2J\u009b31m"
		data, _ := json.Marshal(m)
		req, _ = http.NewRequest(http.MethodPut, murl, strings.NewReader(string(data)))
		req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT the hostile manifest: %v %v", resp, err)
		}
		resp.Body.Close()

		for _, args := range [][]string{{"ext", "outdated"}, {"ext", "upgrade", "--dry-run", "acme.greet"}, {"ext", "upgrade", "--dry-run", "--all"}} {
			out, errOut, code := e.rukh(args...)
			if code != 0 {
				t.Errorf("rukh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
			if strings.ContainsAny(out+errOut, "\x1b\x07\u009b") {
				t.Errorf("rukh %s printed a registry's control characters raw:\n%q", strings.Join(args, " "), out+errOut)
			}
			if !strings.Contains(out, "changed") || strings.Contains(out, "9.9.9") {
				t.Errorf("rukh %s: a version annotation that is not a semantic version is shown as more than \"changed\":\n%s", strings.Join(args, " "), out)
			}
		}
	})
}

// TestHTTPSAndOfflineSourcesCredentialHelper: the credential helpers the
// container credential file names are the caller's: found on the PATH
// of the rukh command (not the daemon's), run with its environment, on
// both hosts. A helper that fails is named with the file that names it;
// one that hangs with a child holding its output is ended by --timeout.
func TestHTTPSAndOfflineSourcesCredentialHelper(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "helper-s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if r.URL.Path != "/v2/" {
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(srv.Close)
		caFile := filepath.Join(testhome.TempDir(t), "ca.pem")
		if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
			t.Fatal(err)
		}
		e := newSourceEnv(t, h, &testCA{CA: caFile})
		h.serve(t, e.home) // the daemon's PATH has no helper
		bin := filepath.Join(e.dir, "bin")
		os.MkdirAll(bin, 0o755)
		for name, body := range map[string]string{
			"rukhgood": `read server; printf '{"ServerURL":"%s","Username":"ci","Secret":"helper-s3cret"}' "$server"`,
			"rukhbad":  "echo helper-s3cret; echo 'the keyring is locked' >&2; exit 3",
			"rukhhang": "sleep 300 &\nsleep 300",
		} {
			writeFile(t, bin, "docker-credential-"+name, "#!/bin/sh\n"+body+"\n")
			os.Chmod(filepath.Join(bin, "docker-credential-"+name), 0o755)
		}
		e.env = append(e.env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		config := filepath.Join(e.dir, "docker", "config.json")
		host := srv.Listener.Addr().String()
		ref := "oci://" + host + "/acme/greet:1.0.0"
		useHelper := func(name string) {
			if err := os.WriteFile(config, []byte(fmt.Sprintf(`{"credsStore": %q}`, name)), 0o600); err != nil {
				t.Fatal(err)
			}
		}

		useHelper("rukhgood") // the registry accepts it: what is missing is the release
		e.fails(ref+": the manifest was not found (HTTP 404)", "ext", "install", ref)

		useHelper("rukhbad")
		e.fails(ref+": credential helper docker-credential-rukhbad (credsStore in "+config+") failed: it exited with exit status 3", "ext", "install", ref)
		out, errOut, _ := e.rukh("ext", "install", ref)
		if strings.Contains(out+errOut, "helper-s3cret") {
			t.Errorf("what the helper printed on stdout is shown:\n%s%s", out, errOut)
		}
		if !strings.Contains(errOut, "the keyring is locked") {
			t.Errorf("the helper's stderr did not reach the command's:\n%s", errOut)
		}

		useHelper("rukhhang")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, h.Rukh, "ext", "install", "--timeout", "500ms", ref)
		cmd.Env = e.env
		cmd.WaitDelay = 5 * time.Second // a helper's orphan holding the output must not hold the test
		got, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("ext install did not return within a minute of a credential helper that hangs (--timeout 500ms): the helper was not killed\n%s", got)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 69 || !strings.Contains(string(got), ref+": the credential helper docker-credential-rukhhang (credsStore in "+config+") made no progress for 500ms") {
			t.Errorf("ext install with a helper that hangs: %v\n%s", err, got)
		}
	})
}
