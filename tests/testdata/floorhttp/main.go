// Command floorhttp is the least any MCP host over HTTP of a recorded
// call must do, for BenchmarkHTTP's floor rows: a go-sdk stateless
// Streamable HTTP server (JSON responses) behind the go-sdk's bearer
// middleware, which verifies each request's JWT (RS256, against the key
// set in a file: the signature, iss, aud, exp and the scope), with one
// tool that commits a begin record durably in a bbolt file it holds
// open, fork/execs PROG with a prepared channel (channelexec), and
// commits the end record; with -helper PATH it starts PROG through the
// supervising helper (`PATH host -- PROG PROG`), as rukh does once
// rukh-sandbox is installed. It writes "serving URL" to stderr once it
// listens on 127.0.0.1.
//
//	floorhttp -store FILE -jwks FILE -issuer ISS -audience AUD -scope S [-helper PATH] PROG
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/channelexec"
	"github.com/rukh-cli/rukh/internal/release/extproto"
)

func main() {
	store := flag.String("store", "", "the bbolt file of the records")
	jwks := flag.String("jwks", "", "the issuer's key set (JSON)")
	issuer := flag.String("issuer", "", "the tokens' iss")
	audience := flag.String("audience", "", "the tokens' aud")
	scope := flag.String("scope", "", "the scope every token must hold")
	helper := flag.String("helper", "", "start the command through this rukh-sandbox")
	flag.Parse()
	argv := []string{flag.Arg(0)}
	if *helper != "" {
		argv = []string{*helper, "host", "--", flag.Arg(0), flag.Arg(0)}
	}
	if err := run(*store, *jwks, *issuer, *audience, *scope, argv); err != nil {
		fmt.Fprintln(os.Stderr, "floorhttp:", err)
		os.Exit(1)
	}
}

func run(store, jwksPath, issuer, audience, scope string, argv []string) error {
	data, err := os.ReadFile(jwksPath)
	if err != nil {
		return err
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(data, &keys); err != nil {
		return err
	}
	db, err := bolt.Open(store, 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	record := func(state string) error {
		return db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("invocations"))
			if err != nil {
				return err
			}
			return b.Put([]byte("0123456789abcdef0123456789abcdef"), []byte(state))
		})
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "floor", Version: "1"}, nil)
	env := []string{extproto.EnvFD + "=3", extproto.EnvToken + "=" + strings.Repeat("0", 64)}
	srv.AddTool(&sdk.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if err := record("running"); err != nil {
				return nil, err
			}
			line, err := channelexec.Run(argv, env, nil)
			if err != nil {
				return nil, err
			}
			if err := record("succeeded"); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: line}}}, nil
		})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		var c jwt.Claims
		var extra struct {
			Scope string `json:"scope"`
		}
		if err := tok.Claims(keys, &c, &extra); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if err := c.ValidateWithLeeway(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{audience}, Time: time.Now()}, time.Minute); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if c.Expiry == nil || c.Subject == "" {
			return nil, fmt.Errorf("%w: no exp or sub", auth.ErrInvalidToken)
		}
		if !slices.Contains(strings.Fields(extra.Scope), scope) {
			return nil, errors.New("insufficient scope")
		}
		return &auth.TokenInfo{Scopes: strings.Fields(extra.Scope), Expiration: c.Expiry.Time(), UserID: c.Subject}, nil
	}
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{Scopes: []string{scope}})(mcpHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "serving http://%s/mcp\n", ln.Addr())
	return (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}
