package bearer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// MinRefetch is how often, at most, a key set is fetched again for a key
// id it does not hold: a stream of tokens with made-up key ids costs the
// issuer one request per MinRefetch, not one per token.
const MinRefetch = 30 * time.Second

// MaxKeySetBytes bounds a key set document.
const MaxKeySetBytes = 1 << 20

// FetchTimeout bounds one fetch of a key set.
const FetchTimeout = 10 * time.Second

// KeySet is an issuer's JSON Web Key Set, read from its jwksUri
// (https://… or file:///…) when first needed and kept; a key id it does
// not hold makes it read the set again, at most once per MinRefetch.
type KeySet struct {
	uri    string
	client *http.Client
	now    func() time.Time

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time // the last read, successful or not
	fetches int
}

// NewKeySet returns the key set at uri; client fetches https URIs (nil:
// one with FetchTimeout), now is the clock (nil: time.Now).
func NewKeySet(uri string, client *http.Client, now func() time.Time) *KeySet {
	if client == nil {
		client = &http.Client{Timeout: FetchTimeout}
	}
	if now == nil {
		now = time.Now
	}
	return &KeySet{uri: uri, client: client, now: now}
}

// Fetches is how many times the set was read.
func (k *KeySet) Fetches() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}

// Key returns the public key kid names for alg, reading the set again
// when it does not hold kid (rate-limited by MinRefetch).
func (k *KeySet) Key(ctx context.Context, kid, alg string) (any, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, err := k.find(kid, alg); err == nil {
		return key, nil
	} else if !k.fetched.IsZero() && k.now().Sub(k.fetched) < MinRefetch {
		return nil, err
	}
	k.fetched = k.now()
	k.fetches++
	set, err := k.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("the issuer's key set %s cannot be read: %v", k.uri, err)
	}
	k.keys = set
	return k.find(kid, alg)
}

// find picks kid from the set: a public signing key for alg. A token that
// names no key may use the set's only signing key.
func (k *KeySet) find(kid, alg string) (any, error) {
	var found []jose.JSONWebKey
	for _, key := range k.keys.Keys {
		if (kid == "" || key.KeyID == kid) && (key.Use == "" || key.Use == "sig") && (key.Algorithm == "" || key.Algorithm == alg) {
			found = append(found, key)
		}
	}
	switch {
	case len(found) == 0 && kid == "":
		return nil, fmt.Errorf("the token names no key (kid) and the issuer's key set has no signing key for %s", alg)
	case len(found) == 0:
		return nil, fmt.Errorf("the issuer's key set has no signing key %q for %s", kid, alg)
	case len(found) > 1:
		return nil, fmt.Errorf("the token names no key (kid) and the issuer's key set has %d for %s", len(found), alg)
	case !found[0].Valid() || !found[0].IsPublic():
		return nil, fmt.Errorf("key %q of the issuer's key set is not a public key", found[0].KeyID)
	}
	return found[0].Key, nil
}

func (k *KeySet) read(ctx context.Context) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	u, err := url.Parse(k.uri)
	if err != nil {
		return set, err
	}
	var body io.Reader
	switch u.Scheme {
	case "file":
		f, err := os.Open(u.Path)
		if err != nil {
			return set, err
		}
		defer f.Close()
		body = f
	case "https":
		ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.uri, nil)
		if err != nil {
			return set, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := k.client.Do(req)
		if err != nil {
			return set, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return set, fmt.Errorf("HTTP %s", resp.Status)
		}
		body = resp.Body
	default:
		return set, fmt.Errorf("scheme %q: https or file only", u.Scheme)
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxKeySetBytes+1))
	if err != nil {
		return set, err
	}
	if len(data) > MaxKeySetBytes {
		return set, fmt.Errorf("more than %d bytes", MaxKeySetBytes)
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return set, fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	return set, nil
}
