package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/mcp/mcphttp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// greetHTTPProfile exposes examples/greet to task agent, which the tests'
// issuer binds alice to over HTTP; NAMESPACE is replaced, so that another
// apply renames every tool.
func greetHTTPProfile(is *localIssuer) string {
	return `{"endpointNamespace":"NAMESPACE","cli":{"task":"owner"},"mcp":{"expose":["acme.greet/*"],"task":"agent",
		"http":{"resource":"` + httpResource + `","authorizationServers":[{"issuer":"` + httpIssuer + `","jwksUri":"file://` + is.jwks + `"}],
		        "requiredScopes":["rukh:call"],"bindings":[{"issuer":"` + httpIssuer + `","subject":"alice","task":"agent"}]}},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["acme.*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`
}

// greetHTTP is a home with examples/greet installed and exposed over
// HTTP, served by host h, and `rukh mcp --http` on it.
type greetHTTP struct {
	dir, home, base string
	env             []string
	issuer          *localIssuer
	rukh            string
}

func newGreetHTTP(t *testing.T, h *testHost) *greetHTTP {
	t.Helper()
	rel := greetRelease(t)
	dir := testhome.TempDir(t)
	g := &greetHTTP{dir: dir, home: filepath.Join(dir, "home"), issuer: newLocalIssuer(t, dir), rukh: h.Rukh}
	a := testhome.InstallPinned(t, filepath.Join(g.home, "data"), rel)
	testhome.Apply(t, a, strings.Replace(greetHTTPProfile(g.issuer), "NAMESPACE", "greet", 1))
	h.serve(t, g.home)
	g.env = append(os.Environ(), "RUKH_HOME="+g.home)
	g.base = startHTTP(t, h.Rukh, g.env)
	return g
}

// rename applies the profile again under another endpoint namespace: a
// new revision, in which every tool has a new name.
func (g *greetHTTP) rename(t *testing.T, ns string) {
	t.Helper()
	file := filepath.Join(g.dir, ns+".json")
	if err := os.WriteFile(file, []byte(strings.Replace(greetHTTPProfile(g.issuer), "NAMESPACE", ns, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	apply := exec.Command(g.rukh, "profile", "apply", "-f", file)
	apply.Env = g.env
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("profile apply: %v\n%s", err, out)
	}
}

// connect is the go-sdk client over Streamable HTTP through rt (a
// bearerTransport).
func (g *greetHTTP) connect(t *testing.T, ctx context.Context, rt http.RoundTripper, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stream-test", Version: "1"}, opts).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s: connect: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs
}

// post sends one JSON-RPC message to /mcp as a client of version would
// (2026-07-28: the protocol header and the request's _meta) and returns
// the response; the caller closes its body.
func (g *greetHTTP) post(t *testing.T, ctx context.Context, token, version, msg string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/mcp", strings.NewReader(msg))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	if version >= "2026-07-28" {
		var m struct {
			Method string
			Params struct{ Name string }
		}
		json.Unmarshal([]byte(msg), &m)
		req.Header.Set("Mcp-Method", m.Method)
		if m.Params.Name != "" {
			req.Header.Set("Mcp-Name", m.Params.Name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// meta is the per-request _meta of a 2026-07-28 client, as members of
// params ("" before 2026-07-28).
func meta(version string) string {
	if version < "2026-07-28" {
		return ""
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
}

// sseMessages reads the JSON-RPC messages of an event stream until it
// ends, sending each to out, then closes out; the stream's read error, if
// any, goes last as a message with method "read error".
func sseMessages(body io.Reader, out chan<- map[string]any) {
	defer close(out)
	r := bufio.NewReader(body)
	for {
		line, err := r.ReadString('\n')
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) != nil {
				m = map[string]any{"method": "unparsed", "data": data}
			}
			out <- m
		}
		if err != nil {
			if err != io.EOF {
				out <- map[string]any{"method": "read error", "error": err.Error()}
			}
			return
		}
	}
}

// A tools/call with a progress token over HTTP gets its progress in its
// own response, an event stream: greet's three progress frames arrive as
// three notifications/progress before the result, on both protocol
// versions, in process and through rukhd, with the go-sdk client, the
// TypeScript SDK client (2025-11-25) and on the wire. A call without a
// token is still one application/json document.
func TestHTTPProgress(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		g := newGreetHTTP(t, h)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		alice := g.issuer.token(t, "alice", nil)
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			notes := make(chan *sdk.ProgressNotificationParams, 16)
			cs := g.connect(t, ctx, bearerTransport{alice}, version, &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) { notes <- req.Params },
			})
			tool := toolNames(t, ctx, cs)["Greet someone"]
			params := &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"name": "Ada", "times": 3}}
			params.SetProgressToken("greet-" + version)
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatalf("%s: %v", version, err)
			}
			checkGreetResult(t, version, res, "hello, Ada\nhello, Ada\nhello, Ada\n")
			for i := 1; i <= 3; i++ {
				var n *sdk.ProgressNotificationParams
				select {
				case n = <-notes:
				case <-ctx.Done():
					t.Fatalf("%s: %d of 3 progress notifications arrived", version, i-1)
				}
				if n.ProgressToken != "greet-"+version || n.Progress != float64(i) || n.Total != 3 || n.Message != "greeting" {
					got, _ := json.Marshal(n)
					t.Fatalf("%s: notification %d is %s", version, i, got)
				}
			}

			// On the wire: an event stream, the three before the result.
			call := func(progress string) *http.Response {
				m := meta(version)
				if progress != "" {
					m = strings.TrimSuffix(strings.TrimPrefix(m, `"_meta":{`), "}")
					if m != "" {
						m = "," + m
					}
					m = `"_meta":{"progressToken":` + progress + m + `}`
				}
				if m != "" {
					m = "," + m
				}
				return g.post(t, ctx, alice, version, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"name":"Ada","times":3}`+m+`}}`)
			}
			resp := call(`"wire"`)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("%s: a call with a progress token: %d %s %s, want 200 text/event-stream", version, resp.StatusCode, ct, body)
			}
			msgs := make(chan map[string]any, 16)
			go sseMessages(resp.Body, msgs)
			var order []string
			for m := range msgs {
				switch {
				case m["method"] == "notifications/progress":
					p, _ := m["params"].(map[string]any)
					order = append(order, fmt.Sprintf("progress %v/%v %v", p["progress"], p["total"], p["progressToken"]))
				case m["id"] != nil && m["result"] != nil:
					order = append(order, "result")
				default:
					order = append(order, fmt.Sprint(m))
				}
			}
			resp.Body.Close()
			if want := "[progress 1/3 wire progress 2/3 wire progress 3/3 wire result]"; fmt.Sprint(order) != want {
				t.Errorf("%s: the stream had %v, want %s", version, order, want)
			}
			// Without a token: one JSON document, as before.
			resp = call("")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" || !strings.Contains(string(body), `"outcome":"succeeded"`) {
				t.Errorf("%s: a call without a progress token: %d %s %s", version, resp.StatusCode, ct, body)
			}
		}

		// The TypeScript SDK client (2025-11-25) over HTTP, onprogress.
		node, err := exec.LookPath("node")
		if err != nil || !tsInstalled() {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI must run the TypeScript client over HTTP: node %v, tests/mcp/node_modules installed %v", err, tsInstalled())
			}
			t.Logf("the TypeScript client over HTTP needs node and tests/mcp/node_modules: not run")
			return
		}
		js := exec.CommandContext(ctx, node, filepath.Join("mcp", "http.mjs"), "progress")
		js.Env = append(os.Environ(), "RUKH_HTTP_URL="+g.base+"/mcp", "RUKH_HTTP_TOKEN="+alice)
		var stderr strings.Builder
		js.Stderr = &stderr
		out, err := js.Output()
		var rep struct {
			OK    bool `json:"ok"`
			Notes []struct {
				Progress, Total float64
				Message         string
			} `json:"notes"`
			Text string `json:"text"`
		}
		if err != nil || json.Unmarshal(out, &rep) != nil || !rep.OK {
			t.Fatalf("the TypeScript client's progress over HTTP: %v\n%s\n%s", err, out, stderr.String())
		}
		if got := fmt.Sprint(rep.Notes); got != "[{1 3 greeting} {2 3 greeting} {3 3 greeting}]" || rep.Text != "hello, Ada\nhello, Ada\nhello, Ada\n" {
			t.Errorf("the TypeScript client got the notifications %s and the text %q", got, rep.Text)
		}
	})
}

// listenBody is a 2026-07-28 subscriptions/listen request for tool list
// changes.
func listenBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, id, meta("2026-07-28"))
}

// openListen posts a subscriptions/listen and returns its messages once
// the server acknowledged it (the first message, which it requires).
func (g *greetHTTP) openListen(t *testing.T, ctx context.Context, token string, id int) (<-chan map[string]any, *http.Response) {
	t.Helper()
	resp := g.post(t, ctx, token, "2026-07-28", listenBody(id))
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("subscriptions/listen %d: %d %s %s, want 200 text/event-stream", id, resp.StatusCode, ct, body)
	}
	t.Cleanup(func() { resp.Body.Close() })
	msgs := make(chan map[string]any, 16)
	go sseMessages(resp.Body, msgs)
	select {
	case m := <-msgs:
		if m["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("subscriptions/listen %d: the first message is %v, want the acknowledgement", id, m)
		}
	case <-ctx.Done():
		t.Fatalf("subscriptions/listen %d: no acknowledgement", id)
	}
	return msgs, resp
}

// On 2026-07-28, a subscriptions/listen over HTTP is a stream of its own
// that tells of every change to the caller's tools, in process and
// through rukhd: the go-sdk client's ToolListChangedHandler fires after
// a profile apply and the new names work; a raw stream gets
// notifications/tools/list_changed stamped with its request id. A caller
// holds at most mcphttp.MaxListenCaller streams (the next is refused
// with a JSON-RPC error that says so), and a stream ends when its
// token's exp passes. A 2025-11-25 client is not offered listChanged
// (docs/adr/0014-http-list-changed.md).
func TestHTTPListen(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		g := newGreetHTTP(t, h)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		alice := g.issuer.token(t, "alice", nil)

		legacy := g.connect(t, ctx, bearerTransport{alice}, "2025-11-25", nil)
		if tools := legacy.InitializeResult().Capabilities.Tools; tools == nil || tools.ListChanged {
			t.Errorf("2025-11-25 over HTTP: tools capability %+v, want one without listChanged (no GET stream)", tools)
		}
		// Nor does a 2025-11-25 request get a stream by asking for one.
		resp := g.post(t, ctx, alice, "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "subscriptions/listen is a method of protocol 2026-07-28") {
			t.Errorf("a 2025-11-25 subscriptions/listen: %d %s", resp.StatusCode, body)
		}
		changed := make(chan struct{}, 8)
		listening := &listenSignal{bearerTransport: bearerTransport{alice}, open: make(chan struct{}, 1)}
		cs := g.connect(t, ctx, listening, "2026-07-28", &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		})
		if tools := cs.InitializeResult().Capabilities.Tools; tools == nil || !tools.ListChanged {
			t.Fatalf("2026-07-28 over HTTP: tools capability %+v, want listChanged", tools)
		}
		old := toolNames(t, ctx, cs)["Greet someone"]
		// The raw stream is open (acknowledged) before the change.
		raw, _ := g.openListen(t, ctx, alice, 41)
		// The go-sdk client opens its stream in the background: its
		// headers come with the acknowledgement, which the server sends
		// once the subscription is registered.
		select {
		case <-listening.open:
		case <-ctx.Done():
			t.Fatal("the go-sdk client's subscriptions/listen was never answered")
		}
		g.rename(t, "renamed")
		select {
		case m := <-raw:
			md, _ := m["params"].(map[string]any)
			if m["method"] != "notifications/tools/list_changed" || fmt.Sprint(md["_meta"]) != "map[io.modelcontextprotocol/subscriptionId:41]" {
				t.Errorf("the raw stream got %v, want notifications/tools/list_changed for subscription 41", m)
			}
		case <-ctx.Done():
			t.Fatal("the raw listen stream got no tools/list_changed after the profile apply")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the go-sdk client's listen stream got no tools/list_changed after the profile apply")
		}
		name := toolNames(t, ctx, cs)["Greet someone"]
		if name == old || name == "" {
			t.Fatalf("after the change the client lists %q (it was %q)", name, old)
		}
		if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"name": "Ada"}}); err != nil || res.IsError {
			t.Fatalf("calling the new name %s: %v %+v", name, err, res)
		}

		// A stream ends when its token's exp passes (a timer from exp):
		// not before, and with no help from the client. The exp is 4-5 s
		// ahead (a JWT's exp is whole seconds), so that a loaded machine
		// opens the stream before it.
		exp := time.Now().Add(5 * time.Second).Truncate(time.Second)
		short := g.issuer.token(t, "alice", func(c map[string]any) { c["exp"] = exp.Unix() })
		msgs, _ := g.openListen(t, ctx, short, 60)
	read:
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					break read
				}
				if m["method"] == "read error" {
					t.Errorf("the stream of a token expiring at %s broke: %v", exp, m)
				}
			case <-ctx.Done():
				t.Fatalf("the listen stream of a token that expired at %s did not end", exp)
			}
		}
		if now := time.Now(); now.Before(exp) {
			t.Errorf("the listen stream of a token expiring at %s ended at %s, before it expired", exp, now)
		}

		// The per-caller bound: the go-sdk client's stream and the raw
		// one are two (the expired one's slot is free again); open up to
		// the bound, then one more is refused.
		for i := 2; i < mcphttp.MaxListenCaller; i++ {
			g.openListen(t, ctx, alice, 50+i)
		}
		resp = g.post(t, ctx, alice, "2026-07-28", listenBody(99))
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `"id":99`) ||
			!strings.Contains(string(body), fmt.Sprintf("this caller has %d subscriptions/listen streams open already", mcphttp.MaxListenCaller)) {
			t.Errorf("listen %d of one caller: %d %s, want 429 and the JSON-RPC error naming the bound", mcphttp.MaxListenCaller+1, resp.StatusCode, body)
		}
		// The streams hold no request slot: calls still work.
		if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"name": "Ada"}}); err != nil || res.IsError {
			t.Fatalf("a call while alice's streams are open: %v %+v", err, res)
		}
	})
}

// listenSignal is a bearerTransport that tells when the response to a
// subscriptions/listen has begun (status 200 and its headers).
type listenSignal struct {
	bearerTransport
	open chan struct{}
}

func (l *listenSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.bearerTransport.RoundTrip(r)
	if err == nil && r.Header.Get("Mcp-Method") == "subscriptions/listen" && resp.StatusCode == 200 {
		select {
		case l.open <- struct{}{}:
		default:
		}
	}
	return resp, err
}
