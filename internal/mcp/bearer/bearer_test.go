package bearer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/mcp/bearer"
	"github.com/rukh-cli/rukh/internal/testjwt"
)

const (
	resource = "https://tools.example.com/mcp"
	idp      = "https://idp.example.com"
	sso      = "https://sso.example.org/realms/team"
)

// issuer is a local authorization server of the tests: its key pairs and
// a key set with their public halves.
type issuer struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

func newIssuer(t testing.TB) *issuer {
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{rsa: r, ec: e}
}

func (is *issuer) jwks(extra ...jose.JSONWebKey) []byte {
	set := jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey{
		{Key: &is.rsa.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		{Key: &is.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
	}, extra...)}
	b, _ := json.Marshal(set)
	return b
}

// mint signs claims with the issuer's key kid ("rsa-1" or "ec-1").
func (is *issuer) mint(t testing.TB, kid string, claims any) string {
	key := jose.SigningKey{Algorithm: jose.RS256, Key: is.rsa}
	if kid == "ec-1" {
		key = jose.SigningKey{Algorithm: jose.ES256, Key: is.ec}
	}
	return testjwt.Mint(key, kid, claims)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setup is a verifier for two issuers: idp with its key set in a file,
// sso over https (a local TLS server); alice of idp is bound to agent,
// members of sso's group ops to owner.
func setup(t testing.TB) (v *bearer.Verifier, a, b *issuer, file string, sets map[string]*bearer.KeySet, c *clock) {
	t.Helper()
	a, b = newIssuer(t), newIssuer(t)
	file = filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, a.jwks(), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b.jwks())
	}))
	t.Cleanup(srv.Close)
	h := &profile.HTTP{
		Resource: resource,
		AuthorizationServers: []profile.AuthorizationServer{
			{Issuer: idp, JWKSURI: "file://" + file}, {Issuer: sso, JWKSURI: srv.URL + "/jwks.json"},
		},
		RequiredScopes: []string{"rukh:call"},
		Bindings: []profile.Binding{
			{Issuer: idp, Subject: "alice", Task: "agent"},
			{Issuer: sso, Claim: "groups", Value: "ops", Task: "owner"},
		},
	}
	c = &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	sets = map[string]*bearer.KeySet{
		idp: bearer.NewKeySet("file://"+file, nil, c.now),
		sso: bearer.NewKeySet(srv.URL+"/jwks.json", srv.Client(), c.now),
	}
	return bearer.NewVerifier(h, sets, c.now), a, b, file, sets, c
}

// std is a valid token's claims at the clock's time.
func std(c *clock, iss, sub string) map[string]any {
	now := c.now()
	return map[string]any{"iss": iss, "sub": sub, "aud": []string{resource, "other"}, "exp": now.Add(time.Hour).Unix(),
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "scope": "openid rukh:call"}
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for key, val := range m {
		out[key] = val
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// Every token of the list gets its exact status, code and reason;
// the valid ones give their binding's task.
func TestVerify(t *testing.T) {
	v, a, b, _, _, c := setup(t)
	ctx := context.Background()
	valid := a.mint(t, "rsa-1", std(c, idp, "alice"))

	// HS256 with the issuer's public key (PEM) as the secret: the classic
	// algorithm confusion.
	pub, _ := x509.MarshalPKIXPublicKey(&a.rsa.PublicKey)
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	payload, _ := json.Marshal(std(c, idp, "alice"))
	hsInput := b64(`{"alg":"HS256","typ":"JWT","kid":"rsa-1"}`) + "." + base64.RawURLEncoding.EncodeToString(payload)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(hsInput))
	hs256 := hsInput + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	none := b64(`{"alg":"none","typ":"JWT"}`) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	// Signed by another key under the issuer's key id.
	forged := newIssuer(t).mint(t, "rsa-1", std(c, idp, "alice"))
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), "alice", "admin", 1))) + "." + parts[2]

	for _, tc := range []struct {
		name, token string
		status      int
		code, want  string // want: the description starts with it; or the task for a valid token
	}{
		{"valid", valid, 0, "", "agent"},
		{"valid over https, by group", b.mint(t, "ec-1", with(std(c, sso, "bob"), "groups", []string{"dev", "ops"})), 0, "", "owner"},
		{"valid, scp list", a.mint(t, "ec-1", with(with(std(c, idp, "alice"), "scope", nil), "scp", []string{"rukh:call"})), 0, "", "agent"},
		{"expired within the skew", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "exp", c.now().Add(-30*time.Second).Unix())), 0, "", "agent"},
		{"missing", "", 401, "invalid_token", "no bearer token"},
		{"garbage", "not.a.jwt", 401, "invalid_token", "not a JWT signed with an asymmetric algorithm"},
		{"too big", strings.Repeat("a", bearer.MaxTokenBytes+1), 401, "invalid_token", "the token is 16385 bytes"},
		{"alg none", none, 401, "invalid_token", "not a JWT signed with an asymmetric algorithm"},
		{"HS256 with the public key as secret", hs256, 401, "invalid_token", "not a JWT signed with an asymmetric algorithm"},
		{"bad signature", forged, 401, "invalid_token", `the token's signature does not verify with https://idp.example.com's key "rsa-1"`},
		{"tampered payload", tampered, 401, "invalid_token", `the token's signature does not verify`},
		{"unknown issuer", a.mint(t, "rsa-1", std(c, "https://evil.example.com", "alice")), 401, "invalid_token", `issuer "https://evil.example.com" is not one this server accepts`},
		{"issuer not exact", a.mint(t, "rsa-1", std(c, idp+"/", "alice")), 401, "invalid_token", `issuer "https://idp.example.com/" is not one`},
		{"wrong audience", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "aud", "https://other.example.com/mcp")), 401, "invalid_token", "the token's audience [\"https://other.example.com/mcp\"] does not include this resource"},
		{"no audience", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "aud", nil)), 401, "invalid_token", "the token's audience [] does not include"},
		{"expired", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "exp", c.now().Add(-2*time.Minute).Unix())), 401, "invalid_token", "the token expired at 2026-12-01T11:58:00Z"},
		{"no exp", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "exp", nil)), 401, "invalid_token", "the token has no exp"},
		{"not yet valid", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "nbf", c.now().Add(5*time.Minute).Unix())), 401, "invalid_token", "the token is not valid before 2026-12-01T12:05:00Z"},
		{"issued in the future", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "iat", c.now().Add(5*time.Minute).Unix())), 401, "invalid_token", "the token was issued in the future"},
		{"no sub", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "sub", nil)), 401, "invalid_token", "the token has no sub"},
		{"unknown key id", mintKID(t, a, "rsa-9", std(c, idp, "alice")), 401, "invalid_token", `the issuer's key set has no signing key "rsa-9" for RS256`},
		{"insufficient scope", a.mint(t, "rsa-1", with(std(c, idp, "alice"), "scope", "openid")), 403, "insufficient_scope", `the token lacks scope "rukh:call"`},
		{"bound to no task", a.mint(t, "rsa-1", std(c, idp, "mallory")), 403, "", "mallory of https://idp.example.com is bound to no task"},
		{"group of another issuer", a.mint(t, "rsa-1", with(std(c, idp, "bob"), "groups", []string{"ops"})), 403, "", "bob of https://idp.example.com is bound to no task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller, err := v.Verify(ctx, tc.token)
			if tc.status == 0 {
				if err != nil || caller.Task != tc.want {
					t.Fatalf("caller %+v, %v; want task %s", caller, err, tc.want)
				}
				return
			}
			be, ok := err.(*bearer.Error)
			if !ok || be.Status != tc.status || be.Code != tc.code || !strings.HasPrefix(be.Description, tc.want) {
				t.Fatalf("err %#v, want %d %q %q", err, tc.status, tc.code, tc.want)
			}
			if caller != nil {
				t.Errorf("a refused token gave a caller %+v", caller)
			}
		})
	}
}

// mintKID signs with the issuer's RSA key under another key id.
func mintKID(t testing.TB, is *issuer, kid string, claims any) string {
	return testjwt.Mint(jose.SigningKey{Algorithm: jose.RS256, Key: is.rsa}, kid, claims)
}

// A key id the set does not hold makes it read the set again, at most
// once per MinRefetch: made-up key ids cost the issuer nothing more, and
// a rotated key is found once the set has it.
func TestKeyRotation(t *testing.T) {
	v, a, _, file, sets, c := setup(t)
	ctx := context.Background()
	if _, err := v.Verify(ctx, a.mint(t, "rsa-1", std(c, idp, "alice"))); err != nil {
		t.Fatal(err)
	}
	if n := sets[idp].Fetches(); n != 1 {
		t.Fatalf("%d reads for the first token", n)
	}
	for i := range 50 {
		if _, err := v.Verify(ctx, mintKID(t, a, "made-up", std(c, idp, "alice"))); err == nil {
			t.Fatalf("token %d with a made-up key id accepted", i)
		}
	}
	if n := sets[idp].Fetches(); n != 1 {
		t.Errorf("%d reads after 50 tokens with an unknown key id within %s of the first read, want 1", n, bearer.MinRefetch)
	}
	c.add(bearer.MinRefetch)
	for range 50 {
		v.Verify(ctx, mintKID(t, a, "made-up", std(c, idp, "alice")))
	}
	if n := sets[idp].Fetches(); n != 2 {
		t.Errorf("%d reads after 50 more once %s passed, want 2 (one more, then none)", n, bearer.MinRefetch)
	}
	// The issuer rotates: a new key, published in the set.
	next, _ := rsa.GenerateKey(rand.Reader, 2048)
	os.WriteFile(file, a.jwks(jose.JSONWebKey{Key: &next.PublicKey, KeyID: "rsa-2", Algorithm: "RS256", Use: "sig"}), 0o600)
	rotated := testjwt.Mint(jose.SigningKey{Algorithm: jose.RS256, Key: next}, "rsa-2", std(c, idp, "alice"))
	if _, err := v.Verify(ctx, rotated); err == nil {
		t.Fatal("a new key found within MinRefetch of the last read")
	}
	c.add(bearer.MinRefetch)
	if caller, err := v.Verify(ctx, rotated); err != nil || caller.Task != "agent" {
		t.Fatalf("the rotated key after MinRefetch: %+v %v", caller, err)
	}
	if n := sets[idp].Fetches(); n != 3 {
		t.Errorf("%d reads, want 3", n)
	}
}

// A key set that holds a symmetric key, or that cannot be read, gives no
// key: the token is refused and says why.
func TestBadKeySets(t *testing.T) {
	dir := t.TempDir()
	sym, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k", Algorithm: "HS256"}}})
	os.WriteFile(filepath.Join(dir, "sym.json"), sym, 0o600)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o600)
	for _, tc := range []struct{ file, alg, want string }{
		{"sym.json", "RS256", `has no signing key "k" for RS256`},
		{"bad.json", "RS256", "cannot be read: not a JSON Web Key Set"},
		{"missing.json", "RS256", "cannot be read: open "},
	} {
		ks := bearer.NewKeySet("file://"+filepath.Join(dir, tc.file), nil, nil)
		if _, err := ks.Key(context.Background(), "k", tc.alg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
}

// Whatever arrives as a token, Verify answers with a caller or an *Error,
// never a panic.
func FuzzVerify(f *testing.F) {
	v, a, _, _, _, c := setup(f)
	f.Add(a.mint(f, "rsa-1", std(c, idp, "alice")))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		caller, err := v.Verify(context.Background(), token)
		if err == nil && caller == nil || err != nil && caller != nil {
			t.Fatalf("caller %v err %v", caller, err)
		}
		if _, ok := err.(*bearer.Error); err != nil && !ok {
			t.Fatalf("err %T %v", err, err)
		}
	})
}
