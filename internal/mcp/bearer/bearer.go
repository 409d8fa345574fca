// Package bearer verifies the bearer tokens of the HTTP MCP adapter and
// binds each verified caller to a task: Rukh is an OAuth 2.1 resource
// server (RFC 9728, RFC 8707, RFC 6750). A token is a JWT signed by one
// of the profile's authorization servers (go-jose does the cryptography,
// with asymmetric algorithms only: never "none", never an HMAC whose
// secret could be the public key); its iss must be one of them exactly,
// its aud must hold the resource, exp is required, nbf and iat are
// checked with a small skew, and every required scope must be granted.
// The token itself never leaves this package: a Caller carries who the
// caller is, not what proved it.
package bearer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/rukh-cli/rukh/internal/core/profile"
)

// Algorithms are the signature algorithms a token may use.
var Algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Skew is how far nbf, iat and exp may be off this machine's clock.
const Skew = time.Minute

// MaxTokenBytes bounds a token before anything parses it.
const MaxTokenBytes = 16 << 10

// Caller is a verified caller: who, as its issuer says, and the task its
// binding gives it.
type Caller struct {
	Issuer  string
	Subject string
	Scopes  []string
	Task    string
	// Expiry is the token's exp: a stream served to the caller (an HTTP
	// subscriptions/listen) ends then.
	Expiry time.Time
}

// Error is a refused token, with the HTTP status and the RFC 6750 error
// code the response carries.
type Error struct {
	Status      int    // 401 or 403
	Code        string // "invalid_token" or "insufficient_scope" ("" with 403 for a caller bound to no task)
	Description string
}

func (e *Error) Error() string { return e.Description }

func invalid(format string, args ...any) *Error {
	return &Error{Status: 401, Code: "invalid_token", Description: fmt.Sprintf(format, args...)}
}

// Verifier verifies tokens for one profile's mcp.http section.
type Verifier struct {
	resource string
	scopes   []string
	bindings []profile.Binding
	keys     map[string]*KeySet // by issuer
	now      func() time.Time
}

// NewVerifier returns the verifier of h; keys gives each issuer's key set
// (NewKeySet).
func NewVerifier(h *profile.HTTP, keys map[string]*KeySet, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{resource: h.Resource, scopes: h.RequiredScopes, bindings: h.Bindings, keys: keys, now: now}
}

// claims are the members of a token this package reads.
type claims struct {
	jwt.Claims
	Scope string `json:"scope"`
	SCP   any    `json:"scp"`
}

// Verify checks raw (the Authorization header's credentials) and returns
// the caller it proves, bound to its task; or an *Error.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Caller, error) {
	if raw == "" {
		return nil, invalid("no bearer token: send Authorization: Bearer <access token>")
	}
	if len(raw) > MaxTokenBytes {
		return nil, invalid("the token is %d bytes, more than %d", len(raw), MaxTokenBytes)
	}
	tok, err := jwt.ParseSigned(raw, Algorithms)
	if err != nil {
		return nil, invalid("not a JWT signed with an asymmetric algorithm (%s): %v", algNames(), err)
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("a token has exactly one signature")
	}
	var unverified claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, invalid("the token's claims do not decode: %v", err)
	}
	ks := v.keys[unverified.Issuer]
	if ks == nil {
		return nil, invalid("issuer %q is not one this server accepts", unverified.Issuer)
	}
	key, err := ks.Key(ctx, tok.Headers[0].KeyID, tok.Headers[0].Algorithm)
	if err != nil {
		return nil, invalid("%v", err)
	}
	var c claims
	if err := tok.Claims(key, &c); err != nil {
		return nil, invalid("the token's signature does not verify with %s's key %q", unverified.Issuer, tok.Headers[0].KeyID)
	}
	if c.Expiry == nil {
		return nil, invalid("the token has no exp: tokens without an expiry are refused")
	}
	err = c.ValidateWithLeeway(jwt.Expected{Issuer: unverified.Issuer, AnyAudience: jwt.Audience{v.resource}, Time: v.now()}, Skew)
	switch {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("the token's audience %q does not include this resource, %s", []string(c.Audience), v.resource)
	case errors.Is(err, jwt.ErrExpired):
		return nil, invalid("the token expired at %s", c.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, invalid("the token is not valid before %s", c.NotBefore.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, invalid("the token was issued in the future (%s)", c.IssuedAt.Time().UTC().Format(time.RFC3339))
	case err != nil:
		return nil, invalid("%v", err)
	}
	if c.Subject == "" {
		return nil, invalid("the token has no sub")
	}
	granted := scopes(c)
	for _, s := range v.scopes {
		if !slices.Contains(granted, s) {
			return nil, &Error{Status: 403, Code: "insufficient_scope", Description: fmt.Sprintf("the token lacks scope %q; this server requires %s", s, strings.Join(v.scopes, " "))}
		}
	}
	caller := &Caller{Issuer: c.Issuer, Subject: c.Subject, Scopes: granted, Expiry: c.Expiry.Time()}
	var all map[string]any
	if err := tok.Claims(key, &all); err != nil {
		return nil, invalid("the token's claims do not decode: %v", err)
	}
	for _, b := range v.bindings {
		if b.Issuer == c.Issuer && (b.Subject != "" && b.Subject == c.Subject || b.Claim != "" && holds(all[b.Claim], b.Value)) {
			caller.Task = b.Task
			return caller, nil
		}
	}
	return nil, &Error{Status: 403, Description: fmt.Sprintf("%s of %s is bound to no task on this server; the owner binds callers in the profile's mcp.http.bindings", c.Subject, c.Issuer)}
}

// scopes are the scopes a token grants: "scope" (space-separated, RFC
// 9068) and "scp" (a list or a string, as some issuers write it).
func scopes(c claims) []string {
	out := strings.Fields(c.Scope)
	switch s := c.SCP.(type) {
	case string:
		out = append(out, strings.Fields(s)...)
	case []any:
		for _, x := range s {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
	}
	return out
}

// holds reports whether a claim's value is want, or a list holding it.
func holds(claim any, want string) bool {
	switch v := claim.(type) {
	case string:
		return v == want
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

func algNames() string {
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}
