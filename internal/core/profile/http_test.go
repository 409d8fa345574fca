package profile_test

import (
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/profile"
)

// httpExample is designExample with the HTTP adapter's section.
var httpExample = strings.Replace(designExample, `"task": "agent"},`, `"task": "agent",
  "http": {"resource": "https://tools.example.com/mcp",
           "authorizationServers": [{"issuer": "https://idp.example.com", "jwksUri": "https://idp.example.com/jwks.json"},
                                    {"issuer": "https://sso.example.org/realms/team", "jwksUri": "file:///etc/rukh/sso-jwks.json"}],
           "requiredScopes": ["rukh:call"],
           "bindings": [{"issuer": "https://idp.example.com", "subject": "alice", "task": "agent"},
                        {"issuer": "https://sso.example.org/realms/team", "claim": "groups", "value": "ops", "task": "owner"}],
           "allowedOrigins": ["https://app.example.com"]}},`, 1)

func TestParseHTTP(t *testing.T) {
	p, err := profile.Parse([]byte(httpExample))
	if err != nil {
		t.Fatal(err)
	}
	h := p.MCP.HTTP
	if h == nil || h.Resource != "https://tools.example.com/mcp" || len(h.AuthorizationServers) != 2 || h.Bindings[1].Claim != "groups" || h.Bindings[1].Task != "owner" {
		t.Errorf("parsed %+v", h)
	}
	// Without the section, nothing of it appears in the canonical form:
	// profiles written before it keep their hashes.
	plain, _ := profile.Parse([]byte(designExample))
	if strings.Contains(string(plain.Canonical()), "http") {
		t.Errorf("canonical form of a profile without http: %s", plain.Canonical())
	}
}

// Every mistake in mcp.http is refused at its pointer, in the same
// validation as the rest of the profile.
func TestParseHTTPInvalid(t *testing.T) {
	for _, tt := range []struct{ name, from, to, want string }{
		{"resource not https", `"https://tools.example.com/mcp"`, `"http://tools.example.com/mcp"`, `/mcp/http/resource: "http://tools.example.com/mcp" is not this server's URL`},
		{"resource with fragment", `"https://tools.example.com/mcp"`, `"https://tools.example.com/mcp#x"`, `/mcp/http/resource: `},
		{"resource relative", `"https://tools.example.com/mcp"`, `"/mcp"`, `/mcp/http/resource: `},
		{"no servers", `"authorizationServers": [{"issuer": "https://idp.example.com", "jwksUri": "https://idp.example.com/jwks.json"},
                                    {"issuer": "https://sso.example.org/realms/team", "jwksUri": "file:///etc/rukh/sso-jwks.json"}]`, `"authorizationServers": []`, `/mcp/http/authorizationServers: missing`},
		{"issuer not https", `{"issuer": "https://idp.example.com", "jwksUri"`, `{"issuer": "idp.example.com", "jwksUri"`, `/mcp/http/authorizationServers/0/issuer: "idp.example.com" is not an issuer`},
		{"issuer twice", `"https://sso.example.org/realms/team", "jwksUri"`, `"https://idp.example.com", "jwksUri"`, `/mcp/http/authorizationServers/1/issuer: "https://idp.example.com" is listed twice`},
		{"jwks over http", `"https://idp.example.com/jwks.json"`, `"http://idp.example.com/jwks.json"`, `/mcp/http/authorizationServers/0/jwksUri: "http://idp.example.com/jwks.json" is not a key set's location`},
		{"jwks relative file", `"file:///etc/rukh/sso-jwks.json"`, `"file:sso-jwks.json"`, `/mcp/http/authorizationServers/1/jwksUri: `},
		{"scope with space", `["rukh:call"]`, `["rukh call"]`, `/mcp/http/requiredScopes/0: "rukh call" is not a scope`},
		{"no bindings", `"bindings": [{"issuer": "https://idp.example.com", "subject": "alice", "task": "agent"},
                        {"issuer": "https://sso.example.org/realms/team", "claim": "groups", "value": "ops", "task": "owner"}]`, `"bindings": []`, `/mcp/http/bindings: missing`},
		{"binding of another issuer", `{"issuer": "https://idp.example.com", "subject": "alice"`, `{"issuer": "https://evil.example.com", "subject": "alice"`, `/mcp/http/bindings/0/issuer: issuer "https://evil.example.com" is not among authorizationServers`},
		{"binding to no task", `"subject": "alice", "task": "agent"`, `"subject": "alice", "task": "root"`, `/mcp/http/bindings/0/task: task "root" is not defined in tasks`},
		{"binding both ways", `"subject": "alice", "task"`, `"subject": "alice", "claim": "groups", "value": "ops", "task"`, `/mcp/http/bindings/0: give a subject, or a claim and a value, not both`},
		{"binding no way", `"subject": "alice", "task"`, `"task"`, `/mcp/http/bindings/0: missing: a subject, or a claim and a value`},
		{"binding claim without value", `"claim": "groups", "value": "ops", "task"`, `"claim": "groups", "task"`, `/mcp/http/bindings/1: missing`},
		{"binding on aud", `"claim": "groups"`, `"claim": "aud"`, `/mcp/http/bindings/1/claim: "aud" is checked by the token's verification`},
		{"origin with path", `"https://app.example.com"]`, `"https://app.example.com/app"]`, `/mcp/http/allowedOrigins/0: "https://app.example.com/app" is not an origin`},
		{"unknown member", `"requiredScopes"`, `"scopes": [], "requiredScopes"`, `/mcp/http/scopes: unknown member "scopes"`},
		{"unknown binding member", `"subject": "alice",`, `"subject": "alice", "group": "x",`, `/mcp/http/bindings/0/group: unknown member "group"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(httpExample, tt.from, tt.to, 1)
			if doc == httpExample {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := profile.Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
