package resultschema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// problem is an expected error: its code and path.
type problem struct {
	code Code
	path string
}

func (p problem) String() string { return fmt.Sprintf("%s %q", p.code, p.path) }

func problems(errs []*Error) []problem {
	out := make([]problem, len(errs))
	for i, e := range errs {
		out[i] = problem{e.Code, e.Path}
	}
	return out
}

// obj is an object schema with the given properties and extra members.
func obj(props, extra string) string {
	s := `{"type":"object","properties":{` + props + `},"additionalProperties":false`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// arrayChain nests n array schemas through "items" around inner.
func arrayChain(n int, inner string) string {
	return strings.Repeat(`{"type":"array","maxItems":1,"items":`, n) + inner + strings.Repeat("}", n)
}

// objectChain nests n object schemas through a property "p" around inner.
func objectChain(n int, inner string) string {
	return strings.Repeat(`{"type":"object","additionalProperties":false,"properties":{"p":`, n) + inner + strings.Repeat("}}", n)
}

// pointerOf repeats tokens n times as a JSON pointer.
func pointerOf(n int, tokens ...string) string {
	return strings.Repeat("/"+strings.Join(tokens, "/"), n)
}

// invalidSchemas is the table of rejected schemas; every expected problem
// is listed, in the order Check returns them.
var invalidSchemas = []struct {
	name   string
	schema string
	want   []problem
}{
	{"boolean schema", `true`, []problem{{CodeSchemaNotObject, ""}}},
	{"array schema", `[]`, []problem{{CodeSchemaNotObject, ""}}},
	{"empty object", `{}`, []problem{{CodeSchemaMissingType, ""}}},
	{"type array", `{"type":["string","null"]}`, []problem{{CodeSchemaInvalidType, "/type"}}},
	{"type unknown", `{"type":"str"}`, []problem{{CodeSchemaInvalidType, "/type"}}},
	{"type number", `{"type":1}`, []problem{{CodeSchemaInvalidType, "/type"}}},
	{"type invalid hides constraints", `{"type":"foo","minLength":"x","title":2}`,
		[]problem{{CodeSchemaInvalidType, "/type"}, {CodeSchemaInvalidText, "/title"}}},
	{"$ref", `{"type":"string","$ref":"#"}`, []problem{{CodeSchemaForbiddenKeyword, "/$ref"}}},
	{"$defs", `{"$defs":{},"type":"string"}`, []problem{{CodeSchemaForbiddenKeyword, "/$defs"}}},
	{"pattern", `{"type":"string","pattern":"^a"}`, []problem{{CodeSchemaForbiddenKeyword, "/pattern"}}},
	{"format", `{"type":"string","format":"email"}`, []problem{{CodeSchemaForbiddenKeyword, "/format"}}},
	{"default", `{"type":"string","default":"x"}`, []problem{{CodeSchemaForbiddenKeyword, "/default"}}},
	{"const", `{"type":"string","const":"x"}`, []problem{{CodeSchemaForbiddenKeyword, "/const"}}},
	{"allOf", `{"type":"string","allOf":[]}`, []problem{{CodeSchemaForbiddenKeyword, "/allOf"}}},
	{"multipleOf", `{"type":"integer","multipleOf":2}`, []problem{{CodeSchemaForbiddenKeyword, "/multipleOf"}}},
	{"exclusiveMinimum", `{"type":"integer","exclusiveMinimum":0}`, []problem{{CodeSchemaForbiddenKeyword, "/exclusiveMinimum"}}},
	{"uniqueItems", `{"type":"array","items":{"type":"string"},"maxItems":2,"uniqueItems":true}`,
		[]problem{{CodeSchemaForbiddenKeyword, "/uniqueItems"}}},
	{"unknown keyword spelling", `{"type":"string","minlength":1}`, []problem{{CodeSchemaUnknownKeyword, "/minlength"}}},
	{"unknown extension keyword", `{"type":"string","x-rukh":1}`, []problem{{CodeSchemaUnknownKeyword, "/x-rukh"}}},
	{"object without properties", `{"type":"object","additionalProperties":false}`,
		[]problem{{CodeSchemaMissingProperties, ""}}},
	{"object without additionalProperties", `{"type":"object","properties":{}}`,
		[]problem{{CodeSchemaAdditionalProperties, ""}}},
	{"additionalProperties true", `{"type":"object","properties":{},"additionalProperties":true}`,
		[]problem{{CodeSchemaAdditionalProperties, "/additionalProperties"}}},
	{"additionalProperties schema", `{"type":"object","properties":{},"additionalProperties":{"type":"string"}}`,
		[]problem{{CodeSchemaAdditionalProperties, "/additionalProperties"}}},
	{"properties not object", `{"type":"object","properties":[],"additionalProperties":false}`,
		[]problem{{CodeSchemaInvalidProperties, "/properties"}}},
	{"required undeclared", obj(`"a":{"type":"string"}`, `"required":["b"]`),
		[]problem{{CodeSchemaRequiredInvalid, "/required/0"}}},
	{"required repeated", obj(`"a":{"type":"string"}`, `"required":["a","a"]`),
		[]problem{{CodeSchemaRequiredInvalid, "/required/1"}}},
	{"required not string", obj(`"a":{"type":"string"}`, `"required":[1]`),
		[]problem{{CodeSchemaRequiredInvalid, "/required/0"}}},
	{"required not array", obj(`"a":{"type":"string"}`, `"required":"a"`),
		[]problem{{CodeSchemaRequiredInvalid, "/required"}}},
	{"required before properties", `{"type":"object","required":["a","b"],"properties":{"a":{"type":"null"}},"additionalProperties":false}`,
		[]problem{{CodeSchemaRequiredInvalid, "/required/1"}}},
	{"array without items", `{"type":"array","maxItems":1}`, []problem{{CodeSchemaMissingItems, ""}}},
	{"array without maxItems", `{"type":"array","items":{"type":"string"}}`, []problem{{CodeSchemaMissingMaxItems, ""}}},
	{"items array", `{"type":"array","items":[{"type":"string"}],"maxItems":1}`, []problem{{CodeSchemaNotObject, "/items"}}},
	{"items boolean", `{"type":"array","items":true,"maxItems":1}`, []problem{{CodeSchemaNotObject, "/items"}}},
	{"property boolean", obj(`"a":false`, ""), []problem{{CodeSchemaNotObject, "/properties/a"}}},
	{"minLength on integer", `{"type":"integer","minLength":1}`, []problem{{CodeSchemaNotApplicable, "/minLength"}}},
	{"minimum on string", `{"type":"string","minimum":1}`, []problem{{CodeSchemaNotApplicable, "/minimum"}}},
	{"properties on string", `{"type":"string","properties":{}}`, []problem{{CodeSchemaNotApplicable, "/properties"}}},
	{"items on object", obj("", `"items":{"type":"string"}`), []problem{{CodeSchemaNotApplicable, "/items"}}},
	{"enum on object", obj("", `"enum":[{}]`), []problem{{CodeSchemaNotApplicable, "/enum"}}},
	{"enum on null", `{"type":"null","enum":[null]}`, []problem{{CodeSchemaNotApplicable, "/enum"}}},
	{"enum on array", `{"type":"array","items":{"type":"null"},"maxItems":1,"enum":[[]]}`, []problem{{CodeSchemaNotApplicable, "/enum"}}},
	{"negative counter", `{"type":"string","maxLength":-1}`, []problem{{CodeSchemaInvalidBound, "/maxLength"}}},
	{"counter with fraction", `{"type":"string","maxLength":2.0}`, []problem{{CodeSchemaInvalidBound, "/maxLength"}}},
	{"counter with exponent", `{"type":"string","minLength":1e1}`, []problem{{CodeSchemaInvalidBound, "/minLength"}}},
	{"counter string", `{"type":"array","items":{"type":"null"},"maxItems":"3"}`, []problem{{CodeSchemaInvalidBound, "/maxItems"}}},
	{"counter minus zero", `{"type":"array","items":{"type":"null"},"maxItems":-0}`, []problem{{CodeSchemaInvalidBound, "/maxItems"}}},
	{"counter above 2^53-1", `{"type":"string","maxLength":9007199254740992}`, []problem{{CodeSchemaInvalidBound, "/maxLength"}}},
	{"counter huge", `{"type":"string","maxLength":1` + strings.Repeat("0", 400) + `}`, []problem{{CodeSchemaInvalidBound, "/maxLength"}}},
	{"integer bound with fraction", `{"type":"integer","minimum":1.5}`, []problem{{CodeSchemaInvalidBound, "/minimum"}}},
	{"bound overflows binary64", `{"type":"number","maximum":1e400}`, []problem{{CodeSchemaInvalidBound, "/maximum"}}},
	{"bound underflows binary64", `{"type":"number","maximum":1e-400}`, []problem{{CodeSchemaInvalidBound, "/maximum"}}},
	{"bound giant exponent", `{"type":"integer","minimum":1e999999999}`, []problem{{CodeSchemaInvalidBound, "/minimum"}}},
	{"bound string", `{"type":"number","minimum":"0"}`, []problem{{CodeSchemaInvalidBound, "/minimum"}}},
	{"length bounds order", `{"type":"string","minLength":3,"maxLength":2}`, []problem{{CodeSchemaBoundsOrder, "/maxLength"}}},
	{"item bounds order", `{"type":"array","items":{"type":"null"},"maxItems":2,"minItems":3}`, []problem{{CodeSchemaBoundsOrder, "/maxItems"}}},
	{"number bounds order", `{"type":"number","minimum":1.5,"maximum":1.25}`, []problem{{CodeSchemaBoundsOrder, "/maximum"}}},
	{"number bounds order exact", `{"type":"number","maximum":0.30000000000000001,"minimum":0.30000000000000002}`,
		[]problem{{CodeSchemaBoundsOrder, "/maximum"}}},
	{"enum empty", `{"type":"string","enum":[]}`, []problem{{CodeSchemaInvalidEnum, "/enum"}}},
	{"enum not array", `{"type":"string","enum":"a"}`, []problem{{CodeSchemaInvalidEnum, "/enum"}}},
	{"enum wrong type", `{"type":"string","enum":["a",1,null]}`,
		[]problem{{CodeSchemaInvalidEnum, "/enum/1"}, {CodeSchemaInvalidEnum, "/enum/2"}}},
	{"enum repeated string", `{"type":"string","enum":["a","b","a"]}`, []problem{{CodeSchemaInvalidEnum, "/enum/2"}}},
	{"enum repeated number 1 and 1.0", `{"type":"number","enum":[1,1.0]}`, []problem{{CodeSchemaInvalidEnum, "/enum/1"}}},
	{"enum repeated number 100 and 1e2", `{"type":"integer","enum":[100,0.5,1e2]}`,
		[]problem{{CodeSchemaInvalidEnum, "/enum/1"}, {CodeSchemaInvalidEnum, "/enum/2"}}},
	{"enum repeated zero", `{"type":"number","enum":[0,-0.0]}`, []problem{{CodeSchemaInvalidEnum, "/enum/1"}}},
	{"enum repeated boolean", `{"type":"boolean","enum":[true,true]}`, []problem{{CodeSchemaInvalidEnum, "/enum/1"}}},
	{"enum below minimum", `{"type":"integer","minimum":0,"enum":[0,-1]}`, []problem{{CodeSchemaInvalidEnum, "/enum/1"}}},
	{"enum above maximum", `{"enum":[5],"type":"number","maximum":4.5}`, []problem{{CodeSchemaInvalidEnum, "/enum/0"}}},
	{"enum too long in code points", `{"type":"string","maxLength":2,"enum":["éé","ééé"]}`, []problem{{CodeSchemaInvalidEnum, "/enum/1"}}},
	{"enum too short", `{"type":"string","minLength":1,"enum":[""]}`, []problem{{CodeSchemaInvalidEnum, "/enum/0"}}},
	{"enum giant exponent", `{"type":"number","enum":[1e999999999,-1e-999999999]}`,
		[]problem{{CodeSchemaInvalidEnum, "/enum/0"}, {CodeSchemaInvalidEnum, "/enum/1"}}},
	{"title not string", `{"type":"string","title":1}`, []problem{{CodeSchemaInvalidText, "/title"}}},
	{"description null", `{"description":null,"type":"string"}`, []problem{{CodeSchemaInvalidText, "/description"}}},
	{"nested invalid type",
		obj(`"a":{"type":"array","maxItems":2,"items":{"type":"strin"}}`, ""),
		[]problem{{CodeSchemaInvalidType, "/properties/a/items/type"}}},
	{"escaped property name", obj(`"a/b~c":{}`, ""), []problem{{CodeSchemaMissingType, "/properties/a~1b~0c"}}},
	{"keyword-like property names are free", obj(`"$ref":{"type":"string"},"pattern":{"type":"x"}`, ""),
		[]problem{{CodeSchemaInvalidType, "/properties/pattern/type"}}},
	{"unsatisfiable minItems", `{"type":"array","items":{"type":"null"},"minItems":2049,"maxItems":3000}`,
		[]problem{{CodeSchemaUnsatisfiable, ""}}},
	{"unsatisfiable nested", obj(`"a":{"type":"array","minItems":50,"maxItems":50,"items":{"type":"array","minItems":50,"maxItems":60,"items":{"type":"null"}}}`, `"required":["a"]`),
		[]problem{{CodeSchemaUnsatisfiable, "/properties/a"}}},
	{"all problems in document order",
		`{"foo":1,"type":"object","$id":"x","properties":{"b":{"type":"string","minimum":1},"a":{}},"required":["a","zz"]}`,
		[]problem{
			{CodeSchemaAdditionalProperties, ""},
			{CodeSchemaUnknownKeyword, "/foo"},
			{CodeSchemaForbiddenKeyword, "/$id"},
			{CodeSchemaNotApplicable, "/properties/b/minimum"},
			{CodeSchemaMissingType, "/properties/a"},
			{CodeSchemaRequiredInvalid, "/required/1"},
		}},
	{"deferred checks in document order",
		`{"required":["zz"],"enum":[1],"type":"object","properties":{"a":{"type":"string","title":3}},"additionalProperties":false}`,
		[]problem{
			{CodeSchemaRequiredInvalid, "/required/0"},
			{CodeSchemaNotApplicable, "/enum"},
			{CodeSchemaInvalidText, "/properties/a/title"},
		}},
	{"enum before its constraints", `{"enum":[1,"a"],"type":"string","title":3,"maxLength":0}`,
		[]problem{
			{CodeSchemaInvalidEnum, "/enum/0"},
			{CodeSchemaInvalidEnum, "/enum/1"},
			{CodeSchemaInvalidText, "/title"},
		}},
	{"too deep through items", arrayChain(16, `{"type":"string"}`), []problem{{CodeSchemaTooDeep, pointerOf(16, "items")}}},
	{"too deep through properties", objectChain(16, `{"type":"string"}`),
		[]problem{{CodeSchemaTooDeep, pointerOf(16, "properties", "p")}}},
	{"far too deep", objectChain(40, `{"type":"string"}`), []problem{{CodeSchemaTooDeep, pointerOf(17, "properties", "p")}}},
	{"duplicate key", `{"type":"string","type":"integer"}`, []problem{{CodeSchemaMalformed, "/type"}}},
	{"trailing data", `{"type":"string"} {}`, []problem{{CodeSchemaMalformed, ""}}},
	{"syntax", `{"type":"string",}`, []problem{{CodeSchemaMalformed, ""}}},
	{"invalid UTF-8", "{\"type\":\"string\",\"title\":\"\xff\"}", []problem{{CodeSchemaMalformed, ""}}},
	{"lone surrogate", `{"type":"string","title":"\udc00"}`, []problem{{CodeSchemaMalformed, "/title"}}},
}

func TestCheckRejects(t *testing.T) {
	if len(invalidSchemas) < 30 {
		t.Fatalf("only %d invalid schemas; the table needs at least 30", len(invalidSchemas))
	}
	lim := DefaultLimits()
	for _, tc := range invalidSchemas {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := Parse([]byte(tc.schema), lim)
			if s != nil {
				t.Fatalf("Parse accepted %s", tc.schema)
			}
			if got := problems(errs); !slices.Equal(got, tc.want) {
				t.Fatalf("Parse(%s)\n got %v\nwant %v\n%v", tc.schema, got, tc.want, errs)
			}
			for _, e := range errs {
				msg := e.Error()
				if !strings.HasPrefix(msg, string(e.Code)+" at ") || strings.ToLower(msg[:1]) != msg[:1] ||
					strings.HasSuffix(msg, ".") || strings.Contains(msg, "%!") {
					t.Errorf("badly formed message %q", msg)
				}
			}
		})
	}
}

var validSchemas = []string{
	`{"type":"string"}`,
	`{"type":"boolean"}`,
	`{"type":"integer"}`,
	`{"type":"number"}`,
	`{"type":"null"}`,
	`{"type":"object","properties":{},"additionalProperties":false}`,
	`{"type":"array","items":{"type":"string"},"maxItems":0}`,
	`{"type":"null","title":"nothing","description":"always null"}`,
	`{"type":"string","minLength":0,"maxLength":9007199254740991}`,
	`{"type":"string","minLength":2,"maxLength":2,"enum":["éé","ab","🙂🙂"]}`,
	`{"type":"string","enum":["a","A","a "]}`,
	`{"type":"boolean","enum":[false]}`,
	`{"type":"integer","minimum":-5,"maximum":1e2,"enum":[-5,0,1.0,100]}`,
	`{"type":"integer","minimum":2.0,"maximum":2}`,
	`{"type":"number","minimum":-1.5,"maximum":15e-1,"enum":[1.25,-1.5,0]}`,
	`{"type":"number","minimum":4.9e-324,"maximum":1.7976931348623157e308}`,
	`{"type":"number","enum":[0.1,0.10000000000000001]}`,
	`{"type":"array","items":{"type":"integer"},"minItems":2048,"maxItems":2048}`,
	obj(`"type":{"type":"string"},"$ref":{"type":"null"},"":{"type":"boolean"},"a/b":{"type":"number"}`, `"required":["type","$ref","","a/b"]`),
	obj(`"a":{"type":"string"}`, `"required":[]`),
	obj(`"name":{"type":"string","minLength":1},
		"items":{"type":"array","maxItems":100,"minItems":1,"items":`+obj(`"id":{"type":"integer","minimum":0},"tags":{"type":"array","maxItems":4,"items":{"type":"string","enum":["x","y"]}}`, `"required":["id"]`)+`}`,
		`"required":["name","items"],"title":"listing"`),
	arrayChain(15, `{"type":"string"}`),
	objectChain(15, `{"type":"string"}`),
	objectChain(15, obj("", "")),
}

func TestCheckAccepts(t *testing.T) {
	lim := DefaultLimits()
	for _, schema := range validSchemas {
		s, errs := Parse([]byte(schema), lim)
		if s == nil {
			t.Errorf("Parse(%s): %v", schema, errs)
			continue
		}
		if errs != nil {
			t.Errorf("Parse(%s) returned a schema and errors %v", schema, errs)
		}
		var want bytes.Buffer
		if err := compactJSON(&want, schema); err != nil {
			t.Fatal(err)
		}
		if got := s.JSON(); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("JSON() = %s, want %s", got, want.Bytes())
		}
	}
}

// compactJSON writes the compact form of a JSON text, keeping member order
// and literals.
func compactJSON(w *bytes.Buffer, s string) error {
	v, err := strictjson.Parse([]byte(s), strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 100, MaxMembers: 1 << 20})
	if err != nil {
		return err
	}
	w.Write(v.AppendCompact(nil))
	return nil
}

func TestJSONIsACopy(t *testing.T) {
	s, errs := Parse([]byte(` { "type" : "string" } `), DefaultLimits())
	if errs != nil {
		t.Fatal(errs)
	}
	b := s.JSON()
	b[0] = 'x'
	if got := string(s.JSON()); got != `{"type":"string"}` {
		t.Fatalf("JSON() = %s after the caller changed its copy", got)
	}
}

// padded returns a string schema whose compact encoding is exactly n bytes.
func padded(t *testing.T, n int) string {
	const head, tail = `{"type":"string","description":"`, `"}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("cannot pad to %d bytes", n)
	}
	return head + strings.Repeat("d", pad) + tail
}

// membersSchema returns an object schema whose document has exactly n
// members and elements (n >= 5).
func membersSchema(n int) string {
	// {"type","properties":{"a":{"type","enum":[…k elements]}},"additionalProperties"}
	// has 6 members plus k elements.
	k := n - 6
	elems := make([]string, k)
	for i := range elems {
		elems[i] = fmt.Sprint(i)
	}
	return obj(`"a":{"type":"integer","enum":[`+strings.Join(elems, ",")+`]}`, "")
}

func TestCheckLimits(t *testing.T) {
	lim := DefaultLimits()
	tests := []struct {
		name   string
		schema string
		lim    Limits
		want   []problem // nil: accepted
	}{
		{"size at limit", padded(t, lim.SchemaBytes), lim, nil},
		{"size one over", padded(t, lim.SchemaBytes+1), lim, []problem{{CodeSchemaTooLarge, ""}}},
		{"members at limit", membersSchema(lim.Members), lim, nil},
		{"members one over", membersSchema(lim.Members + 1), lim, []problem{{CodeSchemaTooManyMembers, "/additionalProperties"}}},
		{"depth at limit (items)", arrayChain(15, `{"type":"null"}`), lim, nil},
		{"depth one over (items)", arrayChain(16, `{"type":"null"}`), lim, []problem{{CodeSchemaTooDeep, pointerOf(16, "items")}}},
		{"depth at limit (properties)", objectChain(15, obj("", "")), lim, nil},
		{"depth one over (properties)", objectChain(16, obj("", "")), lim, []problem{{CodeSchemaTooDeep, pointerOf(16, "properties", "p")}}},
		{"smaller depth", arrayChain(2, `{"type":"null"}`), Limits{SchemaBytes: 100, ResultBytes: 1, Depth: 2, Members: 100, Steps: 1},
			[]problem{{CodeSchemaTooDeep, "/items/items"}}},
		{"satisfiable at the member limit", `{"type":"array","items":{"type":"null"},"minItems":2048,"maxItems":2048}`, lim, nil},
		{"smaller member limit makes it unsatisfiable", `{"type":"array","items":{"type":"null"},"minItems":6,"maxItems":6}`,
			Limits{SchemaBytes: 100, ResultBytes: 1, Depth: 2, Members: 5, Steps: 1}, []problem{{CodeSchemaUnsatisfiable, ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := Parse([]byte(tc.schema), tc.lim)
			if got := problems(errs); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v\n%v", got, tc.want, errs)
			}
			if (s != nil) != (tc.want == nil) {
				t.Fatalf("schema %v with problems %v", s, errs)
			}
		})
	}
}

// TestCheckMeasuresCompactSize checks that Check limits the compact
// encoding, whatever the layout of the text the tree came from.
func TestCheckMeasuresCompactSize(t *testing.T) {
	lim := DefaultLimits()
	schema := padded(t, lim.SchemaBytes)
	spaced := strings.ReplaceAll(schema, `":"`, `" : "`)
	v, err := strictjson.Parse([]byte(spaced), strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 10, MaxMembers: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := Check(v, lim); errs != nil {
		t.Fatalf("Check of a %d-byte compact schema: %v", lim.SchemaBytes, errs)
	}
	if _, errs := Parse([]byte(spaced), lim); !slices.Equal(problems(errs), []problem{{CodeSchemaTooLarge, ""}}) {
		t.Fatalf("Parse of %d bytes: %v", len(spaced), errs)
	}
}

// TestCheckHandBuiltTrees feeds Check trees that no parse produces.
func TestCheckHandBuiltTrees(t *testing.T) {
	str := func(s string) *strictjson.Value { return &strictjson.Value{Kind: strictjson.String, Text: s} }
	object := func(ms ...strictjson.Member) *strictjson.Value {
		return &strictjson.Value{Kind: strictjson.Object, Members: ms}
	}
	cyclic := &strictjson.Value{Kind: strictjson.Array}
	cyclic.Items = []*strictjson.Value{cyclic}
	tests := []struct {
		name string
		v    *strictjson.Value
		want problem
	}{
		{"nil", nil, problem{CodeSchemaMalformed, ""}},
		{"nil member", object(strictjson.Member{Name: "type", Value: nil}), problem{CodeSchemaMalformed, "/type"}},
		{"zero kind", object(strictjson.Member{Name: "type", Value: &strictjson.Value{}}), problem{CodeSchemaMalformed, "/type"}},
		{"bad number", object(strictjson.Member{Name: "type", Value: str("string")},
			strictjson.Member{Name: "maxLength", Value: &strictjson.Value{Kind: strictjson.Number, Text: `1,"x":2`}}),
			problem{CodeSchemaMalformed, "/maxLength"}},
		{"invalid UTF-8", object(strictjson.Member{Name: "type", Value: str("string\xff")}), problem{CodeSchemaMalformed, ""}},
		{"duplicate names", object(strictjson.Member{Name: "type", Value: str("string")}, strictjson.Member{Name: "type", Value: str("string")}),
			problem{CodeSchemaMalformed, "/type"}},
		{"cyclic", cyclic, problem{CodeSchemaTooLarge, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := Check(tc.v, DefaultLimits())
			if s != nil || !slices.Equal(problems(errs), []problem{tc.want}) {
				t.Fatalf("got %v %v, want %v", s, errs, tc.want)
			}
		})
	}
}

func TestCheckCompiles(t *testing.T) {
	s, errs := Parse([]byte(validSchemas[len(validSchemas)-4]), DefaultLimits())
	if errs != nil {
		t.Fatal(errs)
	}
	compiled, err := reference(s)
	if err != nil {
		t.Fatalf("the reference implementation refuses a checked schema: %v", err)
	}
	if err := compiled.Validate(map[string]any{"name": "x"}); err == nil {
		t.Fatal("the compiled schema accepted an object without required items")
	}
}

func TestLimitsMustBePositive(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Parse with zero limits did not panic")
		}
	}()
	Parse([]byte(`{"type":"string"}`), Limits{})
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{CodeSchemaMissingType, "", "add a type"}, "schema_missing_type at the schema root: add a type"},
		{&Error{CodeResultMalformed, "", "send an object"}, "result_malformed at the result root: send an object"},
		{&Error{CodeResultInvalid, "/data/a", "value is a string"}, "result_invalid at /data/a: value is a string"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("é", 5000)
	_, errs := Parse([]byte(`{"type":"string","`+long+`":1,"enum":["`+long+`"],"maxLength":1}`), DefaultLimits())
	if len(errs) != 2 {
		t.Fatalf("got %v", errs)
	}
	for _, e := range errs {
		if len(e.Message) > 400 {
			t.Errorf("message of %d bytes: %.100s…", len(e.Message), e.Message)
		}
	}
}
