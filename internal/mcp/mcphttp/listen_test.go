package mcphttp

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/mcp/bearer"
	"github.com/rukh-cli/rukh/internal/testjwt"
)

// One caller gets MaxListenCaller streams at once, all callers
// MaxListen; the next is refused, with the bound it met, until one ends.
func TestAdmitListen(t *testing.T) {
	h := &Handler{listens: make(chan struct{}, MaxListen), listening: map[string]int{}}
	alice := &bearer.Caller{Issuer: "https://idp.test", Subject: "alice"}
	var releases []func()
	for i := range MaxListenCaller {
		release, err := h.admitListen(alice)
		if err != nil {
			t.Fatalf("stream %d of alice refused: %v", i+1, err)
		}
		releases = append(releases, release)
	}
	if _, err := h.admitListen(alice); err != errListenCaller {
		t.Fatalf("stream %d of alice: %v, want %v", MaxListenCaller+1, err, errListenCaller)
	}
	releases[0]()
	releases[0]() // a second release gives back nothing more
	if release, err := h.admitListen(alice); err != nil {
		t.Fatalf("a stream of alice refused after one ended: %v", err)
	} else {
		releases[0] = release
	}
	for i := MaxListenCaller; i < MaxListen; i++ {
		if _, err := h.admitListen(&bearer.Caller{Issuer: "https://idp.test", Subject: fmt.Sprint("u", i)}); err != nil {
			t.Fatalf("stream %d refused: %v", i+1, err)
		}
	}
	if _, err := h.admitListen(&bearer.Caller{Issuer: "https://idp.test", Subject: "late"}); err != errListen {
		t.Errorf("stream %d: %v, want %v", MaxListen+1, err, errListen)
	}
}

// listenFixture is a handler with one section binding alice, a hub fed
// by revisions, and a server (with a short ReadTimeout) in front of it.
type listenFixture struct {
	h         *Handler
	revisions chan uint64
	url       string
	key       ed25519.PrivateKey
}

func newListenFixture(t *testing.T, life context.Context) *listenFixture {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA", Use: "sig"}}})
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, set, 0o600); err != nil {
		t.Fatal(err)
	}
	ph := &profile.HTTP{Resource: "https://rukh.test/mcp", AuthorizationServers: []profile.AuthorizationServer{{Issuer: "https://idp.test", JWKSURI: "file://" + jwks}},
		Bindings: []profile.Binding{{Issuer: "https://idp.test", Subject: "alice", Task: "agent"}}}
	keys := map[string]*bearer.KeySet{"https://idp.test": bearer.NewKeySet("file://"+jwks, nil, nil)}
	c := &config{http: ph, keys: keys, verifier: bearer.NewVerifier(ph, keys, nil), servers: map[caller]bound{}}
	revisions := make(chan uint64)
	t.Cleanup(func() { close(revisions) })
	h := &Handler{opts: Options{Name: "rukh", Version: "test"}, slots: make(chan struct{}, MaxConcurrent), inUse: map[string]int{},
		life: life, revisions: newHub(revisions), listens: make(chan struct{}, MaxListen), listening: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveMCP(w, r, c) }))
	srv.Config.ReadTimeout = 200 * time.Millisecond // as the CLI's, only shorter
	srv.Start()
	t.Cleanup(srv.Close)
	return &listenFixture{h: h, revisions: revisions, url: srv.URL + Path, key: key}
}

// listen opens a stream with a token of alice's that expires at exp and
// returns its events' data, one line each, and the acknowledgement read.
func (f *listenFixture) listen(t *testing.T, ctx context.Context, exp time.Time) <-chan string {
	t.Helper()
	resp := f.post(t, ctx, exp)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	data := make(chan string, 8)
	go func() {
		defer close(data)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data <- d
			}
		}
	}()
	if d := next(t, ctx, data, "the acknowledgement"); !strings.Contains(d, "notifications/subscriptions/acknowledged") {
		t.Fatalf("the first event is %s", d)
	}
	return data
}

// post sends the listen request with a token of alice's that expires at
// exp; the body is closed at the test's end.
func (f *listenFixture) post(t *testing.T, ctx context.Context, exp time.Time) *http.Response {
	t.Helper()
	tok := testjwt.Mint(jose.SigningKey{Algorithm: jose.EdDSA, Key: f.key}, "k1",
		map[string]any{"iss": "https://idp.test", "sub": "alice", "aud": "https://rukh.test/mcp", "exp": exp.Unix()})
	body := `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// next is the next event's data, or the test fails saying what it
// waited for.
func next(t *testing.T, ctx context.Context, data <-chan string, what string) string {
	t.Helper()
	select {
	case d, ok := <-data:
		if !ok {
			t.Fatalf("the stream ended before %s", what)
		}
		return d
	case <-ctx.Done():
		t.Fatalf("no %s", what)
	}
	return ""
}

// ended waits until the stream has ended, failing with what should have
// ended it.
func ended(t *testing.T, ctx context.Context, data <-chan string, why string) {
	t.Helper()
	for {
		select {
		case d, ok := <-data:
			if !ok {
				return
			}
			if !strings.Contains(d, `"result"`) { // the listen's own result may close it
				t.Errorf("an event before the end (%s): %s", why, d)
			}
		case <-ctx.Done():
			t.Fatalf("the stream did not end when %s", why)
		}
	}
}

// A listen stream outlives the server's ReadTimeout, tells of each
// revision the watch reports (tools/list_changed, for its request id),
// and ends when its token's exp passes, not before; another ends when
// the handler's life does (the server stops). Its slot is free again
// once it ended.
func TestListenStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	life, stop := context.WithCancel(ctx)
	f := newListenFixture(t, life)

	// 2-3 s ahead (a JWT's exp is whole seconds): the stream opens
	// before it even on a loaded machine.
	exp := time.Now().Add(3 * time.Second).Truncate(time.Second)
	data := f.listen(t, ctx, exp)
	f.revisions <- 2
	if d := next(t, ctx, data, "tools/list_changed after a revision"); !strings.Contains(d, `"method":"notifications/tools/list_changed"`) ||
		!strings.Contains(d, `"io.modelcontextprotocol/subscriptionId":5`) {
		t.Errorf("after a revision: %s", d)
	}
	ended(t, ctx, data, "its token expired")
	if now := time.Now(); now.Before(exp) {
		t.Errorf("the stream of a token expiring at %s ended at %s", exp.Format(time.StampMilli), now.Format(time.StampMilli))
	}

	// A token past its exp but within the verifier's skew: no stream.
	resp := f.post(t, ctx, time.Now().Add(-10*time.Second))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
		!strings.Contains(string(body), `"id":5`) || !strings.Contains(string(body), "a subscriptions/listen stream lasts until its token's exp") {
		t.Errorf("a listen with an expired token: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}

	data = f.listen(t, ctx, time.Now().Add(time.Hour))
	stop()
	ended(t, ctx, data, "the handler's life ended")
	f.h.callMu.Lock()
	open := len(f.h.listening)
	f.h.callMu.Unlock()
	if open != 0 || len(f.h.listens) != 0 {
		t.Errorf("after the streams ended: %d callers and %d slots held", open, len(f.h.listens))
	}
}

// An event stream passes as it is written, event by event, flushed; an
// event over the bound is not sent: in its place goes the error for the
// request's id, as an event, and nothing after it.
func TestStreamWriter(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	rec := httptest.NewRecorder()
	s := &streamWriter{w: rec, max: 40, id: id}
	s.Header().Set("Content-Type", "text/event-stream")
	small := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"
	if _, err := s.Write([]byte(small)); err != nil {
		t.Fatalf("a small event: %v", err)
	}
	if err := http.NewResponseController(s).Flush(); err != nil || !rec.Flushed {
		t.Errorf("flushing through the writer: %v (flushed %v)", err, rec.Flushed)
	}
	big := "event: message\ndata: {\"result\":\"" + strings.Repeat("0", 64) + "\"}\n\n"
	if _, err := s.Write([]byte(big)); err == nil {
		t.Error("an event over the bound was taken")
	}
	if _, err := s.Write([]byte(small)); err == nil {
		t.Error("an event after one over the bound was taken")
	}
	got := rec.Body.String()
	if !strings.HasPrefix(got, small) || strings.Contains(got, "0000") || strings.Count(got, "event: message\n") != 2 ||
		!strings.Contains(got, `"id":7`) || !strings.Contains(got, "the response is more than 40 bytes") {
		t.Errorf("the stream: %q", got)
	}
}

// A handler that could not watch the store (New logged why; initialize
// offers no listChanged) refuses a listen stream, 501, instead of one
// that would tell nothing and hold a slot until its token's exp.
func TestListenWithoutAWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	f := newListenFixture(t, ctx)
	f.h.revisions = nil
	resp := f.post(t, ctx, time.Now().Add(time.Hour))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), `"id":5`) ||
		!strings.Contains(string(body), "cannot watch the store for changes") {
		t.Errorf("listen without a watch: %d %s", resp.StatusCode, body)
	}
	if len(f.h.listens) != 0 {
		t.Errorf("the refused listen holds %d slots", len(f.h.listens))
	}
}
