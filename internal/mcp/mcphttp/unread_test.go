package mcphttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/profile"
)

// readCounter is a request body that counts what was read of it.
type readCounter struct{ n int }

func (r *readCounter) Read(p []byte) (int, error) {
	r.n += len(p)
	return len(p), nil
}

// A stranger's request is answered from its headers — no token, a bad
// one, an origin not allowed — with not a byte of its body read, and the
// connection closed after the answer (issue 25: bodies were read in full
// before the token was checked).
func TestRefusedBeforeTheBody(t *testing.T) {
	h := &Handler{slots: make(chan struct{}, MaxConcurrent), inUse: map[string]int{}}
	c := &config{http: &profile.HTTP{Resource: "https://rukh.test/mcp", AllowedOrigins: []string{"https://app.test"}}}
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"not bearer", map[string]string{"Authorization": "Basic eDp5"}, http.StatusUnauthorized},
		{"origin", map[string]string{"Origin": "https://evil.test"}, http.StatusForbidden},
	} {
		body := &readCounter{}
		r := httptest.NewRequest(http.MethodPost, Path, io.LimitReader(body, 1<<20))
		r.ContentLength = 1 << 20
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.serveMCP(w, r, c)
		if w.Code != tc.status || body.n != 0 || w.Header().Get("Connection") != "close" {
			t.Errorf("%s: status %d, %d body bytes read, Connection %q; want %d, none read, close", tc.name, w.Code, body.n, w.Header().Get("Connection"), tc.status)
		}
	}
}

// Past MaxConnections, a connection is answered 503 at once and closed,
// unread; one closed gives its slot back.
func TestConnectionCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listen(inner, true)
	defer ln.Close()
	accepted := make(chan net.Conn, MaxConnections+1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var held []net.Conn
	for range MaxConnections {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case s := <-accepted:
			held = append(held, s)
		case <-time.After(10 * time.Second):
			t.Fatal("a connection under the cap was not accepted within 10 s")
		}
	}
	over, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("over the cap: %v %+v; want 503 with Retry-After", err, resp)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "too many connections") {
		t.Errorf("over the cap: body %q", b)
	}
	held[0].Close()
	again, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("a connection after one closed was not accepted within 10 s")
	}
}
