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
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("examples/greet needs python3 (%v): .ci/run installs it", err)
		}
		t.Skipf("examples/greet needs python3: %v", err)
	}
	rel, err := filepath.Abs(filepath.Join("..", "examples", "greet"))
	if err != nil {
		t.Fatal(err)
	}
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

// connect is the go-sdk client over Streamable HTTP with token.
func (g *greetHTTP) connect(t *testing.T, ctx context.Context, token, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: g.base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}
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
			cs := g.connect(t, ctx, alice, version, &sdk.ClientOptions{
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
