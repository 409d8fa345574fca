package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/internal/testjwt"
)

const (
	httpResource = "https://tools.test/mcp"
	httpIssuer   = "https://idp.test"
)

// localIssuer is the tests' authorization server: a key pair, and its
// public key set in a file (file:// jwksUri, as an air-gapped owner has).
type localIssuer struct {
	key  *rsa.PrivateKey
	jwks string
}

func newLocalIssuer(t testing.TB, dir string) *localIssuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, set, 0o600); err != nil {
		t.Fatal(err)
	}
	return &localIssuer{key: key, jwks: path}
}

// token mints a token for sub; edit changes its claims first.
func (is *localIssuer) token(t testing.TB, sub string, edit func(map[string]any)) string {
	now := time.Now()
	c := map[string]any{"iss": httpIssuer, "sub": sub, "aud": httpResource, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "scope": "rukh:call"}
	if edit != nil {
		edit(c)
	}
	return testjwt.Mint(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, "k1", c)
}

// bearerTransport adds Authorization: Bearer to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// `rukh mcp --http` is an OAuth 2.1 resource server: every refusal of
// the issue has its status and challenge; callers bound to different
// tasks see different tools through one listener, on both protocol
// versions, in process and through rukhd; the token reaches no command
// and no record; and the listener refuses to start without mcp.http or
// off loopback without TLS.
func TestMCPOverHTTP(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		f := newHTTPFixture(t)
		is, seen, env := f.issuer, f.seen, f.env
		// Without mcp.http, --http refuses to start.
		noHTTP := exec.Command(h.Rukh, "mcp", "--http", "127.0.0.1:0")
		noHTTP.Env = env
		if out, err := noHTTP.CombinedOutput(); exitCode(err) == 0 || !strings.Contains(string(out), "the active profile has no mcp.http section") {
			t.Fatalf("--http without mcp.http: exit %d\n%s", exitCode(err), out)
		}
		f.apply(t)
		h.serve(t, f.home)
		offLoopback := exec.Command(h.Rukh, "mcp", "--http", "0.0.0.0:0")
		offLoopback.Env = env
		if out, err := offLoopback.CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "is not a loopback address: serving tokens there needs TLS") {
			t.Errorf("--http 0.0.0.0:0 without TLS: exit %d\n%s", exitCode(err), out)
		}

		var serverLog testhome.Buffer
		base := startHTTP(t, h.Rukh, env, &serverLog)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()

		// The protected resource metadata, at both well-known paths.
		for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			var md map[string]any
			json.NewDecoder(resp.Body).Decode(&md)
			resp.Body.Close()
			if resp.StatusCode != 200 || md["resource"] != httpResource || fmt.Sprint(md["authorization_servers"]) != "["+httpIssuer+"]" ||
				fmt.Sprint(md["scopes_supported"]) != "[rukh:call]" || fmt.Sprint(md["bearer_methods_supported"]) != "[header]" {
				t.Errorf("GET %s: %d %v", p, resp.StatusCode, md)
			}
		}

		// Refusals, each with its status and challenge.
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+httpIssuer+`","sub":"alice","aud":"`+httpResource+`","exp":9999999999,"scope":"rukh:call"}`)) + "."
		meta := `resource_metadata="https://tools.test/.well-known/oauth-protected-resource/mcp"`
		for _, tc := range []struct {
			name, auth, origin, host string
			status                   int
			challenge                string // a regexp of the WWW-Authenticate header
		}{
			{"no token", "", "", "", 401, `^Bearer ` + regexp.QuoteMeta(meta) + `, error="invalid_token", error_description="no bearer token`},
			{"not bearer", "Basic YWxpY2U6eA==", "", "", 401, `error="invalid_token"`},
			{"alg none", "Bearer " + none, "", "", 401, `error="invalid_token", error_description="not a JWT signed with an asymmetric algorithm`},
			{"expired", "Bearer " + is.token(t, "alice", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), "", "", 401, `error_description="the token expired at `},
			{"wrong audience", "Bearer " + is.token(t, "alice", func(c map[string]any) { c["aud"] = "https://other.test/mcp" }), "", "", 401, `error_description="the token's audience`},
			{"unknown issuer", "Bearer " + is.token(t, "alice", func(c map[string]any) { c["iss"] = "https://evil.test" }), "", "", 401, `error_description="issuer 'https://evil.test' is not one this server accepts"`},
			{"insufficient scope", "Bearer " + is.token(t, "alice", func(c map[string]any) { c["scope"] = "openid" }), "", "", 403, `error="insufficient_scope", error_description="the token lacks scope 'rukh:call'; this server requires rukh:call", scope="rukh:call"`},
			{"bound to no task", "Bearer " + is.token(t, "mallory", nil), "", "", 403, `^` + regexp.QuoteMeta(`Bearer `+meta) + `$`},
			{"origin not allowed", "Bearer " + is.token(t, "alice", nil), "https://evil.test", "", 403, `^$`},
			// DNS rebinding: a page of evil.test that resolved it to 127.0.0.1.
			{"host not loopback", "Bearer " + is.token(t, "alice", nil), "", "evil.test", 403, `^$`},
		} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !regexp.MustCompile(tc.challenge).MatchString(resp.Header.Get("WWW-Authenticate")) {
				t.Errorf("%s: %d %q %s; want %d and a challenge matching %s", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, tc.status, tc.challenge)
			}
		}

		// Two callers, two tasks, one listener; both protocol versions.
		alice, bob := is.token(t, "alice", nil), is.token(t, "bob", func(c map[string]any) { c["groups"] = []string{"dev", "ops"} })
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			for _, who := range []struct{ token, sees, call string }{{alice, "Probe", "Probe"}, {bob, "Other", "Other"}} {
				tr := &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{who.token}}, MaxRetries: -1}
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "web", Version: "1"}, nil).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatalf("%s, %s: %v", version, who.sees, err)
				}
				names := toolNames(t, ctx, cs)
				if len(names) != 1 || names[who.sees] == "" {
					t.Errorf("%s: the caller bound to see %s lists %v", version, who.sees, names)
				}
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names[who.call]})
				if err != nil || res.IsError {
					t.Errorf("%s: calling %s: %v %+v", version, who.call, err, res)
				}
				cs.Close()
			}
		}

		// The TypeScript SDK's Streamable HTTP transport, with the token
		// in its requests' headers (where node and the SDK are installed).
		if node, err := exec.LookPath("node"); err == nil && tsInstalled() {
			js := exec.CommandContext(ctx, node, filepath.Join("mcp", "http.mjs"))
			js.Env = append(os.Environ(), "RUKH_HTTP_URL="+base+"/mcp", "RUKH_HTTP_TOKEN="+alice,
				"RUKH_HTTP_BAD_TOKEN="+is.token(t, "alice", func(c map[string]any) { c["aud"] = "https://other.test/mcp" }))
			out, err := js.Output()
			var rep struct {
				OK      bool     `json:"ok"`
				Tools   []string `json:"tools"`
				Called  []struct{ Title, Outcome string }
				Refused struct {
					Status    int    `json:"status"`
					Challenge string `json:"challenge"`
				} `json:"refused"`
			}
			if err != nil || json.Unmarshal(out, &rep) != nil || !rep.OK || fmt.Sprint(rep.Tools) != "[Probe]" || len(rep.Called) != 1 || rep.Called[0].Outcome != "succeeded" ||
				rep.Refused.Status != 401 || !strings.Contains(rep.Refused.Challenge, `error="invalid_token"`) {
				t.Errorf("the TypeScript client over HTTP: %v\n%s %+v", err, out, rep)
			}
		} else if os.Getenv("CI") != "" {
			t.Errorf("CI must run the TypeScript client over HTTP: node %v, tests/mcp/node_modules installed %v", err, tsInstalled())
		}

		// The token went nowhere: not to the command (its environment,
		// argv, frame), not to the records.
		got, err := os.ReadFile(seen)
		if err != nil {
			t.Fatal(err)
		}
		list := exec.Command(h.Rukh, "invocations", "list", "--json", "-n", "20")
		list.Env = env
		records, _ := list.Output()
		for _, tok := range []string{alice, bob} {
			sig := tok[strings.LastIndexByte(tok, '.')+1:]
			for what, b := range map[string][]byte{"the command's environment, argv and frame": got, "the invocation records": records, "the server's log": []byte(serverLog.String())} {
				if strings.Contains(string(b), sig) || strings.Contains(string(b), tok[:40]) {
					t.Errorf("a token reached %s", what)
				}
			}
		}
		// The diagnostics log has the calls (their start and end), as on
		// stdio.
		if l := serverLog.String(); !strings.Contains(l, "start") || !strings.Contains(l, "end") {
			t.Errorf("the server's diagnostics log:\n%s", l)
		}
		// Each call is recorded with the caller it was verified as.
		var recs []struct {
			Command, Transport, Task, Subject, Issuer string
		}
		if err := json.Unmarshal(records, &recs); err != nil {
			t.Fatal(err)
		}
		callers := map[string]int{}
		for _, r := range recs {
			callers[r.Command+" "+r.Task+" "+r.Subject+" "+r.Issuer+" "+r.Transport]++
		}
		want := map[string]int{"test.web/probe agent alice https://idp.test mcp": 2, "test.web/other ops bob https://idp.test mcp": 2}
		if tsInstalled() {
			want["test.web/probe agent alice https://idp.test mcp"]++ // the TypeScript client's call
		}
		if fmt.Sprint(callers) != fmt.Sprint(want) {
			t.Errorf("recorded callers %v, want %v", callers, want)
		}
		plain := exec.Command(h.Rukh, "invocations", "list")
		plain.Env = env
		if out, _ := plain.Output(); !regexp.MustCompile(`test\.web/other +mcp +succeeded +bob \(https://idp\.test\)`).Match(out) {
			t.Errorf("invocations list:\n%s", out)
		}
	})
}

// httpFixture is a home for the HTTP adapter: the release (probe, which
// writes what it got to seen, and other), the tests' issuer, and its
// profile (apply) binding alice to task agent (probe) and members of
// group ops to task ops (other).
type httpFixture struct {
	dir, home, seen string
	issuer          *localIssuer
	admin           *admin.Admin
	env             []string
}

func newHTTPFixture(t testing.TB) *httpFixture {
	dir := testhome.TempDir(t)
	is := newLocalIssuer(t, dir)
	seen := filepath.Join(dir, "seen")
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok"}}\n' "$RUKH_IPC_TOKEN" >&3`
	rel := filepath.Join(dir, "src")
	testhome.WriteFiles(t, rel, map[string]string{
		// probe writes what it got: its environment, argv and first frame.
		"bin/probe": "#!/bin/sh\n{ env; echo \"argv: $*\"; IFS= read -r frame <&3; echo \"frame: $frame\"; } > " + seen + "\n" + report + "\n",
		"bin/other": "#!/bin/sh\n" + report + "\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.web","version":"1.0.0","publisher":"test","commands":[
		{"id":"probe","path":["probe"],"summary":"Probe","execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
		{"id":"other","path":["other"],"summary":"Other","execute":{"mapping":"managed","program":"bin/other","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
	})
	home := filepath.Join(dir, "home")
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	env := append(os.Environ(), "RUKH_HOME="+home)

	return &httpFixture{dir: dir, home: home, seen: seen, issuer: is, admin: a, env: env}
}

// apply applies the fixture's profile with its mcp.http section.
func (f *httpFixture) apply(t testing.TB) {
	f.applyWith(t, `,"http":{"resource":"`+httpResource+`","authorizationServers":[{"issuer":"`+httpIssuer+`","jwksUri":"file://`+f.issuer.jwks+`"}],
		        "requiredScopes":["rukh:call"],
		        "bindings":[{"issuer":"`+httpIssuer+`","subject":"alice","task":"agent"},{"issuer":"`+httpIssuer+`","claim":"groups","value":"ops","task":"ops"}],
		        "allowedOrigins":["https://app.test"]}`)
}

// applyWith applies the fixture's profile with http, the mcp.http member
// as JSON text (",\"http\":{…}", or "" for none).
func (f *httpFixture) applyWith(t testing.TB, http string) {
	if _, _, err := f.admin.ApplyProfile([]byte(`{"endpointNamespace":"web","cli":{"task":"owner"},"mcp":{"expose":["test.web/*"],"task":"agent"` + http + `},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["test.web/probe"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"host"},
		         "ops":{"commands":["test.web/other"],"deadlineMs":60000,"maxConcurrent":64,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
}

// startHTTP starts `rukh mcp --http 127.0.0.1:0` and returns its base URL,
// read from the line it writes when it listens; the rest of its stderr
// (its log and the diagnostics log) goes to log[0], when given and not
// nil, and what it wrote before that line to log[1].
func startHTTP(t testing.TB, rukh string, env []string, log ...io.Writer) string {
	t.Helper()
	base, _ := startHTTPProc(t, rukh, env, log...)
	return base
}

// startHTTPProc is startHTTP that also returns the process.
func startHTTPProc(t testing.TB, rukh string, env []string, log ...io.Writer) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(rukh, "mcp", "--http", "127.0.0.1:0")
	cmd.Env = env
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); stderr.Close() })
	stderr.SetReadDeadline(time.Now().Add(dtHangGuard))
	r := bufio.NewReader(stderr)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("rukh mcp --http never said where it listens: %v (%q)", err, line)
		}
		if m := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(line); m != nil {
			w := io.Discard
			if len(log) > 0 && log[0] != nil {
				w = log[0]
			}
			go io.Copy(w, r)
			return m[1], cmd
		}
		if len(log) > 1 {
			io.WriteString(log[1], line)
		}
	}
}

// tsInstalled reports whether tests/mcp has the TypeScript SDK installed.
func tsInstalled() bool {
	_, err := os.Stat(filepath.Join("mcp", "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	return err == nil
}

// A task the mcp.http section binds callers to, whose exposed tool asks
// for access no allow rule of the task grants, denies every call: the
// server says so before the line that says where it listens, as `rukh
// mcp` does on stdio, naming the task, the command and the rule to add.
func TestMCPOverHTTPWarnsOfDeniedTools(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		f := newHTTPFixture(t)
		deploy, err := filepath.Abs(filepath.Join("..", "examples", "deploy"))
		if err != nil {
			t.Fatal(err)
		}
		testhome.InstallPinned(t, filepath.Join(f.home, "data"), deploy)
		if _, _, err := f.admin.ApplyProfile([]byte(`{"endpointNamespace":"web","cli":{"task":"owner"},
			"mcp":{"expose":["test.web/*","acme.deploy/status"],"task":"agent",
			       "http":{"resource":"` + httpResource + `","authorizationServers":[{"issuer":"` + httpIssuer + `","jwksUri":"file://` + f.issuer.jwks + `"}],
			               "bindings":[{"issuer":"` + httpIssuer + `","subject":"alice","task":"agent"},{"issuer":"` + httpIssuer + `","subject":"bob","task":"ops"}]}},
			"tasks":{"owner":{"commands":["*/*"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"host"},
			         "agent":{"commands":["test.web/probe","acme.deploy/status"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"host"},
			         "ops":{"commands":["acme.deploy/status"],"deadlineMs":60000,"maxConcurrent":8,"enforcement":"host",
			                "allow":[{"action":"deploy.read","resource":"env:*"}]}}}`)); err != nil {
			t.Fatal(err)
		}
		h.serve(t, f.home)
		var before strings.Builder
		startHTTP(t, h.Rukh, f.env, nil, &before)
		want := `rukh mcp: warning: task "agent" denies every call of acme.deploy/status: it needs deploy.read on "env:{env}", which no rule of tasks.agent.allow grants; add one to the profile, e.g. {"action":"deploy.read","resource":"env:*"}, as narrow as you mean it` + "\n"
		if before.String() != want {
			t.Errorf("before the serving line:\n%s\nwant only:\n%s", before.String(), want)
		}
	})
}

// Under load: 50 callers with valid tokens (each its own subject, bound
// by group) and 50 with invalid ones at once, while a slow client holds
// a connection open sending its headers a byte at a time. Every valid
// call is answered and recorded once; every invalid one is refused 401
// and recorded nowhere.
func TestMCPOverHTTPLoad(t *testing.T) {
	rukh, _ := hostBinaries(t)
	f := newHTTPFixture(t)
	f.apply(t)
	base := startHTTP(t, rukh, f.env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()

	// The slow client: half a request line, then nothing.
	slow, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.Write([]byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthor"))

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		// Minted here: token fails the test with t.Fatal, which only the
		// test's goroutine may call.
		valid := f.issuer.token(t, fmt.Sprintf("user-%02d", i), func(c map[string]any) { c["groups"] = []string{"ops"} })
		expired := f.issuer.token(t, fmt.Sprintf("user-%02d", i), func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })
		wg.Add(2)
		go func() {
			defer wg.Done()
			tok := valid
			tr := &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "load", Version: "1"}, nil).Connect(ctx, tr, nil)
			if err != nil {
				errs <- fmt.Errorf("valid %d: connect: %v", i, err)
				return
			}
			defer cs.Close()
			res, err := cs.ListTools(ctx, nil)
			if err != nil || len(res.Tools) != 1 {
				errs <- fmt.Errorf("valid %d: list: %v", i, err)
				return
			}
			if r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: res.Tools[0].Name}); err != nil || r.IsError {
				errs <- fmt.Errorf("valid %d: call: %v %+v", i, err, r)
			}
		}()
		go func() {
			defer wg.Done()
			tok := expired
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- fmt.Errorf("invalid %d: %v", i, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				errs <- fmt.Errorf("invalid %d: status %d", i, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list := exec.Command(rukh, "invocations", "list", "--json", "-n", "0")
	list.Env = f.env
	out, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct{ Command, Subject, Outcome string }
	json.Unmarshal(out, &recs)
	seen := map[string]int{}
	for _, r := range recs {
		if r.Command != "test.web/other" || r.Outcome != "succeeded" {
			t.Errorf("record %+v: only the valid calls are recorded, each succeeded", r)
		}
		seen[r.Subject]++
	}
	if len(recs) != n || len(seen) != n {
		t.Errorf("%d records of %d subjects, want %d of %d", len(recs), len(seen), n, n)
	}
}

// The MCP Inspector CLI (2.12) over HTTP with a bearer header lists and
// calls the tools of the token's binding, on both protocol eras; without
// the header it is refused (401) and asks for OAuth (auth_required).
func TestInspectorOverHTTP(t *testing.T) {
	in := inspectorInstall(t)
	rukh, _ := hostBinaries(t)
	f := newHTTPFixture(t)
	f.apply(t)
	base := startHTTP(t, rukh, f.env)
	alice := f.issuer.token(t, "alice", nil)
	for _, era := range []string{"modern", "legacy"} {
		args := []string{"--cli", "--transport", "http", "--server-url", base + "/mcp", "--protocol-era", era}
		r := in.run(t, nil, append(args, "--header", "Authorization: Bearer "+alice, "--method", "tools/list")...)
		r.status0(t)
		var list struct {
			Tools []struct{ Name, Title string } `json:"tools"`
		}
		r.decode(t, &list)
		if len(list.Tools) != 1 || list.Tools[0].Title != "Probe" {
			t.Fatalf("%s: tools %+v, want alice's task's one, Probe", era, list.Tools)
		}
		r = in.run(t, nil, append(args, "--header", "Authorization: Bearer "+alice, "--method", "tools/call", "--tool-name", list.Tools[0].Name)...)
		r.status0(t)
		if !strings.Contains(string(r.stdout), `"outcome": "succeeded"`) && !strings.Contains(string(r.stdout), `"outcome":"succeeded"`) {
			t.Errorf("%s: tools/call printed %s", era, r.stdout)
		}
		// Without one, the 401 sends it to the OAuth flow the metadata
		// names, which it will not start without a terminal.
		r = in.run(t, nil, append(args, "--method", "tools/list")...)
		if r.status == 0 || !strings.Contains(string(r.stdout)+string(r.stderr), `"code":"auth_required"`) {
			t.Errorf("%s: without a token: exit %d\n%s\n%s", era, r.status, r.stdout, r.stderr)
		}
	}
}

// The server follows the owner's profile without a restart: from the
// request after a binding is removed, its caller is refused (403), and
// from the one after mcp.http is removed, every request (503); the other
// binding keeps working in between.
func TestMCPOverHTTPFollowsTheProfile(t *testing.T) {
	rukh, _ := hostBinaries(t)
	f := newHTTPFixture(t)
	f.apply(t)
	base := startHTTP(t, rukh, f.env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	alice, bob := f.issuer.token(t, "alice", nil), f.issuer.token(t, "bob", func(c map[string]any) { c["groups"] = []string{"ops"} })
	status := func(tok string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := status(alice), status(bob); a != 200 || b != 200 {
		t.Fatalf("before: alice %d, bob %d", a, b)
	}
	f.applyWith(t, `,"http":{"resource":"`+httpResource+`","authorizationServers":[{"issuer":"`+httpIssuer+`","jwksUri":"file://`+f.issuer.jwks+`"}],
		"bindings":[{"issuer":"`+httpIssuer+`","subject":"alice","task":"agent"}]}`)
	if s := status(bob); s != 403 {
		t.Errorf("bob after his binding was removed: %d, want 403", s)
	}
	if s := status(alice); s != 200 {
		t.Errorf("alice after bob's binding was removed: %d", s)
	}
	f.applyWith(t, "")
	if s := status(alice); s != 503 {
		t.Errorf("alice after mcp.http was removed: %d, want 503", s)
	}
}
