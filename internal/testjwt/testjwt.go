// Package testjwt mints signed JWTs for the tests and the demo of the HTTP
// adapter, as their local authorization servers do.
package testjwt

import (
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Mint signs claims with key, naming the key kid in the header; it
// panics on a key go-jose cannot sign with (a mistake in the test).
func Mint(key jose.SigningKey, kid string, claims any) string {
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}
