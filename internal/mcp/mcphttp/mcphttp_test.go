package mcphttp

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/rukh-cli/rukh/internal/mcp/bearer"
)

// Whatever arrives in an Authorization header, bearerToken returns a
// token only for one "Bearer" header with credentials, and never panics.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer abc", "Basic YQ==", "Bearer ", "Bearer", "", "Bearer  a b", "\x00Bearer x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		r.Header.Set("Authorization", header)
		tok, ok := bearerToken(r)
		if ok && tok == "" || !ok && tok != "" {
			t.Fatalf("%q: token %q ok %v", header, tok, ok)
		}
	})
}

// Whatever arrives as a body, check answers with nil (let through) or a
// JSON-RPC error response, and never panics.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `[]`, `{`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":""}}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, out := check(body); out != nil && (len(out) < 2 || out[0] != '{') {
			t.Fatalf("%q: refusal %q", body, out)
		}
	})
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		headers []string
		token   string
	}{
		{[]string{"Bearer abc"}, "abc"}, {[]string{"bearer abc"}, "abc"}, {[]string{"Bearer  abc "}, "abc"},
		{[]string{"Basic YWJj"}, ""}, {[]string{"Bearer"}, ""}, {[]string{"Bearer "}, ""}, {nil, ""},
		{[]string{"Bearer a", "Bearer b"}, ""}, // two headers: refused, never one picked
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		for _, h := range tc.headers {
			r.Header.Add("Authorization", h)
		}
		if tok, _ := bearerToken(r); tok != tc.token {
			t.Errorf("%q: %q, want %q", tc.headers, tok, tc.token)
		}
	}
}

// The refusal of a body says what the stdio guard or the adapter says.
func TestCheck(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, `"code":"jsonrpc_batch"`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"x"}`, `json_duplicate_key`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","inputResponses":{}}}`, `tools/call carries \"inputResponses\", but this server never asked for input`},
	} {
		_, refusal := check([]byte(tc.body))
		out := string(refusal)
		if tc.want == "" && out != "" || tc.want != "" && !strings.Contains(out, tc.want) {
			t.Errorf("%s: %q, want %q", tc.body, out, tc.want)
		}
	}
}

// A response over the bound is not sent: in its place, the JSON-RPC
// error for the request's id that says why; one within it goes as it was.
func TestBoundedWriter(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	small := &boundedWriter{header: http.Header{}, max: 10}
	small.Header().Set("Content-Type", "application/json")
	small.Write([]byte(`{"a":1}`))
	rec := httptest.NewRecorder()
	small.flush(rec, id)
	if rec.Body.String() != `{"a":1}` || rec.Header().Get("Content-Type") != "application/json" || rec.Code != 200 {
		t.Errorf("within the bound: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
	big := &boundedWriter{header: http.Header{}, max: 10}
	big.Write([]byte(`{"a":"0123456789"}`))
	rec = httptest.NewRecorder()
	big.flush(rec, id)
	if got := rec.Body.String(); !strings.Contains(got, `"id":7`) || !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "the response is more than 10 bytes") || strings.Contains(got, "0123456789") {
		t.Errorf("over the bound: %s", got)
	}
}

// One caller gets MaxConcurrentCaller requests at once, all callers
// MaxConcurrent; the next is refused (429) until one ends.
func TestAdmit(t *testing.T) {
	h := &Handler{slots: make(chan struct{}, MaxConcurrent), inUse: map[string]int{}}
	alice := &bearer.Caller{Issuer: "https://idp.test", Subject: "alice"}
	var releases []func()
	for i := range MaxConcurrentCaller {
		release, ok := h.admit(alice)
		if !ok {
			t.Fatalf("request %d of alice refused", i+1)
		}
		releases = append(releases, release)
	}
	if _, ok := h.admit(alice); ok {
		t.Fatalf("request %d of alice admitted", MaxConcurrentCaller+1)
	}
	releases[0]()
	if release, ok := h.admit(alice); !ok {
		t.Fatal("a request of alice refused after one ended")
	} else {
		releases[0] = release
	}
	// Others fill the rest of the slots, and no more.
	for i := MaxConcurrentCaller; i < MaxConcurrent; i++ {
		if _, ok := h.admit(&bearer.Caller{Issuer: "https://idp.test", Subject: fmt.Sprint("u", i)}); !ok {
			t.Fatalf("slot %d refused", i+1)
		}
	}
	if _, ok := h.admit(&bearer.Caller{Issuer: "https://idp.test", Subject: "late"}); ok {
		t.Errorf("request %d admitted", MaxConcurrent+1)
	}
}

// A revision keeps one server per caller (task, subject, issuer), made at
// its first request; past MaxBoundServers callers, a request's server is
// its own and not kept. A new revision is a new config, with none.
func TestServerPerCaller(t *testing.T) {
	h := &Handler{}
	c := &config{servers: map[caller]bound{}}
	alice := &bearer.Caller{Task: "agent", Subject: "alice", Issuer: "https://id.example"}
	first := h.server(c, alice)
	if again := h.server(c, &bearer.Caller{Task: "agent", Subject: "alice", Issuer: "https://id.example"}); again != first {
		t.Fatal("the same caller got another server in the same revision")
	}
	for _, other := range []*bearer.Caller{
		{Task: "agent", Subject: "bob", Issuer: "https://id.example"},
		{Task: "agent", Subject: "alice", Issuer: "https://other.example"},
		{Task: "reader", Subject: "alice", Issuer: "https://id.example"},
	} {
		if h.server(c, other) == first {
			t.Fatalf("%+v shares alice's server", other)
		}
	}
	for i := len(c.servers); i < MaxBoundServers; i++ {
		h.server(c, &bearer.Caller{Task: "agent", Subject: fmt.Sprint("s", i)})
	}
	over := &bearer.Caller{Task: "agent", Subject: "one-too-many"}
	if h.server(c, over) == h.server(c, over) || len(c.servers) != MaxBoundServers {
		t.Fatalf("past the bound: %d servers kept", len(c.servers))
	}
	if h.server(&config{servers: map[caller]bound{}}, alice) == first {
		t.Fatal("a new revision reused the old revision's server")
	}
}
