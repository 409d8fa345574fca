package resultschema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Validate validates raw, the bytes of the commandResult member of a
// completion report: {"kind":"structured","data":…} or
// {"kind":"text","text":"…"}, with the kind r declares. The data of a
// structured result must match r.Schema within lim; the error, if any,
// points into raw ("/data/items/3/name").
//
// Validate's work is bounded by the limits alone, never by a clock: the
// parse is linear in raw (at most lim.ResultBytes), and the walk of the
// data against the schema costs at most lim.Steps steps (see Limits.Steps)
// plus a scan of each value's own bytes; a walk that would need more is
// refused with CodeResultTimeout. The verdict on a result is therefore the
// same on every machine, however loaded. Validate panics if r is not a
// valid declaration (Kind Text without a Schema, or Structured with one)
// or lim has a non-positive field.
func (r Result) Validate(raw []byte, lim Limits) (*CommandResult, *Error) {
	lim.mustBeValid()
	switch {
	case r.Kind == Text && r.Schema == nil:
	case r.Kind == Structured && r.Schema != nil:
	default:
		panic("resultschema: a Result is either Text without a Schema or Structured with one")
	}
	if len(raw) > lim.ResultBytes {
		return nil, errorf(CodeResultTooLarge, "",
			"commandResult is %d bytes; the limit is %d, so return less data", len(raw), lim.ResultBytes)
	}
	return r.validate(raw, lim)
}

func stepsError(lim Limits) *Error {
	return errorf(CodeResultTimeout, "", "validating the result needs more than %d steps (one per value and per keyword checked on it); return a smaller result", lim.Steps)
}

func (r Result) validate(raw []byte, lim Limits) (*CommandResult, *Error) {
	// The wrapper adds one level and two members to the data.
	root, err := strictjson.Parse(raw, strictjson.Limits{
		MaxBytes:   lim.ResultBytes,
		MaxDepth:   lim.Depth + 1,
		MaxMembers: lim.Members + 2,
	})
	if err != nil {
		return nil, fromResultParse(err, r.Kind, lim)
	}
	if root.Kind != strictjson.Object {
		return nil, errorf(CodeResultMalformed, "",
			"commandResult must be a JSON object %s, not %s", r.Kind.shape(), kindPhrase(root))
	}
	kv := root.Get("kind")
	switch {
	case kv == nil:
		return nil, errorf(CodeResultMalformed, "", "commandResult has no \"kind\"; send %s", r.Kind.shape())
	case kv.Kind != strictjson.String || (Kind(kv.Text) != Text && Kind(kv.Text) != Structured):
		return nil, errorf(CodeResultMalformed, "/kind", "kind must be %q, not %s", r.Kind, valuePhrase(kv))
	case Kind(kv.Text) != r.Kind:
		return nil, errorf(CodeResultMalformed, "/kind",
			"kind is %q, but the command declares a %s result; send %s", kv.Text, r.Kind, r.Kind.shape())
	}
	payload := r.Kind.payload()
	for _, m := range root.Members {
		if m.Name != "kind" && m.Name != payload {
			return nil, errorf(CodeResultMalformed, pointer([]string{m.Name}),
				"a %s commandResult has only \"kind\" and %q; remove %s", r.Kind, payload, quote(m.Name))
		}
	}
	pv := root.Get(payload)
	if pv == nil {
		return nil, errorf(CodeResultMalformed, "", "commandResult has no %q; send %s", payload, r.Kind.shape())
	}
	if r.Kind == Text {
		if pv.Kind != strictjson.String {
			return nil, errorf(CodeResultMalformed, "/text", "text must be a string, not %s", kindPhrase(pv))
		}
		return &CommandResult{Kind: Text, Text: pv.Text}, nil
	}
	// The parser allowed two members for the wrapper, which has exactly
	// two now: the data is within lim.Members.
	vd := &validator{lim: lim}
	if err := vd.value(r.Schema.root, pv); err != nil {
		return nil, err
	}
	return &CommandResult{Kind: Structured, Data: pv.AppendCompact(nil)}, nil
}

// shape shows the wrapper a result of kind k must be.
func (k Kind) shape() string {
	if k == Text {
		return `{"kind":"text","text":"…"}`
	}
	return `{"kind":"structured","data":…}`
}

func (k Kind) payload() string {
	if k == Text {
		return "text"
	}
	return "data"
}

func fromResultParse(err error, k Kind, lim Limits) *Error {
	var pe *strictjson.Error
	if !errors.As(err, &pe) {
		return errorf(CodeResultMalformed, "", "commandResult is not valid JSON: %s", cut(err.Error()))
	}
	inData := k == Structured && (pe.Pointer == "/data" || strings.HasPrefix(pe.Pointer, "/data/"))
	switch {
	case pe.Code == strictjson.CodeTooLarge:
		return errorf(CodeResultTooLarge, "", "commandResult is larger than %d bytes; return less data", lim.ResultBytes)
	case pe.Code == strictjson.CodeTooDeep && inData:
		return errorf(CodeResultTooDeep, pe.Pointer, "data nests deeper than %d levels; flatten the result", lim.Depth)
	case pe.Code == strictjson.CodeTooManyMembers && inData:
		// With "kind" first, as usual, the parser stops at the first
		// member of the data that is one too many.
		return errorf(CodeResultTooManyMembers, pe.Pointer,
			"data has more than %d members and elements; return less data", lim.Members)
	case pe.Code == strictjson.CodeTooManyMembers && k == Structured:
		// The data came before "kind", or the wrapper has junk members.
		return errorf(CodeResultTooManyMembers, "",
			"commandResult has more than %d members and elements besides \"kind\" and its payload; return less data", lim.Members)
	}
	return errorf(CodeResultMalformed, pe.Pointer, "commandResult is not valid strict JSON (%s: %s)", pe.Code, pe.Message)
}

// validator checks data against a checked schema, depth first in
// document order, and stops at the first mismatch.
type validator struct {
	lim   Limits
	steps int     // spent so far; at most lim.Steps
	path  []token // of the value being checked, below /data
}

// token is a reference token: a member name (index -1) or an array index.
type token struct {
	name  string
	index int
}

func (vd *validator) pointer() string {
	var b strings.Builder
	b.WriteString("/data")
	for _, t := range vd.path {
		if t.index >= 0 {
			b.WriteString("/" + strconv.Itoa(t.index))
			continue
		}
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t.name))
	}
	return b.String()
}

func (vd *validator) fail(format string, args ...any) *Error {
	return errorf(CodeResultInvalid, vd.pointer(), format, args...)
}

func (vd *validator) value(n *node, v *strictjson.Value) *Error {
	// Spend the value's steps before any of its work; no value costs more
	// than its steps and a scan of its own bytes.
	if vd.steps += n.steps; vd.steps > vd.lim.Steps {
		return stepsError(vd.lim)
	}
	var d decimal // the value of a number
	if v.Kind == strictjson.Number {
		d, _ = parseDecimal(v.Text)
		if !d.fitsBinary64() {
			return errorf(CodeResultInvalidNumber, vd.pointer(),
				"number %s does not fit binary64 (it overflows or underflows); send a smaller magnitude", cut(v.Text))
		}
	}
	if !n.hasType(v, d) {
		return vd.fail("value is %s; the schema expects %s", valueKindPhrase(v, d), typePhrase(n.typ))
	}
	switch n.typ {
	case tObject:
		return vd.object(n, v)
	case tArray:
		return vd.array(n, v)
	case tString:
		return vd.string(n, v)
	case tBoolean:
		if n.enum != nil && !n.enum[strconv.FormatBool(v.Bool)] {
			return vd.fail("value %t is not one of the allowed values", v.Bool)
		}
	case tInteger, tNumber:
		return vd.number(n, v, d)
	}
	return nil
}

// hasType reports whether v, with the value d if it is a number, is of
// n's type. An integer is a number without fractional part, however
// written: 1.0 and 1e2 are integers, as JSON Schema says.
func (n *node) hasType(v *strictjson.Value, d decimal) bool {
	switch n.typ {
	case tObject:
		return v.Kind == strictjson.Object
	case tArray:
		return v.Kind == strictjson.Array
	case tString:
		return v.Kind == strictjson.String
	case tBoolean:
		return v.Kind == strictjson.Bool
	case tNull:
		return v.Kind == strictjson.Null
	case tNumber:
		return v.Kind == strictjson.Number
	case tInteger:
		return v.Kind == strictjson.Number && d.isInteger()
	}
	return false
}

func (vd *validator) object(n *node, v *strictjson.Value) *Error {
	// Missing required properties first: they are a problem of the object
	// itself, which comes before its members.
	present := 0
	for _, m := range v.Members {
		if p, ok := n.props[m.Name]; ok && p.required {
			present++
		}
	}
	if present < len(n.required) {
		for _, name := range n.required {
			if v.Get(name) == nil {
				return vd.fail("required property %s is missing", quote(name))
			}
		}
	}
	for _, m := range v.Members {
		vd.path = append(vd.path, token{name: m.Name, index: -1})
		p, ok := n.props[m.Name]
		if !ok {
			return vd.fail("property %s is not declared by the schema; remove it", quote(m.Name))
		}
		if err := vd.value(p.node, m.Value); err != nil {
			return err
		}
		vd.path = vd.path[:len(vd.path)-1]
	}
	return nil
}

func (vd *validator) array(n *node, v *strictjson.Value) *Error {
	switch l := len(v.Items); {
	case l > n.maxItems:
		return vd.fail("array has %d items; the schema allows at most %d", l, n.maxItems)
	case l < n.minItems:
		return vd.fail("array has %d items; the schema requires at least %d", l, n.minItems)
	}
	for i, it := range v.Items {
		vd.path = append(vd.path, token{index: i})
		if err := vd.value(n.items, it); err != nil {
			return err
		}
		vd.path = vd.path[:len(vd.path)-1]
	}
	return nil
}

func (vd *validator) string(n *node, v *strictjson.Value) *Error {
	if n.enum != nil {
		if !n.enum[v.Text] {
			return vd.fail("value %s is not one of the %d allowed values", quote(v.Text), len(n.enum))
		}
		return nil
	}
	if n.minLength < 0 && n.maxLength < 0 {
		return nil
	}
	switch l := utf8.RuneCountInString(v.Text); {
	case l < n.minLength:
		return vd.fail("string has %d code points; the schema requires at least %d", l, n.minLength)
	case n.maxLength >= 0 && l > n.maxLength:
		return vd.fail("string has %d code points; the schema allows at most %d", l, n.maxLength)
	}
	return nil
}

func (vd *validator) number(n *node, v *strictjson.Value, d decimal) *Error {
	switch {
	case n.enum != nil:
		if !n.enum[d.key()] {
			return vd.fail("value %s is not one of the %d allowed values", cut(v.Text), len(n.enum))
		}
	case n.minimum != nil && d.cmp(*n.minimum) < 0:
		return vd.fail("value %s is less than the minimum %s", cut(v.Text), cut(n.minimumLit))
	case n.maximum != nil && d.cmp(*n.maximum) > 0:
		return vd.fail("value %s is greater than the maximum %s", cut(v.Text), cut(n.maximumLit))
	}
	return nil
}

func typePhrase(t jsonType) string {
	switch t {
	case tObject, tArray, tInteger:
		return "an " + t.String()
	case tNull:
		return "null"
	}
	return "a " + t.String()
}

// valueKindPhrase is kindPhrase, telling a number with a fraction apart.
func valueKindPhrase(v *strictjson.Value, d decimal) string {
	if v.Kind == strictjson.Number && !d.isInteger() {
		return fmt.Sprintf("the non-integer number %s", cut(v.Text))
	}
	return kindPhrase(v)
}
