// Command httpdemo shows `rukh mcp --http` for `make demo`: it plays a
// local authorization server (a key pair and its key set in a file),
// adds an mcp.http section that trusts it to the owner's profile and
// applies it, starts `rukh mcp --http 127.0.0.1:0`, mints a token for
// the subject "demo", and has the official go-sdk client list and call a
// tool over HTTP with it; then it shows a token for another audience
// refused, and stops the server.
//
//	go run ./tests/httpdemo RUKH_BINARY PROFILE_JSON TOOL_IDENTITY ARGUMENTS_JSON
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/testjwt"
)

const (
	resource = "https://tools.demo/mcp"
	issuer   = "https://idp.demo"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: httpdemo RUKH_BINARY PROFILE_JSON TOOL_IDENTITY ARGUMENTS_JSON")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4]); err != nil {
		fmt.Fprintln(os.Stderr, "httpdemo:", err)
		os.Exit(1)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func run(rukh, profilePath, identity, args string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "httpdemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The authorization server: a key pair; its key set in a file.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "demo-1", Algorithm: "RS256", Use: "sig"}}})
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, set, 0o600); err != nil {
		return err
	}

	// The owner's profile, with mcp.http trusting it.
	var prof map[string]any
	data, err := os.ReadFile(profilePath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &prof); err != nil {
		return err
	}
	mcpSection := prof["mcp"].(map[string]any)
	mcpSection["http"] = map[string]any{
		"resource":             resource,
		"authorizationServers": []any{map[string]any{"issuer": issuer, "jwksUri": "file://" + jwks}},
		"requiredScopes":       []any{"rukh:call"},
		"bindings":             []any{map[string]any{"issuer": issuer, "subject": "demo", "task": mcpSection["task"]}},
	}
	withHTTP := filepath.Join(dir, "profile.json")
	out, _ := json.MarshalIndent(prof, "", "  ")
	os.WriteFile(withHTTP, out, 0o600)
	fmt.Printf("mcp.http: %s\n", mustJSON(mcpSection["http"]))
	apply := exec.Command(rukh, "profile", "apply", "-f", withHTTP)
	apply.Stdout, apply.Stderr = os.Stdout, os.Stderr
	if err := apply.Run(); err != nil {
		return err
	}

	// The server, and where it listens.
	srv := exec.Command(rukh, "mcp", "--http", "127.0.0.1:0")
	stderr, err := srv.StderrPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	lines := bufio.NewScanner(stderr)
	var base string
	for base == "" && lines.Scan() {
		fmt.Fprintln(os.Stderr, lines.Text())
		if m := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		return fmt.Errorf("rukh mcp --http did not say where it listens")
	}
	go func() {
		for lines.Scan() {
			fmt.Fprintln(os.Stderr, lines.Text())
		}
	}()

	mint := func(aud string) string {
		now := time.Now()
		return testjwt.Mint(jose.SigningKey{Algorithm: jose.RS256, Key: key}, "demo-1", map[string]any{"iss": issuer, "sub": "demo", "aud": aud,
			"scope": "rukh:call", "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()})
	}
	token := mint(resource)
	fmt.Printf("\na token for sub \"demo\", aud %s: %s…\n", resource, token[:32])
	tr := &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "httpdemo", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	name := ""
	slug := strings.NewReplacer(".", "_", "/", "_").Replace(identity)
	for _, t := range res.Tools {
		fmt.Printf("tool %s (%s)\n", t.Name, t.Title)
		if strings.HasPrefix(t.Name, slug) {
			name = t.Name
		}
	}
	if name == "" {
		return fmt.Errorf("no tool for %s over HTTP", identity)
	}
	var arguments map[string]any
	json.Unmarshal([]byte(args), &arguments)
	call, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		return err
	}
	fmt.Printf("\ntools/call %s over HTTP:\n%s\n", name, mustJSON(call.StructuredContent))

	// A token for another server is refused, and says where to look.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+mint("https://elsewhere.demo/mcp"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Printf("\na token for https://elsewhere.demo/mcp: HTTP %d\nWWW-Authenticate: %s\n", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	return nil
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
