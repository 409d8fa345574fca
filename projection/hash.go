package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// CatalogDomain is the first member of the array the catalog hash covers;
// it versions the field list below.
const CatalogDomain = "rukh.catalog/1"

// catalogHash returns "sha256:" + the lowercase SHA-256 hex of the RFC 8785
// canonical JSON of
//
//	["rukh.catalog/1", namespace, revision, naming,
//	 [[name, identity, digest, title, description, inputSchema, outputSchema, annotations], …]]
//
// with one inner array per tool in name order, the schemas as JSON values
// and the annotations as an object of the hints that are set. This is the
// fixed field list of docs/projection.md; nothing else participates. The
// canonical text is written straight into the hash.
func catalogHash(p *Projection) (string, error) {
	h := sha256.New()
	b := make([]byte, 0, 64<<10)
	b = append(b, '[')
	b = appendCanonicalString(b, CatalogDomain)
	b = append(b, ',')
	b = appendCanonicalString(b, p.Namespace)
	b = append(b, ',')
	b = strconv.AppendUint(b, p.Revision, 10)
	b = append(b, ',')
	b = appendCanonicalString(b, string(p.Naming))
	b = append(b, ",["...)
	var err error
	for i := range p.Tools {
		t := &p.Tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for _, s := range []string{t.Name, t.Identity, t.Digest, t.Title, t.Description} {
			b = appendCanonicalString(b, s)
			b = append(b, ',')
		}
		if b, err = appendCanonical(b, t.InputSchema); err != nil {
			return "", err
		}
		b = append(b, ',')
		if b, err = appendCanonical(b, t.OutputSchema); err != nil {
			return "", err
		}
		b = append(b, ',')
		b = t.Annotations.appendCanonical(b)
		b = append(b, ']')
		h.Write(b)
		b = b[:0]
	}
	b = append(b, "]]"...)
	h.Write(b)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// appendCanonical appends the hints that are set as an RFC 8785 object:
// names in sorted order.
func (a Annotations) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	first := true
	for _, h := range []struct {
		name string
		v    *bool
	}{
		{"destructiveHint", a.DestructiveHint},
		{"idempotentHint", a.IdempotentHint},
		{"openWorldHint", a.OpenWorldHint},
		{"readOnlyHint", a.ReadOnlyHint},
	} {
		if h.v == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, h.name...)
		b = append(b, `":`...)
		b = strconv.AppendBool(b, *h.v)
	}
	return append(b, '}')
}
