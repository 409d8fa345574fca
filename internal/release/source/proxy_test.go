package source

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// connectProxy is an HTTP proxy that tunnels every CONNECT to target
// (whatever host it names) and counts them; with refuse, it answers 502.
func connectProxy(t *testing.T, target string, refuse bool) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		n.Add(1)
		if refuse {
			http.Error(w, "no route", http.StatusBadGateway)
			return
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, conn); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(p.Close)
	return p, &n
}

// A source is fetched through the caller's HTTPS_PROXY (its environment,
// which through rukhd is the client's), bypassing it for NO_PROXY; the
// proxy's credentials are never printed.
func TestProxyFromTheCallersEnvironment(t *testing.T) {
	archive := []byte(strings.Repeat("release ", 64))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(archive) }))
	t.Cleanup(srv.Close)
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	// example.com is a name httptest's certificate holds; only the proxy
	// knows that it is this server.
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ref, err := Parse("https://example.com:"+port+"/r.tar.gz", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()

	proxy, tunnels := connectProxy(t, srv.Listener.Addr().String(), false)
	proxyURL := "http://user:hunter2@" + proxy.Listener.Addr().String()
	c := client(t, map[string]string{"HTTPS_PROXY": proxyURL, "SSL_CERT_FILE": certFile})
	got, err := c.Fetch(ctx, ref, t.TempDir())
	if err != nil || got.Resolved != sha(archive) {
		t.Fatalf("fetch through HTTPS_PROXY: %+v %v", got, err)
	}
	if n := tunnels.Load(); n != 1 {
		t.Errorf("the proxy tunnelled %d connections, want 1", n)
	}

	// NO_PROXY names the host: the proxy is not asked (the fetch itself
	// goes wherever example.com is, and need not succeed).
	c = client(t, map[string]string{"HTTPS_PROXY": proxyURL, "NO_PROXY": "example.com", "SSL_CERT_FILE": certFile})
	c.Timeout = time.Second
	c.Fetch(ctx, ref, t.TempDir())
	if n := tunnels.Load(); n != 1 {
		t.Errorf("with NO_PROXY=example.com the proxy tunnelled %d connections, want still 1", n)
	}

	// A proxy that refuses: the error says so, without its password.
	refusing, asked := connectProxy(t, srv.Listener.Addr().String(), true)
	c = client(t, map[string]string{"HTTPS_PROXY": "http://user:hunter2@" + refusing.Listener.Addr().String(), "SSL_CERT_FILE": certFile})
	_, err = c.Fetch(ctx, ref, t.TempDir())
	if err == nil || asked.Load() != 1 {
		t.Fatalf("through a refusing proxy: %v (asked %d times)", err, asked.Load())
	}
	if want := "could not reach example.com:" + port + " through the proxy http://" + refusing.Listener.Addr().String() + " (from HTTPS_PROXY"; !strings.Contains(err.Error(), want) {
		t.Errorf("through a refusing proxy: %v; want it to say %q", err, want)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the proxy's password: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://h.example/x/greet.tar.gz":                     "https://h.example/x/greet.tar.gz",
		"https://h.example/x/greet.tar.gz?X-Amz-Signature=abc": "https://h.example/x/greet.tar.gz?…",
		"https://u:pw@h.example/greet.tar.gz?":                 "https://u:xxxxx@h.example/greet.tar.gz?…",
		"oci://r.example/acme/greet:1.0.0":                     "oci://r.example/acme/greet:1.0.0",
		"http://127.0.0.1:8080/greet.tar.gz?token=t#frag":      "http://127.0.0.1:8080/greet.tar.gz?…",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
