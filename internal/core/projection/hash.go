package projection

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"

	"github.com/rukh-cli/rukh/internal/jsoncanon"
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
	b = jsoncanon.AppendString(b, CatalogDomain)
	b = append(b, ',')
	b = jsoncanon.AppendString(b, p.Namespace)
	b = append(b, ',')
	b = strconv.AppendUint(b, p.Revision, 10)
	b = append(b, ',')
	b = jsoncanon.AppendString(b, string(p.Naming))
	b = append(b, ",["...)
	var (
		c   jsoncanon.Canonicalizer
		err error
	)
	for i := range p.Tools {
		t := &p.Tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for _, s := range []string{t.Name, t.Identity, t.Digest, t.Title, t.Description} {
			b = jsoncanon.AppendString(b, s)
			b = append(b, ',')
		}
		if b, err = c.Append(b, t.InputSchema); err != nil {
			return "", err
		}
		b = append(b, ',')
		if b, err = appendOutputSchema(&c, b, t.OutputSchema); err != nil {
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

// appendOutputSchema appends, with c, the canonical form of an output schema made
// by OutputSchema. The envelope around a structured result's schema is the
// same for every tool, so its canonical text is computed once and only the
// publisher's schema is canonicalized per tool.
func appendOutputSchema(c *jsoncanon.Canonicalizer, b, schema []byte) ([]byte, error) {
	n := len(schema) - len(structuredTail) - len(envelopeTail)
	if n < 0 || !bytes.HasPrefix(schema, structuredPrefix) || !bytes.HasSuffix(schema, structuredSuffix) {
		return c.Append(b, schema)
	}
	env := structuredEnvelope()
	if env.err != nil {
		return b, env.err
	}
	b = append(b, env.head...)
	b, err := c.Append(b, schema[len(structuredPrefix):n])
	if err != nil {
		return b, err
	}
	return append(b, env.tail...), nil
}

var (
	structuredPrefix = []byte(envelopeHead + structuredHead)
	structuredSuffix = []byte(structuredTail + envelopeTail)
)

// structuredEnvelope is the canonical text of a structured output schema
// before and after the publisher's schema.
var structuredEnvelope = sync.OnceValue(func() (env struct {
	head, tail []byte
	err        error
}) {
	const sentinel = `"\u0000publisher-schema"`
	canon, err := jsoncanon.Transform([]byte(envelopeHead + structuredHead + sentinel + structuredTail + envelopeTail))
	if err != nil {
		env.err = err
		return env
	}
	at := bytes.Index(canon, []byte(`"\u0000publisher-schema"`))
	if at < 0 {
		env.err = errors.New("the envelope has no place for the publisher schema")
		return env
	}
	env.head, env.tail = canon[:at], canon[at+len(sentinel):]
	return env
})
