package resultschema

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Schema is a checked result schema: it satisfies every rule of the
// subset and fits the limits it was checked with. (Every schema of the
// subset is standard JSON Schema 2020-12; the tests compile each one with
// a reference implementation and compare verdicts.)
type Schema struct {
	root *node  // what Validate walks
	json []byte // compact encoding, as checked
}

// JSON returns the compact encoding of the checked schema: member order and
// number literals as written, so equal input gives equal bytes. It is a
// copy the caller may keep.
func (s *Schema) JSON() []byte { return bytes.Clone(s.json) }

// jsonType is the value of a subschema's "type".
type jsonType uint8

const (
	tObject jsonType = iota + 1
	tArray
	tString
	tBoolean
	tInteger
	tNumber
	tNull
)

var typeNames = map[string]jsonType{
	"object": tObject, "array": tArray, "string": tString, "boolean": tBoolean,
	"integer": tInteger, "number": tNumber, "null": tNull,
}

func (t jsonType) String() string {
	switch t {
	case tObject:
		return "object"
	case tArray:
		return "array"
	case tString:
		return "string"
	case tBoolean:
		return "boolean"
	case tInteger:
		return "integer"
	case tNumber:
		return "number"
	case tNull:
		return "null"
	}
	return "invalid"
}

// node is a checked subschema, ready for validation.
type node struct {
	typ jsonType

	props     map[string]prop // object
	required  []string        // object, in the order written
	minCount  int             // members and elements every valid instance has
	items     *node           // array
	minItems  int             // array; 0 when absent
	maxItems  int             // array; always declared
	minLength int             // string; -1 when absent
	maxLength int             // string; -1 when absent

	minimum, maximum       *decimal // integer, number
	minimumLit, maximumLit string   // as written, for messages

	enum map[string]bool // canonical keys (see enumKey); nil when absent

	steps int // what validating one value against this node costs (Limits.Steps)
}

// constraining are the keywords that cost a step of validation each.
var constraining = map[string]bool{
	"properties": true, "additionalProperties": true, "required": true,
	"items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "minimum": true, "maximum": true, "enum": true,
}

type prop struct {
	node     *node
	required bool
}

// The keywords of the subset and the types each applies to. title and
// description apply to every type.
var applicable = map[string][]jsonType{
	"type":                 nil,
	"title":                nil,
	"description":          nil,
	"properties":           {tObject},
	"required":             {tObject},
	"additionalProperties": {tObject},
	"items":                {tArray},
	"minItems":             {tArray},
	"maxItems":             {tArray},
	"minLength":            {tString},
	"maxLength":            {tString},
	"minimum":              {tInteger, tNumber},
	"maximum":              {tInteger, tNumber},
	"enum":                 {tString, tInteger, tNumber, tBoolean},
}

// forbidden lists JSON Schema keywords the subset excludes on purpose:
// references, identifiers, regular expressions, defaults, composition,
// conditionals and everything else that is not bounded or not needed.
var forbidden = map[string]bool{
	"$ref": true, "$defs": true, "definitions": true, "$id": true, "$schema": true,
	"$anchor": true, "$dynamicRef": true, "pattern": true, "patternProperties": true,
	"format": true, "default": true, "const": true, "allOf": true, "anyOf": true,
	"oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentSchemas": true, "dependentRequired": true, "propertyNames": true,
	"unevaluatedProperties": true, "unevaluatedItems": true, "prefixItems": true,
	"contains": true, "uniqueItems": true, "multipleOf": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "minProperties": true, "maxProperties": true,
	"contentEncoding": true, "contentMediaType": true, "examples": true,
	"readOnly": true, "writeOnly": true, "deprecated": true,
}

// maxCounter is the largest counter accepted: 2^53-1, the largest integer
// every JSON implementation reads exactly.
const maxCounter = 1<<53 - 1

// Check checks a publisher schema, already parsed (for example the "schema"
// member of a descriptor's execute.result), and compiles it. It returns
// every problem found, in document order, and a nil Schema if there is
// any. A tree that is no JSON value, or a schema over the size or member
// limit or nested deeper than 2×Depth+2 JSON levels, reports only that.
func Check(v *strictjson.Value, lim Limits) (*Schema, []*Error) {
	lim.mustBeValid()
	// Re-encode and re-parse, so that the checked tree is exactly what
	// JSON() returns and a hand-built or cyclic tree cannot get through.
	buf, err := encodeBounded(v, lim.SchemaBytes)
	if err != nil {
		return nil, []*Error{err}
	}
	tree, perr := strictjson.Parse(buf, schemaParseLimits(lim))
	if perr != nil {
		return nil, []*Error{fromSchemaParse(perr, lim)}
	}
	c := &checker{lim: lim}
	root := c.schema(tree, 1)
	if len(c.errs) > 0 {
		slices.SortStableFunc(c.errs, func(a, b posError) int { return cmp.Compare(a.at, b.at) })
		errs := make([]*Error, len(c.errs))
		for i, e := range c.errs {
			errs[i] = e.err
		}
		return nil, errs
	}
	return &Schema{root: root, json: buf}, nil
}

// Parse parses data as strict JSON of at most lim.SchemaBytes bytes and
// checks it (see Check).
func Parse(data []byte, lim Limits) (*Schema, []*Error) {
	lim.mustBeValid()
	v, err := strictjson.Parse(data, schemaParseLimits(lim))
	if err != nil {
		return nil, []*Error{fromSchemaParse(err, lim)}
	}
	return Check(v, lim)
}

// schemaParseLimits allows the JSON nesting of a schema of depth
// lim.Depth (a subschema under "properties" is two JSON levels below its
// parent, its enum and required arrays one) plus one subschema more, so
// that Check can name the subschema that is too deep.
func schemaParseLimits(lim Limits) strictjson.Limits {
	return strictjson.Limits{MaxBytes: lim.SchemaBytes, MaxDepth: 2*lim.Depth + 2, MaxMembers: lim.Members}
}

func fromSchemaParse(err error, lim Limits) *Error {
	var pe *strictjson.Error
	if !errors.As(err, &pe) {
		return errorf(CodeSchemaMalformed, "", "the schema is not valid JSON: %s", cut(err.Error()))
	}
	switch pe.Code {
	case strictjson.CodeTooLarge:
		return errorf(CodeSchemaTooLarge, "", "the schema is larger than %d bytes; shrink it", lim.SchemaBytes)
	case strictjson.CodeTooDeep:
		return errorf(CodeSchemaTooDeep, pe.Pointer, "the schema nests deeper than %d subschemas allow; flatten the result", lim.Depth)
	case strictjson.CodeTooManyMembers:
		return errorf(CodeSchemaTooManyMembers, pe.Pointer, "the schema has more than %d members and elements; simplify it", lim.Members)
	}
	return errorf(CodeSchemaMalformed, pe.Pointer, "the schema is not valid strict JSON (%s: %s); fix the document", pe.Code, pe.Message)
}

// encodeBounded returns the compact encoding of v, failing as soon as it
// grows past max bytes, so a huge or cyclic tree costs at most max bytes.
func encodeBounded(v *strictjson.Value, max int) ([]byte, *Error) {
	e := &encoder{max: max}
	if !e.value(v) {
		return nil, e.err
	}
	return e.buf, nil
}

type encoder struct {
	buf  []byte
	max  int
	path []string
	err  *Error
}

func (e *encoder) fail(code Code, format string, args ...any) bool {
	path := ""
	if code != CodeSchemaTooLarge {
		path = pointer(e.path)
	}
	e.err = errorf(code, path, format, args...)
	return false
}

func (e *encoder) fits() bool {
	if len(e.buf) > e.max {
		return e.fail(CodeSchemaTooLarge, "the schema is larger than %d bytes; shrink it", e.max)
	}
	return true
}

func (e *encoder) value(v *strictjson.Value) bool {
	if v == nil {
		return e.fail(CodeSchemaMalformed, "the schema tree has a missing value; parse the schema with strictjson")
	}
	switch v.Kind {
	case strictjson.Null, strictjson.Bool, strictjson.String:
		e.buf = v.AppendCompact(e.buf)
	case strictjson.Number:
		if _, ok := parseDecimal(v.Text); !ok {
			return e.fail(CodeSchemaMalformed, "%s is not a JSON number; parse the schema with strictjson", quote(v.Text))
		}
		e.buf = append(e.buf, v.Text...)
	case strictjson.Array:
		e.buf = append(e.buf, '[')
		for i, it := range v.Items {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.path = append(e.path, strconv.Itoa(i))
			if !e.fits() || !e.value(it) {
				return false
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.buf = append(e.buf, ']')
	case strictjson.Object:
		e.buf = append(e.buf, '{')
		for i, m := range v.Members {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = strictjson.AppendString(e.buf, m.Name)
			e.buf = append(e.buf, ':')
			e.path = append(e.path, m.Name)
			if !e.fits() || !e.value(m.Value) {
				return false
			}
			e.path = e.path[:len(e.path)-1]
		}
		e.buf = append(e.buf, '}')
	default:
		return e.fail(CodeSchemaMalformed, "the schema tree has a value of unknown kind %d; parse the schema with strictjson", v.Kind)
	}
	return e.fits()
}

// checker walks a schema document and collects every problem.
type checker struct {
	lim  Limits
	path []string // reference tokens of the subschema being checked
	errs []posError
}

// posError is an Error with the byte offset that orders it.
type posError struct {
	at  int
	err *Error
}

// ptr returns the pointer of the current subschema extended by tokens.
func (c *checker) ptr(tokens ...string) string {
	return pointer(append(slices.Clip(c.path), tokens...))
}

// pointer builds a JSON pointer from reference tokens in linear time.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func (c *checker) add(at int, code Code, path, format string, args ...any) {
	c.errs = append(c.errs, posError{at, errorf(code, path, format, args...)})
}

func (c *checker) push(tokens ...string) { c.path = append(c.path, tokens...) }
func (c *checker) pop(n int)             { c.path = c.path[:len(c.path)-n] }

// schema checks the subschema v at depth (the root is 1) and returns it
// compiled, or nil if it or anything in it has a problem.
func (c *checker) schema(v *strictjson.Value, depth int) *node {
	if depth > c.lim.Depth {
		c.add(v.Start, CodeSchemaTooDeep, c.ptr(),
			"subschemas nest deeper than %d levels; flatten the result", c.lim.Depth)
		return nil
	}
	if v.Kind != strictjson.Object {
		c.add(v.Start, CodeSchemaNotObject, c.ptr(),
			"a schema must be a JSON object with a \"type\", not %s", kindPhrase(v))
		return nil
	}
	before := len(c.errs)
	n := &node{minLength: -1, maxLength: -1, steps: 1}
	n.typ = c.typeOf(v)
	if n.typ != 0 {
		c.mandatory(v, n.typ)
	}

	var required, enum *strictjson.Value
	counters := map[string]*strictjson.Value{} // the valid ones
	for _, m := range v.Members {
		kw, val := m.Name, m.Value
		types, known := applicable[kw]
		switch {
		case forbidden[kw]:
			c.add(val.Start, CodeSchemaForbiddenKeyword, c.ptr(kw),
				"%s is not allowed in a Rukh result schema (no references, patterns, formats, defaults, composition or conditionals); remove it", quote(kw))
			continue
		case !known:
			c.add(val.Start, CodeSchemaUnknownKeyword, c.ptr(kw),
				"%s is not a keyword of the Rukh result schema subset; remove it or fix its spelling", quote(kw))
			continue
		case kw == "type":
			continue
		case kw == "title" || kw == "description":
			if val.Kind != strictjson.String {
				c.add(val.Start, CodeSchemaInvalidText, c.ptr(kw), "%s must be a string, not %s", kw, kindPhrase(val))
			}
			continue
		case n.typ == 0:
			// Without a valid type nothing else can be judged.
			continue
		case !slices.Contains(types, n.typ):
			c.add(val.Start, CodeSchemaNotApplicable, c.ptr(kw),
				"%s does not apply to type %s; remove it", kw, n.typ)
			continue
		}
		if constraining[kw] {
			n.steps++
		}
		switch kw {
		case "properties":
			n.props = c.properties(val, depth)
		case "required":
			required = val
		case "additionalProperties":
			if val.Kind != strictjson.Bool || val.Bool {
				c.add(val.Start, CodeSchemaAdditionalProperties, c.ptr(kw),
					"additionalProperties must be false, not %s; declare every property", kindPhrase(val))
			}
		case "items":
			c.push("items")
			n.items = c.schema(val, depth+1)
			c.pop(1)
		case "minItems", "maxItems", "minLength", "maxLength":
			if c.counter(val, kw) {
				counters[kw] = val
			}
		case "minimum":
			if d, ok := c.bound(val, kw, n.typ); ok {
				n.minimum, n.minimumLit = &d, val.Text
			}
		case "maximum":
			if d, ok := c.bound(val, kw, n.typ); ok {
				n.maximum, n.maximumLit = &d, val.Text
			}
		case "enum":
			enum = val
		}
	}
	if n.typ == 0 {
		return nil
	}
	if required != nil {
		n.required = c.required(required, n.props)
	}
	n.minItems = counterOf(counters["minItems"], 0)
	n.maxItems = counterOf(counters["maxItems"], 0)
	n.minLength = counterOf(counters["minLength"], -1)
	n.maxLength = counterOf(counters["maxLength"], -1)
	c.order(counters["minItems"], counters["maxItems"], "minItems", "maxItems")
	c.order(counters["minLength"], counters["maxLength"], "minLength", "maxLength")
	if n.minimum != nil && n.maximum != nil && n.minimum.cmp(*n.maximum) > 0 {
		val := v.Get("maximum")
		c.add(val.Start, CodeSchemaBoundsOrder, c.ptr("maximum"),
			"maximum %s is less than minimum %s; swap or fix them", cut(n.maximumLit), cut(n.minimumLit))
		n.minimum, n.maximum = nil, nil // judged; do not judge enum members against them
	}
	if n.minLength >= 0 && n.maxLength >= 0 && n.minLength > n.maxLength {
		n.minLength, n.maxLength = -1, -1
	}
	if enum != nil {
		n.enum = c.enum(enum, n)
	}
	if len(c.errs) > before {
		return nil
	}
	// Children are satisfiable, or they would have failed: report only
	// where the required members first add up to too many.
	most := c.lim.Members + 1 // saturate
	for _, p := range n.props {
		if p.required {
			n.minCount = min(n.minCount+1+p.node.minCount, most)
		}
	}
	if n.typ == tArray {
		n.minCount = satMul(n.minItems, 1+n.items.minCount, most)
	}
	if n.minCount > c.lim.Members {
		c.add(v.Start, CodeSchemaUnsatisfiable, c.ptr(),
			"every valid value here needs more than %d members and elements (through required properties and minItems), more than a result may hold; lower minItems or make properties optional",
			c.lim.Members)
		return nil
	}
	return n
}

// typeOf checks "type" and returns it, or 0 after reporting a problem.
func (c *checker) typeOf(v *strictjson.Value) jsonType {
	tv := v.Get("type")
	switch {
	case tv == nil:
		c.add(v.Start, CodeSchemaMissingType, c.ptr(),
			"the schema has no \"type\"; add one of object, array, string, boolean, integer, number, null")
		return 0
	case tv.Kind == strictjson.Array:
		c.add(tv.Start, CodeSchemaInvalidType, c.ptr("type"),
			"type must be one type name, not an array; choose one of object, array, string, boolean, integer, number, null")
		return 0
	case tv.Kind != strictjson.String:
		c.add(tv.Start, CodeSchemaInvalidType, c.ptr("type"),
			"type must be a string, not %s; use one of object, array, string, boolean, integer, number, null", kindPhrase(tv))
		return 0
	}
	t, ok := typeNames[tv.Text]
	if !ok {
		c.add(tv.Start, CodeSchemaInvalidType, c.ptr("type"),
			"type %s is not one of object, array, string, boolean, integer, number, null", quote(tv.Text))
		return 0
	}
	return t
}

// mandatory reports the keywords a type needs but v lacks.
func (c *checker) mandatory(v *strictjson.Value, t jsonType) {
	switch t {
	case tObject:
		if v.Get("properties") == nil {
			c.add(v.Start, CodeSchemaMissingProperties, c.ptr(),
				"an object schema needs \"properties\" (it may be {}); declare every property")
		}
		if v.Get("additionalProperties") == nil {
			c.add(v.Start, CodeSchemaAdditionalProperties, c.ptr(),
				"an object schema needs \"additionalProperties\": false")
		}
	case tArray:
		if v.Get("items") == nil {
			c.add(v.Start, CodeSchemaMissingItems, c.ptr(),
				"an array schema needs \"items\", one schema for every element")
		}
		if v.Get("maxItems") == nil {
			c.add(v.Start, CodeSchemaMissingMaxItems, c.ptr(),
				"an array schema needs a finite \"maxItems\"")
		}
	}
}

func (c *checker) properties(v *strictjson.Value, depth int) map[string]prop {
	if v.Kind != strictjson.Object {
		c.add(v.Start, CodeSchemaInvalidProperties, c.ptr("properties"),
			"properties must be an object of property schemas, not %s", kindPhrase(v))
		return nil
	}
	props := make(map[string]prop, len(v.Members))
	for _, m := range v.Members {
		c.push("properties", m.Name)
		props[m.Name] = prop{node: c.schema(m.Value, depth+1)}
		c.pop(2)
	}
	return props
}

// required checks "required" and marks the required properties. When
// "properties" is missing or invalid (props is nil) that was reported
// already, and names are not checked against it.
func (c *checker) required(v *strictjson.Value, props map[string]prop) []string {
	if v.Kind != strictjson.Array {
		c.add(v.Start, CodeSchemaRequiredInvalid, c.ptr("required"),
			"required must be an array of property names, not %s", kindPhrase(v))
		return nil
	}
	names := make([]string, 0, len(v.Items))
	seen := make(map[string]int, len(v.Items))
	for i, it := range v.Items {
		at := func() string { return c.ptr("required", strconv.Itoa(i)) }
		if it.Kind != strictjson.String {
			c.add(it.Start, CodeSchemaRequiredInvalid, at(), "a required entry must be a property name, not %s", kindPhrase(it))
			continue
		}
		if j, dup := seen[it.Text]; dup {
			c.add(it.Start, CodeSchemaRequiredInvalid, at(), "%s is already required by entry %d; remove the repetition", quote(it.Text), j)
			continue
		}
		seen[it.Text] = i
		if props != nil {
			p, declared := props[it.Text]
			if !declared {
				c.add(it.Start, CodeSchemaRequiredInvalid, at(),
					"%s is required but not declared in properties; declare it or remove it from required", quote(it.Text))
				continue
			}
			p.required = true
			props[it.Text] = p
		}
		names = append(names, it.Text)
	}
	return names
}

// counter checks a length or cardinality counter: a plain non-negative
// integer literal (digits only; no sign, fraction or exponent, so 2.0 and
// 2e0 are rejected) of at most maxCounter. It reports anything else and
// returns false.
func (c *checker) counter(v *strictjson.Value, kw string) bool {
	if v.Kind == strictjson.Number && len(v.Text) <= 16 {
		plain := true
		for i := 0; i < len(v.Text); i++ {
			plain = plain && isDigit(v.Text[i])
		}
		if n, err := strconv.ParseInt(v.Text, 10, 64); plain && err == nil && n <= maxCounter {
			return true
		}
	}
	c.add(v.Start, CodeSchemaInvalidBound, c.ptr(kw),
		"%s must be a non-negative integer written without sign, fraction or exponent (such as 10), at most %d, not %s",
		kw, int64(maxCounter), valuePhrase(v))
	return false
}

// counterOf returns the value of a counter already checked, or def.
func counterOf(v *strictjson.Value, def int) int {
	if v == nil {
		return def
	}
	n, _ := strconv.Atoi(v.Text)
	return n
}

// order reports a lower counter above its upper one, at the upper one.
func (c *checker) order(lo, hi *strictjson.Value, loKw, hiKw string) {
	if lo == nil || hi == nil {
		return
	}
	l, h := counterOf(lo, 0), counterOf(hi, 0)
	if l > h {
		c.add(hi.Start, CodeSchemaBoundsOrder, c.ptr(hiKw), "%s %d is less than %s %d; swap or fix them", hiKw, h, loKw, l)
	}
}

// bound checks minimum or maximum: a number that fits binary64, integral
// for an integer schema (1e2 and 2.0 are integral).
func (c *checker) bound(v *strictjson.Value, kw string, t jsonType) (decimal, bool) {
	if v.Kind != strictjson.Number {
		c.add(v.Start, CodeSchemaInvalidBound, c.ptr(kw), "%s must be a number, not %s", kw, kindPhrase(v))
		return decimal{}, false
	}
	d, _ := parseDecimal(v.Text)
	switch {
	case !d.fitsBinary64():
		c.add(v.Start, CodeSchemaInvalidBound, c.ptr(kw),
			"%s %s does not fit a binary64 number (it overflows or underflows); use a smaller magnitude", kw, cut(v.Text))
		return decimal{}, false
	case t == tInteger && !d.isInteger():
		c.add(v.Start, CodeSchemaInvalidBound, c.ptr(kw),
			"%s %s of an integer schema must be a whole number", kw, cut(v.Text))
		return decimal{}, false
	}
	return d, true
}

// enum checks the enum array against n's type and other constraints,
// which are already checked, and returns the set of canonical keys.
func (c *checker) enum(v *strictjson.Value, n *node) map[string]bool {
	if v.Kind != strictjson.Array || len(v.Items) == 0 {
		c.add(v.Start, CodeSchemaInvalidEnum, c.ptr("enum"),
			"enum must be a non-empty array of the allowed values, not %s", valuePhrase(v))
		return nil
	}
	set := make(map[string]bool, len(v.Items))
	first := make(map[string]int, len(v.Items))
	for i, it := range v.Items {
		key, problem := n.enumKey(it)
		if problem != "" {
			c.add(it.Start, CodeSchemaInvalidEnum, c.ptr("enum", strconv.Itoa(i)), "enum member %d %s", i, problem)
			continue
		}
		if j, dup := first[key]; dup {
			c.add(it.Start, CodeSchemaInvalidEnum, c.ptr("enum", strconv.Itoa(i)), "enum member %d equals member %d; remove the repetition", i, j)
			continue
		}
		first[key] = i
		set[key] = true
	}
	return set
}

// enumKey returns the canonical key of v as an enum member of n, or a
// problem: v is not of n's type or breaks one of its constraints.
func (n *node) enumKey(v *strictjson.Value) (key, problem string) {
	wrongType := func() string {
		return fmt.Sprintf("is %s, but the schema's type is %s; use %s", kindPhrase(v), n.typ, typePhrase(n.typ))
	}
	switch n.typ {
	case tBoolean:
		if v.Kind != strictjson.Bool {
			return "", wrongType()
		}
		return strconv.FormatBool(v.Bool), ""
	case tString:
		if v.Kind != strictjson.String {
			return "", wrongType()
		}
		if l := utf8.RuneCountInString(v.Text); l < n.minLength || (n.maxLength >= 0 && l > n.maxLength) {
			return "", fmt.Sprintf("has %d code points, outside minLength/maxLength; fix it or the bounds", l)
		}
		return v.Text, ""
	case tInteger, tNumber:
		if v.Kind != strictjson.Number {
			return "", wrongType()
		}
		d, _ := parseDecimal(v.Text)
		switch {
		case !d.fitsBinary64():
			return "", fmt.Sprintf("%s does not fit a binary64 number; use a smaller magnitude", cut(v.Text))
		case n.typ == tInteger && !d.isInteger():
			return "", fmt.Sprintf("%s is not a whole number, but the schema's type is integer", cut(v.Text))
		case n.minimum != nil && d.cmp(*n.minimum) < 0:
			return "", fmt.Sprintf("%s is less than minimum %s; fix it or the bound", cut(v.Text), cut(n.minimumLit))
		case n.maximum != nil && d.cmp(*n.maximum) > 0:
			return "", fmt.Sprintf("%s is greater than maximum %s; fix it or the bound", cut(v.Text), cut(n.maximumLit))
		}
		return d.key(), ""
	}
	return "", "is not allowed" // unreachable: enum applies to these types only
}

// kindPhrase names the JSON type of v with an article, for messages.
func kindPhrase(v *strictjson.Value) string {
	switch v.Kind {
	case strictjson.Null:
		return "null"
	case strictjson.Bool:
		return "a boolean"
	case strictjson.Number:
		return "a number"
	case strictjson.String:
		return "a string"
	case strictjson.Array:
		return "an array"
	case strictjson.Object:
		return "an object"
	}
	return "an invalid value"
}

// valuePhrase shows a scalar's text or names a container's type.
func valuePhrase(v *strictjson.Value) string {
	switch v.Kind {
	case strictjson.Number:
		return cut(v.Text)
	case strictjson.String:
		return quote(v.Text)
	case strictjson.Array:
		if len(v.Items) == 0 {
			return "an empty array"
		}
	}
	return kindPhrase(v)
}

// cut shortens text (a number literal, a library message) for a message.
func cut(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// satMul returns a×b for non-negative a and b, or limit if that is less.
func satMul(a, b, limit int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > limit/b {
		return limit
	}
	return min(a*b, limit)
}
