package trust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/rukh-cli/rukh/internal/atomicfile"
	"github.com/rukh-cli/rukh/internal/cliname"
)

// PEM block types of key files.
const (
	pemPrivate = "PRIVATE KEY" // PKCS #8
	pemPublic  = "PUBLIC KEY"  // PKIX
)

// PublicKey is a publisher's ed25519 public key.
type PublicKey ed25519.PublicKey

// ID returns the key's identity: "sha256:" and the lowercase hex SHA-256 of
// the raw 32-byte key. Signatures name their key by it.
func (k PublicKey) ID() string {
	sum := sha256.Sum256(k)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PrivateKey is a publisher's ed25519 private key.
type PrivateKey ed25519.PrivateKey

// Public returns the public half of k, or nil when k is not a valid key.
func (k PrivateKey) Public() PublicKey {
	if len(k) != ed25519.PrivateKeySize {
		return nil
	}
	return PublicKey(bytes.Clone(k[32:]))
}

// GenerateKey makes a new key pair from random (crypto/rand when nil).
func GenerateKey(random io.Reader) (PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return PrivateKey(priv), nil
}

// MarshalPublicKey returns pub as a PKIX "PUBLIC KEY" PEM block.
func MarshalPublicKey(pub PublicKey) ([]byte, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, refuse(CodeBadKey, "", "public key is %d bytes; an ed25519 key is %d", len(pub), ed25519.PublicKeySize)
	}
	der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(pub))
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der}), nil
}

func marshalPrivateKey(k PrivateKey) ([]byte, error) {
	if len(k) != ed25519.PrivateKeySize {
		return nil, refuse(CodeBadKey, "", "private key is %d bytes; an ed25519 key is %d", len(k), ed25519.PrivateKeySize)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ed25519.PrivateKey(k))
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: der}), nil
}

// ParsePublicKey parses a PKIX "PUBLIC KEY" PEM block holding an ed25519
// key, and nothing else.
func ParsePublicKey(data []byte) (PublicKey, error) {
	der, err := pemBody(data, pemPublic, "public")
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, refuse(CodeBadKey, "", "cannot parse the public key: %v", err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, refuse(CodeBadKey, "", "the public key is %T, not ed25519; make one with "+cliname.Cmd("trust keygen"), key)
	}
	return PublicKey(pub), nil
}

func parsePrivateKey(data []byte) (PrivateKey, error) {
	der, err := pemBody(data, pemPrivate, "private")
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, refuse(CodeBadKey, "", "cannot parse the private key: %v", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, refuse(CodeBadKey, "", "the private key is %T, not ed25519; make one with "+cliname.Cmd("trust keygen"), key)
	}
	return PrivateKey(priv), nil
}

// pemBody returns the DER bytes of the single PEM block of type typ in
// data, refusing other types, PEM headers and anything after the block.
func pemBody(data []byte, typ, what string) ([]byte, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, refuse(CodeBadKey, "", "no PEM block found; expected a %s key in a %q block", what, typ)
	}
	if block.Type != typ {
		return nil, refuse(CodeBadKey, "", "PEM block is %q, expected %q; is this the %s key?", block.Type, typ, what)
	}
	if len(block.Headers) > 0 {
		return nil, refuse(CodeBadKey, "", "PEM block has headers; a %s key has none", what)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, refuse(CodeBadKey, "", "unexpected data after the PEM block; a key file holds one key")
	}
	return block.Bytes, nil
}

// WritePrivateKey writes k to path as PKCS #8 PEM, mode 0600. It never
// replaces an existing file (the error then wraps fs.ErrExist) and never
// leaves a partial key at path.
func WritePrivateKey(path string, k PrivateKey) error {
	data, err := marshalPrivateKey(k)
	if err != nil {
		return err
	}
	return writeNew(path, data, 0o600)
}

// WritePublicKey writes pub to path as PKIX PEM, mode 0644, never replacing
// an existing file.
func WritePublicKey(path string, pub PublicKey) error {
	data, err := MarshalPublicKey(pub)
	if err != nil {
		return err
	}
	return writeNew(path, data, 0o644)
}

// writeNew writes data to a temporary file beside path and hard-links it
// to path: the link fails if path exists, and path appears complete or
// not at all.
func writeNew(path string, data []byte, perm fs.FileMode) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists; choose another name or remove it first: %w", path, fs.ErrExist)
	}
	if err := atomicfile.WriteNew(path, data, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; choose another name or remove it first: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadPrivateKey reads a private key file written by WritePrivateKey.
func ReadPrivateKey(path string) (PrivateKey, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := parsePrivateKey(data)
	if err != nil {
		return nil, keyFileError(path, err)
	}
	return k, nil
}

// ReadPublicKey reads a public key file written by WritePublicKey.
func ReadPublicKey(path string) (PublicKey, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParsePublicKey(data)
	if err != nil {
		return nil, keyFileError(path, err)
	}
	return k, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, refuse(CodeBadKey, "", "%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxKeyFileBytes {
		return nil, refuse(CodeBadKey, "", "%s is larger than %d bytes; it is not a key file", path, MaxKeyFileBytes)
	}
	return data, nil
}

func keyFileError(path string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Message: path + ": " + e.Message}
	}
	return fmt.Errorf("%s: %w", path, err)
}
