package trust

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/jsoncanon"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Signature is rukh-release.sig: a publisher's ed25519 signature over the
// canonical manifest, naming the key that made it.
type Signature struct {
	Format    string // SignatureFormat
	Publisher string // the publisher the signer claims to be
	Key       string // PublicKey.ID of the signing key
	Signature []byte // ed25519.Sign(key, manifest.Canonical())
}

type signatureJSON struct {
	Format    string `json:"format"`
	Publisher string `json:"publisher"`
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

// Sign signs the canonical form of m with k and returns the signature
// document (canonical JSON) to store as rukh-release.sig.
func Sign(m *Manifest, k PrivateKey) ([]byte, error) {
	if e := m.validate(); e != nil {
		return nil, e
	}
	pub := k.Public()
	if pub == nil {
		return nil, refuse(CodeBadKey, "", "private key is %d bytes; an ed25519 key is %d", len(k), ed25519.PrivateKeySize)
	}
	raw, err := json.Marshal(signatureJSON{
		Format:    SignatureFormat,
		Publisher: m.Publisher,
		Key:       pub.ID(),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.PrivateKey(k), m.Canonical())),
	})
	if err != nil {
		return nil, err
	}
	return jsoncanon.Transform(raw)
}

// ParseSignature reads rukh-release.sig strictly. Errors are *Error with
// code bad_signature_file or too_large.
func ParseSignature(data []byte) (*Signature, error) {
	if int64(len(data)) > limits.signatureBytes {
		return nil, refuse(CodeTooLarge, SignatureName, "signature file is %d bytes; the limit is %d", len(data), limits.signatureBytes)
	}
	v, err := strictjson.Parse(data, strictjson.Limits{MaxBytes: int(limits.signatureBytes), MaxDepth: 1, MaxMembers: 16})
	if err != nil {
		return nil, badSignatureFile("%v", err)
	}
	r := &docReader{what: "signature"}
	o := r.object(v, "", "format", "publisher", "key", "signature")
	s := &Signature{Format: r.str(o, "format"), Publisher: r.str(o, "publisher"), Key: r.str(o, "key")}
	b64 := r.str(o, "signature")
	if r.err != nil {
		return nil, badSignatureFile("%s", r.err)
	}
	if s.Format != SignatureFormat {
		return nil, refuse(CodeBadSignatureFile, SignatureName, "format is %q and this build reads only %q; upgrade "+cliname.Name()+", or sign the release with this one", s.Format, SignatureFormat)
	}
	if !descriptor.ValidPublisher(s.Publisher) {
		return nil, badSignatureFile("publisher %q is not a valid publisher name", s.Publisher)
	}
	if !descriptor.ValidDigest(s.Key) {
		return nil, badSignatureFile(`key %q is not "sha256:" and 64 lowercase hex digits`, s.Key)
	}
	s.Signature, err = base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(s.Signature) != ed25519.SignatureSize {
		return nil, badSignatureFile("signature is not %d bytes of standard base64", ed25519.SignatureSize)
	}
	return s, nil
}

func badSignatureFile(format string, args ...any) *Error {
	return refuse(CodeBadSignatureFile, SignatureName, format+"; sign the release again with "+cliname.Cmd("ext pack"), args...)
}

// verify reports whether s is a valid signature of m by pub.
func (s *Signature) verify(m *Manifest, pub PublicKey) bool {
	return len(pub) == ed25519.PublicKeySize && len(s.Signature) == ed25519.SignatureSize &&
		ed25519.Verify(ed25519.PublicKey(pub), m.Canonical(), s.Signature)
}
