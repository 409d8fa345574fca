package values

import (
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// TestArgumentsOnly covers what only the MCP door can receive: null, JSON
// types, strict-JSON failures and the document limits.
func TestArgumentsOnly(t *testing.T) {
	huge := `{"s":"` + strings.Repeat("a", 1<<20) + `"}`
	_, list4097 := manyItems(4097, "", "1")
	cases := []struct {
		name  string
		specs []Spec
		raw   string
		code  Code
		input string
		path  string
	}{
		{"null scalar", plainSpecs, `{"i":null}`, CodeNullValue, "i", "/i"},
		{"null list", plainSpecs, `{"ls":null}`, CodeNullValue, "ls", "/ls"},
		{"null list item", plainSpecs, `{"ls":["a",null]}`, CodeNullValue, "ls", "/ls/1"},
		{"null required", exampleSpecs, `{"env":null}`, CodeNullValue, "env", "/env"},
		{"string for integer", plainSpecs, `{"i":"5"}`, CodeWrongType, "i", "/i"},
		{"string for number", plainSpecs, `{"n":"1.5"}`, CodeWrongType, "n", "/n"},
		{"number for decimal", plainSpecs, `{"d":1.5}`, CodeWrongType, "d", "/d"},
		{"string for boolean", plainSpecs, `{"b":"true"}`, CodeWrongType, "b", "/b"},
		{"number for boolean", plainSpecs, `{"b":1}`, CodeWrongType, "b", "/b"},
		{"number for string", plainSpecs, `{"s":5}`, CodeWrongType, "s", "/s"},
		{"boolean for string", plainSpecs, `{"s":true}`, CodeWrongType, "s", "/s"},
		{"array for scalar", plainSpecs, `{"s":["a"]}`, CodeWrongType, "s", "/s"},
		{"object for list", plainSpecs, `{"ls":{"a":1}}`, CodeWrongType, "ls", "/ls"},
		{"string for list", plainSpecs, `{"ls":"a"}`, CodeWrongType, "ls", "/ls"},
		{"nested array in list", plainSpecs, `{"ls":["a",["b"]]}`, CodeWrongType, "ls", "/ls/1"},
		{"object in list", plainSpecs, `{"li":[{}]}`, CodeWrongType, "li", "/li/0"},
		{"wrong item type", plainSpecs, `{"li":[1,"2"]}`, CodeWrongType, "li", "/li/1"},
		{"root array", plainSpecs, `[1]`, CodeWrongType, "", ""},
		{"root null", plainSpecs, `null`, CodeWrongType, "", ""},
		{"root string", plainSpecs, `"x"`, CodeWrongType, "", ""},
		{"duplicate key", plainSpecs, `{"i":1,"i":2}`, Code(strictjson.CodeDuplicateKey), "i", "/i"},
		{"duplicate unknown key", plainSpecs, `{"zz":1,"zz":2}`, Code(strictjson.CodeDuplicateKey), "zz", "/zz"},
		{"1 MiB input", plainSpecs, huge, Code(strictjson.CodeTooLarge), "", ""},
		{"too deep", plainSpecs, `{"ls":[[["a"]]]}`, Code(strictjson.CodeTooDeep), "ls", "/ls/0/0"},
		{"too many members", plainSpecs, `{"li":` + list4097 + `}`, Code(strictjson.CodeTooManyMembers), "li", "/li/4095"},
		{"invalid utf-8", plainSpecs, "{\"s\":\"\xff\"}", Code(strictjson.CodeInvalidUTF8), "", ""},
		{"lone surrogate", plainSpecs, `{"s":"\ud800"}`, Code(strictjson.CodeInvalidUnicode), "s", "/s"},
		{"trailing data", plainSpecs, `{} {}`, Code(strictjson.CodeTrailingData), "", ""},
		{"syntax", plainSpecs, `{"i":01}`, Code(strictjson.CodeSyntax), "", ""},
		{"bad literal", plainSpecs, `{"i":+1}`, Code(strictjson.CodeSyntax), "i", "/i"},
		{"NaN", plainSpecs, `{"n":NaN}`, Code(strictjson.CodeSyntax), "n", "/n"},
		{"only whitespace", plainSpecs, `  `, Code(strictjson.CodeSyntax), "", ""},
		{"escaped name", constrainedSpecs, `{"a~1b":1}`, CodeUnknownInput, "a~1b", "/a~01b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, e := FromArguments(c.specs, []byte(c.raw))
			if e == nil {
				t.Fatalf("want %s, got map %s", c.code, frame(m))
			}
			if e.Code != c.code || e.Input != c.input || e.Path != c.path {
				t.Errorf("got %s input %q path %q (%v); want %s input %q path %q", e.Code, e.Input, e.Path, e, c.code, c.input, c.path)
			}
			if m != nil {
				t.Error("map returned with an error")
			}
		})
	}
}

func TestArgumentsEmpty(t *testing.T) {
	want := Map{"s": df(sv("x")), "i": df(iv(7)), "n": df(nv(2.5)), "d": df(dv("9.99")), "b": df(bv(true)), "tags": df(list(String, sv("a"), sv("b")))}
	for _, raw := range [][]byte{nil, {}, []byte(`{}`), []byte(" {\n} ")} {
		m, e := FromArguments(defaultSpecs, raw)
		mustNoErr(t, e)
		if !m.Equal(want) {
			t.Errorf("%q: got %s", raw, frame(m))
		}
	}
	m, e := FromObject(defaultSpecs, nil)
	mustNoErr(t, e)
	if !m.Equal(want) {
		t.Errorf("nil object: got %s", frame(m))
	}
	// An explicitly empty list is a supplied value.
	m, e = FromArguments(defaultSpecs, []byte(`{"tags":[]}`))
	mustNoErr(t, e)
	if got := m["tags"]; !got.Explicit || len(got.Value.Items()) != 0 || got.Value.Type() != List {
		t.Errorf("empty list: got %s", frame(m))
	}
	if _, e := FromArguments(nil, []byte(`{"x":1}`)); e == nil || e.Code != CodeUnknownInput {
		t.Errorf("no inputs declared: got %v", e)
	}
}

// TestCLIOnly covers what only the CLI door can receive: lexical forms,
// repeated scalars and invalid UTF-8.
func TestCLIOnly(t *testing.T) {
	cases := []struct {
		name  string
		specs []Spec
		given map[string][]string
		code  Code
		path  string
	}{
		{"hex", plainSpecs, map[string][]string{"i": cli("0x10")}, CodeInvalidNumber, "/i"},
		{"plus", plainSpecs, map[string][]string{"i": cli("+1")}, CodeInvalidNumber, "/i"},
		{"leading dot", plainSpecs, map[string][]string{"n": cli(".5")}, CodeInvalidNumber, "/n"},
		{"trailing dot", plainSpecs, map[string][]string{"n": cli("5.")}, CodeInvalidNumber, "/n"},
		{"Inf", plainSpecs, map[string][]string{"n": cli("Inf")}, CodeInvalidNumber, "/n"},
		{"inf", plainSpecs, map[string][]string{"n": cli("-inf")}, CodeInvalidNumber, "/n"},
		{"NaN", plainSpecs, map[string][]string{"n": cli("NaN")}, CodeInvalidNumber, "/n"},
		{"underscore", plainSpecs, map[string][]string{"n": cli("1_000")}, CodeInvalidNumber, "/n"},
		{"underscore integer", plainSpecs, map[string][]string{"i": cli("1_000")}, CodeInvalidNumber, "/i"},
		{"leading zero", plainSpecs, map[string][]string{"i": cli("01")}, CodeInvalidNumber, "/i"},
		{"space", plainSpecs, map[string][]string{"i": cli(" 1")}, CodeInvalidNumber, "/i"},
		{"empty number", plainSpecs, map[string][]string{"i": cli("")}, CodeInvalidNumber, "/i"},
		{"bare minus", plainSpecs, map[string][]string{"i": cli("-")}, CodeInvalidNumber, "/i"},
		{"bad exponent", plainSpecs, map[string][]string{"n": cli("1e")}, CodeInvalidNumber, "/n"},
		{"hex float", plainSpecs, map[string][]string{"n": cli("0x1p-2")}, CodeInvalidNumber, "/n"},
		{"list item hex", plainSpecs, map[string][]string{"li": cli("1", "0x2")}, CodeInvalidNumber, "/li/1"},
		{"boolean yes", plainSpecs, map[string][]string{"b": cli("yes")}, CodeInvalidBoolean, "/b"},
		{"boolean True", plainSpecs, map[string][]string{"b": cli("True")}, CodeInvalidBoolean, "/b"},
		{"boolean 1", plainSpecs, map[string][]string{"b": cli("1")}, CodeInvalidBoolean, "/b"},
		{"boolean empty", plainSpecs, map[string][]string{"b": cli("")}, CodeInvalidBoolean, "/b"},
		{"invalid utf-8", plainSpecs, map[string][]string{"s": cli("a\xffb")}, CodeInvalidString, "/s"},
		{"invalid utf-8 item", plainSpecs, map[string][]string{"ls": cli("ok", "\xc3")}, CodeInvalidString, "/ls/1"},
		{"repeated scalar", plainSpecs, map[string][]string{"s": cli("a", "b")}, CodeRepeatedValue, "/s"},
		{"repeated boolean", plainSpecs, map[string][]string{"b": cli("true", "true")}, CodeRepeatedValue, "/b"},
		{"decimal with plus", plainSpecs, map[string][]string{"d": cli("+1.5")}, CodeInvalidDecimal, "/d"},
		{"unknown with no strings is absent", exampleSpecs, map[string][]string{"nope": nil}, CodeMissingRequired, "/env"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, e := FromCLI(c.specs, c.given)
			if e == nil {
				t.Fatalf("want %s, got map %s", c.code, frame(m))
			}
			if e.Code != c.code || e.Path != c.path {
				t.Errorf("got %s at %q (%v); want %s at %q", e.Code, e.Path, e, c.code, c.path)
			}
		})
	}
	// An ID given no strings counts as not supplied.
	m, e := FromCLI(defaultSpecs, map[string][]string{"i": {}, "tags": nil})
	mustNoErr(t, e)
	if m["i"].Explicit || m["tags"].Explicit {
		t.Errorf("empty given counted as supplied: %s", frame(m))
	}
}

func TestErrorMessages(t *testing.T) {
	cases := []struct {
		specs []Spec
		raw   string
		want  string
	}{
		{exampleSpecs, `{"env":"prod","limit":1.5}`, `input "limit": 1.5 is not a whole number; give an integer such as 42`},
		{exampleSpecs, `{"env":"dev"}`, `input "env": "dev" is not one of the allowed values "prod", "stage"; give one of them`},
		{exampleSpecs, `{}`, `input "env": is required; give a string`},
		{exampleSpecs, `{"env":"prod","nope":1}`, `input "nope": there is no input "nope"; the inputs are env, limit, amount, tags, target`},
		{constrainedSpecs, `{"short":["ok","toolong"]}`, `input "short" at /short/1: item 1: has 7 characters; give at most 3`},
		{plainSpecs, `[]`, `arguments: expected the arguments as a JSON object, got a JSON array`},
		{plainSpecs, `{"d":1.5}`, `input "d": expected a decimal as a JSON string (such as "12.50"), got a JSON number`},
		{plainSpecs, `{"s":"` + strings.Repeat("x", 100) + `\u0000"}`, `input "s": contains a NUL character, which no input may hold; remove it`},
	}
	for _, c := range cases {
		_, e := FromArguments(c.specs, []byte(c.raw))
		if e == nil {
			t.Errorf("%s: no error", c.raw)
			continue
		}
		if got := e.Error(); got != c.want {
			t.Errorf("%.60s:\n got %s\nwant %s", c.raw, got, c.want)
		}
	}
	// Long values are cut in messages.
	_, e := FromCLI(exampleSpecs, map[string][]string{"env": cli(strings.Repeat("z", 5000))})
	if e == nil || len(e.Error()) > 200 {
		t.Errorf("long value not shortened: %v", e)
	}
	for _, e := range []*Error{
		{Code: CodeNotInteger, Input: "x", Path: "/x", Message: "m"},
	} {
		if got := e.Error(); got != `input "x": m` {
			t.Errorf("got %q", got)
		}
	}
}

func TestMapAppendJSON(t *testing.T) {
	m := Map{
		"zeta":  ex(list(Decimal, dv("1.50"), dv("-0"))),
		"alpha": df(iv(math64)),
		"mid":   ex(nv(1e21)),
		"a\"q":  ex(sv("é\n\x01")),
		"b":     df(bv(false)),
		"n0":    ex(nv(-0.0000001)),
	}
	want := `{"a\"q":{"value":"é\n\u0001","explicit":true},"alpha":{"value":9007199254740993,"explicit":false},"b":{"value":false,"explicit":false},"mid":{"value":1e+21,"explicit":true},"n0":{"value":-1e-7,"explicit":true},"zeta":{"value":["1.50","-0"],"explicit":true}}`
	if got := frame(m); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := strictjson.Parse([]byte(want), strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 8, MaxMembers: 100}); err != nil {
		t.Error(err)
	}
	if got := frame(Map{}); got != `{}` {
		t.Errorf("empty map: %s", got)
	}
}

const math64 = 9007199254740993

func TestMapEqual(t *testing.T) {
	a := Map{"x": ex(iv(1)), "y": df(sv("a"))}
	cases := []struct {
		b    Map
		want bool
	}{
		{Map{"x": ex(iv(1)), "y": df(sv("a"))}, true},
		{Map{"x": df(iv(1)), "y": df(sv("a"))}, false},
		{Map{"x": ex(iv(2)), "y": df(sv("a"))}, false},
		{Map{"x": ex(iv(1))}, false},
		{Map{"x": ex(iv(1)), "z": df(sv("a"))}, false},
		{Map{"x": ex(nv(1)), "y": df(sv("a"))}, false},
	}
	for i, c := range cases {
		if got := a.Equal(c.b); got != c.want {
			t.Errorf("%d: Equal = %v", i, got)
		}
	}
}
