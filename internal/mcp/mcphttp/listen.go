package mcphttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/rukh-cli/rukh/internal/mcp/bearer"
	"github.com/rukh-cli/rukh/internal/mcp/guard"
)

// serveListen serves a subscriptions/listen request (protocol
// 2026-07-28), which is itself the stream: a server of its own, bound to
// the caller like every other, announces each revision the handler's
// watch reports (mcp.Options.Revisions), by the go-sdk's rules, as
// stdio's server does (docs/adr/0010-tools-list-changed.md). The stream
// holds one of the caller's listen slots (MaxListenCaller, MaxListen)
// and ends at the token's exp (a timer), when the handler's life ends
// (the server stops), or when the client goes away.
func (h *Handler) serveListen(w http.ResponseWriter, r *http.Request, c *config, who *bearer.Caller, id jsonrpc.ID) {
	if v := r.Header.Get("MCP-Protocol-Version"); v < "2026-07-28" {
		// Earlier versions have no such method; this server gives them
		// no stream at all (docs/adr/0014-http-list-changed.md).
		out, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("subscriptions/listen is a method of protocol 2026-07-28 (this request's MCP-Protocol-Version is %q): "+
				"listen with 2026-07-28; over HTTP an earlier client is not told of changes, and lists again when a call answers unknown tool", v)}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(out)
		return
	}
	if !who.Expiry.After(time.Now()) {
		// Within the verifier's skew: a stream would end at once.
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, error="invalid_token", error_description="the token expired"`, metadataURL(c.http.Resource)))
		refuseListen(w, id, http.StatusUnauthorized, fmt.Sprintf("the token expired at %s: a subscriptions/listen stream lasts until its token's exp; listen again with a fresh token",
			who.Expiry.UTC().Format(time.RFC3339)))
		return
	}
	if h.revisions == nil {
		// The handler could not watch the store (New logged why), and
		// initialize offers no listChanged: a stream would tell nothing.
		refuseListen(w, id, http.StatusNotImplemented, "this server cannot watch the store for changes (its log says why), so it serves no subscriptions/listen stream; list the tools again when a call answers unknown tool")
		return
	}
	release, err := h.admitListen(who)
	if err != nil {
		refuseListen(w, id, http.StatusTooManyRequests, err.Error())
		return
	}
	defer release()
	revisions, stop := h.revisions.subscribe()
	defer stop()
	ctx, cancel := context.WithDeadline(r.Context(), who.Expiry)
	defer cancel()
	if h.life != nil {
		defer context.AfterFunc(h.life, cancel)()
	}
	srv := h.newServer(who, revisions)
	h.sdkHandler(srv, false).ServeHTTP(&streamWriter{w: w, max: guard.DefaultLimits().MaxResponse, id: id}, r.WithContext(ctx))
}

// refuseListen answers a listen request with a JSON-RPC error for its id.
func refuseListen(w http.ResponseWriter, id jsonrpc.ID, status int, msg string) {
	out, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeRefused, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}

// codeRefused is the JSON-RPC error code of a listen stream refused for
// a bound (an implementation-defined server error).
const codeRefused = -32000

// errListenCaller and errListen are the refusals of admitListen.
var (
	errListenCaller = fmt.Errorf("this caller has %d subscriptions/listen streams open already, the most one caller may (mcphttp.MaxListenCaller); close one, or share one stream among your sessions", MaxListenCaller)
	errListen       = fmt.Errorf("%d subscriptions/listen streams are open already, the most this server holds (mcphttp.MaxListen); retry later", MaxListen)
)

// admitListen takes a listen slot overall and one of the caller's.
func (h *Handler) admitListen(c *bearer.Caller) (release func(), err error) {
	select {
	case h.listens <- struct{}{}:
	default:
		return nil, errListen
	}
	key := c.Issuer + "\x00" + c.Subject
	h.callMu.Lock()
	if h.listening[key] >= MaxListenCaller {
		h.callMu.Unlock()
		<-h.listens
		return nil, errListenCaller
	}
	h.listening[key]++
	h.callMu.Unlock()
	return sync.OnceFunc(func() {
		h.callMu.Lock()
		if h.listening[key]--; h.listening[key] == 0 {
			delete(h.listening, key)
		}
		h.callMu.Unlock()
		<-h.listens
	}), nil
}

// hub hands each revision of one watch to every listen stream's server.
type hub struct {
	mu   sync.Mutex
	subs map[chan uint64]struct{}
	done bool // the watch ended
}

func newHub(revisions <-chan uint64) *hub {
	h := &hub{subs: map[chan uint64]struct{}{}}
	go func() {
		for rev := range revisions {
			h.mu.Lock()
			for c := range h.subs {
				select {
				case c <- rev:
				default: // one is pending: the server will announce, and lists the newest
				}
			}
			h.mu.Unlock()
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.done = true
		for c := range h.subs {
			delete(h.subs, c)
			close(c)
		}
	}()
	return h
}

// subscribe returns a channel of the revisions published from now on and
// the function that closes it. A nil hub (no watch) gives nil: the
// stream's server then announces nothing and advertises no listChanged.
func (h *hub) subscribe() (<-chan uint64, func()) {
	if h == nil {
		return nil, func() {}
	}
	c := make(chan uint64, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		close(c)
		return c, func() {}
	}
	h.subs[c] = struct{}{}
	return c, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[c]; ok {
			delete(h.subs, c)
			close(c)
		}
	}
}

// streamWriter passes an event stream to the client as it is written.
// The go-sdk writes each event with one Write; an event over the stdio
// guard's bound for one message is not sent: in its place goes the
// JSON-RPC error for the request's id that says why, and nothing after
// it. A response that is not a stream (an error the SDK answers with a
// status) passes as it is.
type streamWriter struct {
	w    http.ResponseWriter
	max  int
	id   jsonrpc.ID
	over bool
}

// eventFraming is what the SDK puts around one message in an event.
const eventFraming = len("event: message\ndata: \n\n")

var errTooLarge = errors.New("a message over the response bound was not sent")

func (s *streamWriter) Header() http.Header { return s.w.Header() }

func (s *streamWriter) WriteHeader(status int) { s.w.WriteHeader(status) }

func (s *streamWriter) Write(p []byte) (int, error) {
	if s.over {
		return 0, errTooLarge
	}
	if len(p) <= s.max+eventFraming {
		return s.w.Write(p)
	}
	s.over = true
	msg, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: s.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("the response is more than %d bytes, the limit of one message; nothing of it was sent (ask for less: fewer ops, a smaller result)", s.max)}})
	if s.w.Header().Get("Content-Type") == "text/event-stream" {
		msg = []byte("event: message\ndata: " + string(msg) + "\n\n")
	}
	s.w.Write(msg)
	http.NewResponseController(s.w).Flush()
	return 0, errTooLarge
}

// FlushError flushes what was written (the SDK flushes every event).
func (s *streamWriter) FlushError() error { return http.NewResponseController(s.w).Flush() }

// Unwrap gives http.ResponseController the writer underneath.
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.w }
