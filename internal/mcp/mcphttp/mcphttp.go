// Package mcphttp serves the MCP presentation over Streamable HTTP
// (`rukh mcp --http`) as an OAuth 2.1 resource server: every request
// carries a bearer token, which package bearer verifies and binds to a
// task; the request is then served by the same adapter as stdio
// (package mcp), bound to that task, on the same ToolHost. The token goes
// no further than the verifier: not to the adapter, the core or any
// command (docs/adr/0011-http-adapter.md).
package mcphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/mcp/bearer"
	"github.com/rukh-cli/rukh/internal/mcp/guard"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// Limits of the adapter.
const (
	// MaxConcurrent bounds the requests served at once, overall and for
	// one caller (issuer and subject); beyond either the answer is 429.
	MaxConcurrent       = 64
	MaxConcurrentCaller = 8
	// MaxConnections bounds the connections held open at once, whoever
	// sent them; one over it is answered 503 at once, and closed, without
	// a byte of it read (Listen). With the server's header bound
	// (MaxHeaderBytes) it bounds what strangers can make the adapter hold:
	// no request body is read before its token is valid and it holds a
	// slot (MaxConcurrent bodies of one message at most).
	MaxConnections = 256
	// MaxHeaderBytes bounds one request's header (net/http.Server).
	MaxHeaderBytes = 64 << 10
	// MaxBoundServers bounds the callers (task, subject, issuer) whose
	// server one revision keeps; a request of a caller past them is
	// served by a server made for it alone.
	MaxBoundServers = 1024
	// MaxListen bounds the subscriptions/listen streams open at once,
	// overall and for one caller (issuer and subject); one more is
	// refused, 429 with a JSON-RPC error that says which bound it met. A
	// stream holds no request slot (MaxConcurrent) while it is open; it
	// ends at its token's exp, when the server stops, or when the
	// client goes away.
	MaxListen       = 64
	MaxListenCaller = 4
)

// Listen wraps ln so that it holds at most MaxConnections connections:
// past them, a new connection is answered at once — 503 with Retry-After
// over plain HTTP, a close under TLS, whose handshake has not begun — and
// closed without being read. A connection counts until it is closed.
func Listen(ln net.Listener, plainHTTP bool) net.Listener {
	return &capped{Listener: ln, slots: make(chan struct{}, MaxConnections), plain: plainHTTP}
}

type capped struct {
	net.Listener
	slots chan struct{}
	plain bool
}

// overCap is the answer to a connection past the cap.
const overCap = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 36\r\n\r\ntoo many connections at once; retry\n"

func (l *capped) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			if l.plain {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				io.WriteString(c, overCap)
			}
			c.Close()
		}
	}
}

// slotConn gives its slot back once, when it is closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Options configure a Handler.
type Options struct {
	Host    seam.ToolHost
	Name    string // the CLI's name
	Version string
	Logger  *slog.Logger
	// Diagnostics receives the diagnostics log of every request's calls
	// (the bounded output of commands, their starts and outcomes),
	// through one queue for all of them (mcp.LogQueue).
	Diagnostics io.Writer
	// KeySets gives an issuer's key set; nil: NewKeySet of its jwksUri.
	KeySets func(profile.AuthorizationServer) *bearer.KeySet
}

// Handler serves one home's MCP endpoint and its protected resource
// metadata, configured by the active profile's mcp.http section, which it
// checks at every request: a change the owner publishes (a binding
// removed, the section removed) applies to the next request.
type Handler struct {
	opts Options

	mu       sync.Mutex
	loaded   bool    // revision was read
	revision uint64  // the revision conf is of
	conf     *config // nil when that revision has no section

	diag   *mcp.LogQueue // shared by every request's server
	slots  chan struct{}
	callMu sync.Mutex
	inUse  map[string]int // requests in flight by issuer + "\x00" + subject

	life      context.Context // New's: the watch and every listen stream end with it
	revisions *hub            // the one watch of the store; nil if it could not start
	listens   chan struct{}   // MaxListen
	listening map[string]int  // listen streams open by issuer + "\x00" + subject (callMu)
}

// config is one revision's section, with its verifier and the servers
// it made for its callers.
type config struct {
	http     *profile.HTTP
	verifier *bearer.Verifier
	keys     map[string]*bearer.KeySet

	mu      sync.Mutex
	servers map[caller]bound // at most MaxBoundServers
}

// bound is one caller's server behind the go-sdk's Streamable HTTP
// handler, twice: answering with one JSON document, and with an event
// stream (a tools/call with a progress token, whose notifications go in
// its own response).
type bound struct{ json, stream http.Handler }

// caller is what a request's server is bound to.
type caller struct{ task, subject, issuer string }

// ErrNoSection is returned by New when the profile has no mcp.http.
var ErrNoSection = fmt.Errorf("the active profile has no mcp.http section, so nothing is served over HTTP (local MCP never enables it); add one: see docs/mcp.md, \"Over HTTP\"")

// New reads the section and returns the handler, which lives as long
// as ctx: it watches the store for new revisions (for subscriptions/listen
// streams) until ctx ends, and every stream ends with it.
func New(ctx context.Context, opts Options) (*Handler, error) {
	if opts.KeySets == nil {
		opts.KeySets = func(as profile.AuthorizationServer) *bearer.KeySet { return bearer.NewKeySet(as.JWKSURI, nil, nil) }
	}
	h := &Handler{opts: opts, slots: make(chan struct{}, MaxConcurrent), inUse: map[string]int{},
		life: ctx, listens: make(chan struct{}, MaxListen), listening: map[string]int{}}
	if opts.Diagnostics != nil {
		h.diag = mcp.NewLogQueue(opts.Diagnostics)
	}
	c, err := h.current(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, ErrNoSection
	}
	if revs, err := opts.Host.WatchRevisions(ctx); err != nil {
		if opts.Logger != nil {
			opts.Logger.Warn("mcp http: subscriptions/listen streams will not be told when the owner changes the tools: "+err.Error(), "listChanged", false)
		}
	} else {
		h.revisions = newHub(revs)
	}
	return h, nil
}

// current is the active revision's section (nil when it has none): read
// again, and its verifier built, only when the revision changed; key sets
// of issuers that stay are kept (with what they fetched).
func (h *Handler) current(ctx context.Context) (*config, error) {
	sec, err := h.opts.Host.HTTPSection(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loaded && sec.Revision == h.revision {
		return h.conf, nil
	}
	var conf *config
	if len(sec.Section) > 0 {
		var ph profile.HTTP
		if err := json.Unmarshal(sec.Section, &ph); err != nil {
			return nil, err
		}
		keys := map[string]*bearer.KeySet{}
		for _, as := range ph.AuthorizationServers {
			if old := h.conf; old != nil && old.keys[as.Issuer] != nil && slices.ContainsFunc(old.http.AuthorizationServers, func(o profile.AuthorizationServer) bool { return o == as }) {
				keys[as.Issuer] = old.keys[as.Issuer]
			} else {
				keys[as.Issuer] = h.opts.KeySets(as)
			}
		}
		conf = &config{http: &ph, keys: keys, verifier: bearer.NewVerifier(&ph, keys, nil), servers: map[caller]bound{}}
	} else if h.conf != nil && h.opts.Logger != nil {
		h.opts.Logger.Warn("mcp http: the owner removed mcp.http; every request is refused", "revision", sec.Revision)
	}
	h.loaded, h.revision, h.conf = true, sec.Revision, conf
	return conf, nil
}

// MetadataPaths are where the protected resource metadata is served
// (RFC 9728: the well-known path, and the same with the resource's path).
var MetadataPaths = []string{"/.well-known/oauth-protected-resource" + Path, "/.well-known/oauth-protected-resource"}

// ServeHTTP routes the metadata and the endpoint.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := h.current(r.Context())
	if err != nil {
		http.Error(w, "cannot read the owner's profile: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if c == nil {
		http.Error(w, "the owner's profile no longer has mcp.http: nothing is served over HTTP", http.StatusServiceUnavailable)
		return
	}
	switch {
	case slices.Contains(MetadataPaths, r.URL.Path):
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               c.http.Resource,
			AuthorizationServers:   issuers(c.http),
			ScopesSupported:        c.http.RequiredScopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           h.opts.Name,
		}).ServeHTTP(w, r)
	case r.URL.Path == Path:
		h.serveMCP(w, r, c)
	default:
		http.NotFound(w, r)
	}
}

func issuers(h *profile.HTTP) []string {
	var out []string
	for _, as := range h.AuthorizationServers {
		out = append(out, as.Issuer)
	}
	return out
}

// metadataURL is the resource metadata's URL for the resource: the
// well-known path inserted before the resource's path.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return resource
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	u.RawQuery = ""
	return u.String()
}

// serveMCP checks one request in order — Origin, the token, the
// caller's share of the slots: all from the headers, so that a stranger
// is answered before a byte of its body is read and holds nothing here
// — then the body (the stdio guard's checks, at most one message), and
// serves it statelessly, bound to the caller's task. A refusal before the
// body closes the connection, so its unread body is never drained.
func (h *Handler) serveMCP(w http.ResponseWriter, r *http.Request, c *config) {
	if o := r.Header.Get("Origin"); o != "" && !slices.Contains(c.http.AllowedOrigins, o) {
		refuseUnread(w, fmt.Sprintf("origin %q is not allowed (mcp.http.allowedOrigins)", o), http.StatusForbidden)
		return
	}
	token, ok := bearerToken(r)
	var caller *bearer.Caller
	err := error(&bearer.Error{Status: 401, Code: "invalid_token", Description: "no bearer token: send Authorization: Bearer <access token>"})
	if ok {
		caller, err = c.verifier.Verify(r.Context(), token)
	}
	if err != nil {
		be, _ := err.(*bearer.Error)
		if be == nil {
			be = &bearer.Error{Status: 401, Code: "invalid_token", Description: err.Error()}
		}
		challenge := fmt.Sprintf(`Bearer resource_metadata=%q`, metadataURL(c.http.Resource))
		if be.Code != "" {
			challenge += fmt.Sprintf(`, error=%q, error_description=%q`, be.Code, quoteSafe(be.Description))
		}
		if be.Code == "insufficient_scope" {
			challenge += fmt.Sprintf(`, scope=%q`, strings.Join(c.http.RequiredScopes, " "))
		}
		w.Header().Set("WWW-Authenticate", challenge)
		refuseUnread(w, be.Description, be.Status)
		return
	}
	admitted, ok := h.admit(caller)
	if !ok {
		w.Header().Set("Retry-After", "1")
		refuseUnread(w, "too many requests at once; retry", http.StatusTooManyRequests)
		return
	}
	release := sync.OnceFunc(admitted)
	defer release()
	var id jsonrpc.ID
	var req *jsonrpc.Request
	if r.Method == http.MethodPost {
		max := int64(guard.DefaultLimits().MaxMessage)
		if r.ContentLength > max {
			refuseUnread(w, fmt.Sprintf("the request body is more than %d bytes", max), http.StatusRequestEntityTooLarge)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			refuseUnread(w, fmt.Sprintf("the request body is more than %d bytes", max), http.StatusRequestEntityTooLarge)
			return
		}
		msg, refusal := check(body)
		if refusal != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(refusal)
			return
		}
		if req, _ = msg.(*jsonrpc.Request); req != nil {
			id = req.ID
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	max := guard.DefaultLimits().MaxResponse
	switch {
	case req != nil && req.IsCall() && req.Method == "subscriptions/listen":
		// A stream holds a listen slot, not a request slot.
		release()
		h.serveListen(w, r, c, caller, req.ID)
	case req != nil && req.IsCall() && req.Method == "tools/call" && hasProgressToken(req.Params):
		// The call's progress notifications go in its own response, an
		// event stream, each message within the stdio guard's bound.
		h.server(c, caller).stream.ServeHTTP(&streamWriter{w: w, max: max, id: id}, r)
	default:
		// The answer is one JSON document (JSONResponse), held until it
		// is whole: one over the stdio guard's bound is replaced by an
		// error, as on stdio.
		out := &boundedWriter{header: http.Header{}, max: max}
		h.server(c, caller).json.ServeHTTP(out, r)
		out.flush(w, id)
	}
}

// hasProgressToken reports whether tools/call params ask for progress
// (_meta.progressToken, not null).
func hasProgressToken(params json.RawMessage) bool {
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	return json.Unmarshal(params, &p) == nil && len(p.Meta.ProgressToken) > 0 && string(p.Meta.ProgressToken) != "null"
}

// server is the stateless MCP server of c's revision bound to the
// caller's task and identity: made at its first request and kept with
// the revision (a new revision is a new config), so a request costs the
// session the go-sdk makes for it and no more. Every request is still
// its own session, and each call reads the projection of the revision
// it runs in.
func (h *Handler) server(c *config, who *bearer.Caller) bound {
	key := caller{who.Task, who.Subject, who.Issuer}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.servers[key]; ok {
		return s
	}
	// It advertises listChanged to 2026-07-28 clients when their
	// subscriptions/listen can be served (serveListen).
	srv := h.newServer(who, nil)
	s := bound{json: h.sdkHandler(srv, true), stream: h.sdkHandler(srv, false)}
	if len(c.servers) < MaxBoundServers {
		c.servers[key] = s
	}
	return s
}

// newServer is a stateless MCP server bound to the caller, announcing
// revisions when given them.
func (h *Handler) newServer(who *bearer.Caller, revisions <-chan uint64) *mcp.Server {
	so := mcp.Options{
		Host: h.opts.Host, Binding: mcp.Binding{Task: who.Task, Subject: who.Subject, Issuer: who.Issuer},
		Name: h.opts.Name, Version: h.opts.Version, Logger: h.opts.Logger, Stateless: true,
		Revisions: revisions, AdvertiseListen: h.revisions != nil,
	}
	if h.diag != nil { // never a nil *LogQueue in the interface
		so.Diagnostics = h.diag
	}
	return mcp.NewServer(so)
}

// sdkHandler is the go-sdk's stateless Streamable HTTP handler of srv.
func (h *Handler) sdkHandler(srv *mcp.Server, jsonResponse bool) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv.Server }, &sdk.StreamableHTTPOptions{
		Stateless: true, JSONResponse: jsonResponse, Logger: h.opts.Logger,
	})
}

// refuseUnread answers a request whose body it did not read, and closes
// the connection after the answer: the server then reads none of that
// body (net/http would otherwise drain up to 256 KiB of it to reuse the
// connection).
func refuseUnread(w http.ResponseWriter, msg string, status int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, status)
}

// boundedWriter holds a response of at most max bytes.
type boundedWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
	max    int
	over   int // bytes refused beyond max
}

func (b *boundedWriter) Header() http.Header { return b.header }

func (b *boundedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	if b.over > 0 || b.buf.Len()+len(p) > b.max {
		b.over += len(p)
		return 0, fmt.Errorf("the response is over %d bytes", b.max)
	}
	return b.buf.Write(p)
}

// flush sends the response held, or in its place the error that says it
// was too large (for the request id).
func (b *boundedWriter) flush(w http.ResponseWriter, id jsonrpc.ID) {
	if b.over == 0 {
		for k, v := range b.header {
			w.Header()[k] = v
		}
		if b.status == 0 {
			b.status = http.StatusOK
		}
		w.WriteHeader(b.status)
		w.Write(b.buf.Bytes())
		return
	}
	msg, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("the response is more than %d bytes, the limit of one message; nothing of it was sent (ask for less: fewer ops, a smaller result)", b.max)}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(msg)
}

// check applies the stdio guard's checks and the adapter's refusal of
// unsolicited input to a request body: the message, or the error
// response to send instead.
func check(body []byte) (jsonrpc.Message, []byte) {
	msg, refusal, _ := guard.Check(body, guard.DefaultLimits())
	if refusal != nil {
		return nil, refusal
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if e := mcp.Unsolicited(req); e != nil {
			out, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: e})
			return nil, out
		}
	}
	return msg, nil
}

// bearerToken is the credentials of an Authorization: Bearer header.
func bearerToken(r *http.Request) (string, bool) {
	v := r.Header.Values("Authorization")
	if len(v) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(v[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// quoteSafe keeps a description within what a quoted-string may hold.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r > 0x7e {
			return '\''
		}
		return r
	}, s)
}

// admit takes a slot overall and one of the caller's; false when either
// is full.
func (h *Handler) admit(c *bearer.Caller) (release func(), ok bool) {
	select {
	case h.slots <- struct{}{}:
	default:
		return nil, false
	}
	key := c.Issuer + "\x00" + c.Subject
	h.callMu.Lock()
	if h.inUse[key] >= MaxConcurrentCaller {
		h.callMu.Unlock()
		<-h.slots
		return nil, false
	}
	h.inUse[key]++
	h.callMu.Unlock()
	return func() {
		h.callMu.Lock()
		if h.inUse[key]--; h.inUse[key] == 0 {
			delete(h.inUse, key)
		}
		h.callMu.Unlock()
		<-h.slots
	}, true
}
