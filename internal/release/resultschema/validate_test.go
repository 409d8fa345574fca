package resultschema

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// statusSchema exercises every keyword of the subset.
const statusSchema = `{"type":"object","title":"status","properties":{
	"name":{"type":"string","minLength":1,"maxLength":5},
	"count":{"type":"integer","minimum":0,"maximum":100},
	"ratio":{"type":"number","minimum":-1.5,"maximum":1.5},
	"state":{"type":"string","enum":["ok","failed"]},
	"level":{"type":"integer","enum":[1,2,3]},
	"flag":{"type":"boolean","enum":[true]},
	"nothing":{"type":"null"},
	"a/b":{"type":"boolean"},
	"tags":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string"}},
	"items":{"type":"array","maxItems":10,"items":{"type":"object","properties":{
		"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"],"additionalProperties":false}}
	},"required":["name","count"],"additionalProperties":false}`

// testLimits are the default limits.
func testLimits() Limits { return DefaultLimits() }

func mustParse(t testing.TB, schema string) *Schema {
	t.Helper()
	s, errs := Parse([]byte(schema), DefaultLimits())
	if errs != nil {
		t.Fatalf("Parse(%s): %v", schema, errs)
	}
	return s
}

func structured(data string) string { return `{"kind":"structured","data":` + data + `}` }

type resultCase struct {
	name string
	raw  string
	want problem // zero: valid
}

var structuredCases = []resultCase{
	{"minimal", structured(`{"name":"a","count":0}`), problem{}},
	{"full", structured(`{"name":"abcde","count":100,"ratio":-1.5,"state":"failed","level":3,"flag":true,"nothing":null,"a/b":false,
		"tags":["x","y","z"],"items":[{"id":1,"name":"n"},{"id":-7}]}`), problem{}},
	{"members in any order", structured(`{"count":1,"name":"a"}`), problem{}},
	{"data first", `{"data":{"name":"a","count":0},"kind":"structured"}`, problem{}},
	{"whitespace", " {\n\t\"kind\" : \"structured\" ,\"data\" : { \"name\" : \"a\" , \"count\" : 0 } } ", problem{}},
	{"integer written 1.0", structured(`{"name":"a","count":1.0}`), problem{}},
	{"integer written 1e2", structured(`{"name":"a","count":1e2}`), problem{}},
	{"enum value written 2.00", structured(`{"name":"a","count":0,"level":2.00}`), problem{}},
	{"bound exactly", structured(`{"name":"a","count":0,"ratio":15e-1}`), problem{}},
	{"length in code points", structured(`{"name":"ééééé","count":0}`), problem{}},
	{"astral code points", structured(`{"name":"🙂🙂🙂🙂🙂","count":0}`), problem{}},
	{"escaped code points", structured(`{"name":"\u00e9\ud83d\ude42","count":0}`), problem{}},

	{"not an object", `["structured"]`, problem{CodeResultMalformed, ""}},
	{"null", `null`, problem{CodeResultMalformed, ""}},
	{"no kind", `{"data":{}}`, problem{CodeResultMalformed, ""}},
	{"kind not string", `{"kind":1,"data":{}}`, problem{CodeResultMalformed, "/kind"}},
	{"kind unknown", `{"kind":"json","data":{}}`, problem{CodeResultMalformed, "/kind"}},
	{"kind text for structured", `{"kind":"text","text":"hi"}`, problem{CodeResultMalformed, "/kind"}},
	{"no data", `{"kind":"structured"}`, problem{CodeResultMalformed, ""}},
	{"extra member", `{"kind":"structured","data":{"name":"a","count":0},"extra":1}`, problem{CodeResultMalformed, "/extra"}},
	{"text member", `{"kind":"structured","text":"x","data":{}}`, problem{CodeResultMalformed, "/text"}},
	{"syntax", `{"kind":"structured","data":{"name":"a",}}`, problem{CodeResultMalformed, "/data"}},
	{"duplicate key", structured(`{"name":"a","name":"b","count":0}`), problem{CodeResultMalformed, "/data/name"}},
	{"trailing data", structured(`{"name":"a","count":0}`) + `{}`, problem{CodeResultMalformed, ""}},
	{"invalid UTF-8", structured("{\"name\":\"\xc3\",\"count\":0}"), problem{CodeResultMalformed, ""}},
	{"lone surrogate", structured(`{"name":"\ud800","count":0}`), problem{CodeResultMalformed, "/data/name"}},
	{"empty", ``, problem{CodeResultMalformed, ""}},
	{"data not object", structured(`[]`), problem{CodeResultInvalid, "/data"}},
	{"missing required", structured(`{"count":0}`), problem{CodeResultInvalid, "/data"}},
	{"missing required comes first", structured(`{"zzz":1}`), problem{CodeResultInvalid, "/data"}},
	{"undeclared property", structured(`{"name":"a","count":0,"zzz":1}`), problem{CodeResultInvalid, "/data/zzz"}},
	{"first problem in document order", structured(`{"name":"","count":-1}`), problem{CodeResultInvalid, "/data/name"}},
	{"too short", structured(`{"name":"","count":0}`), problem{CodeResultInvalid, "/data/name"}},
	{"too long in code points", structured(`{"name":"éééééé","count":0}`), problem{CodeResultInvalid, "/data/name"}},
	{"integer with fraction", structured(`{"name":"a","count":1.5}`), problem{CodeResultInvalid, "/data/count"}},
	{"integer as string", structured(`{"name":"a","count":"1"}`), problem{CodeResultInvalid, "/data/count"}},
	{"above maximum", structured(`{"name":"a","count":101}`), problem{CodeResultInvalid, "/data/count"}},
	{"below minimum", structured(`{"name":"a","count":-1}`), problem{CodeResultInvalid, "/data/count"}},
	{"tiny fraction is no integer", structured(`{"name":"a","count":-1e-300}`), problem{CodeResultInvalid, "/data/count"}},
	{"above maximum by less than binary64 sees", structured(`{"name":"a","count":0,"ratio":1.5000000000000000000001}`),
		problem{CodeResultInvalid, "/data/ratio"}},
	{"not in enum", structured(`{"name":"a","count":0,"state":"bad"}`), problem{CodeResultInvalid, "/data/state"}},
	{"number not in enum", structured(`{"name":"a","count":0,"level":4}`), problem{CodeResultInvalid, "/data/level"}},
	{"boolean not in enum", structured(`{"name":"a","count":0,"flag":false}`), problem{CodeResultInvalid, "/data/flag"}},
	{"not null", structured(`{"name":"a","count":0,"nothing":0}`), problem{CodeResultInvalid, "/data/nothing"}},
	{"escaped path", structured(`{"name":"a","count":0,"a/b":"true"}`), problem{CodeResultInvalid, "/data/a~1b"}},
	{"too few items", structured(`{"name":"a","count":0,"tags":[]}`), problem{CodeResultInvalid, "/data/tags"}},
	{"too many items", structured(`{"name":"a","count":0,"tags":["1","2","3","4"]}`), problem{CodeResultInvalid, "/data/tags"}},
	{"wrong item", structured(`{"name":"a","count":0,"tags":["1",2]}`), problem{CodeResultInvalid, "/data/tags/1"}},
	{"nested missing", structured(`{"name":"a","count":0,"items":[{"id":1},{"name":"x"}]}`), problem{CodeResultInvalid, "/data/items/1"}},
	{"nested undeclared", structured(`{"name":"a","count":0,"items":[{"id":1,"x":1}]}`), problem{CodeResultInvalid, "/data/items/0/x"}},
	{"number overflows binary64", structured(`{"name":"a","count":0,"ratio":1e400}`), problem{CodeResultInvalidNumber, "/data/ratio"}},
	{"number underflows binary64", structured(`{"name":"a","count":0,"ratio":-1e-400}`), problem{CodeResultInvalidNumber, "/data/ratio"}},
	{"giant exponent", structured(`{"name":"a","count":1e999999999}`), problem{CodeResultInvalidNumber, "/data/count"}},
	{"long integer overflows", structured(`{"name":"a","count":1` + strings.Repeat("0", 400) + `}`), problem{CodeResultInvalidNumber, "/data/count"}},
}

var textCases = []resultCase{
	{"text", `{"kind":"text","text":"hello\nworld"}`, problem{}},
	{"empty text", `{"text":"","kind":"text"}`, problem{}},
	{"text not string", `{"kind":"text","text":1}`, problem{CodeResultMalformed, "/text"}},
	{"text missing", `{"kind":"text"}`, problem{CodeResultMalformed, ""}},
	{"structured for text", structured(`{}`), problem{CodeResultMalformed, "/kind"}},
	{"data member", `{"kind":"text","text":"a","data":{}}`, problem{CodeResultMalformed, "/data"}},
	{"many junk members", `{"kind":"text","text":"a","x":` + list(2049) + `}`, problem{CodeResultMalformed, "/x/2047"}},
	{"deep junk", `{"kind":"text","text":` + strings.Repeat("[", 17) + strings.Repeat("]", 17) + `}`,
		problem{CodeResultMalformed, "/text" + pointerOf(16, "0")}},
}

func TestValidate(t *testing.T) {
	lim := testLimits()
	results := map[string]Result{
		"structured": {Kind: Structured, Schema: mustParse(t, statusSchema)},
		"text":       {Kind: Text},
	}
	for kind, cases := range map[string][]resultCase{"structured": structuredCases, "text": textCases} {
		r := results[kind]
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				cr, err := r.Validate([]byte(tc.raw), lim)
				if tc.want == (problem{}) {
					if err != nil {
						t.Fatalf("Validate(%s): %v", tc.raw, err)
					}
					checkCommandResult(t, r, tc.raw, cr)
					return
				}
				if cr != nil || err == nil {
					t.Fatalf("Validate(%s) = %v, want %v", tc.raw, cr, tc.want)
				}
				if got := (problem{err.Code, err.Path}); got != tc.want {
					t.Fatalf("Validate(%s): got %v, want %v (%v)", tc.raw, got, tc.want, err)
				}
				if msg := err.Error(); strings.Contains(msg, "%!") || strings.HasSuffix(msg, ".") {
					t.Errorf("badly formed message %q", msg)
				}
			})
		}
	}
}

// checkCommandResult checks what Validate returned for a valid raw.
func checkCommandResult(t *testing.T, r Result, raw string, cr *CommandResult) {
	t.Helper()
	v, err := strictjson.Parse([]byte(raw), strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 100, MaxMembers: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Kind != r.Kind {
		t.Fatalf("kind %q, want %q", cr.Kind, r.Kind)
	}
	if r.Kind == Text {
		if cr.Text != v.Get("text").Text || cr.Data != nil {
			t.Fatalf("got %+v for %s", cr, raw)
		}
		return
	}
	if want := v.Get("data").AppendCompact(nil); !bytes.Equal(cr.Data, want) || cr.Text != "" {
		t.Fatalf("Data = %s, want %s", cr.Data, want)
	}
}

// TestValidateAgreesWithReference validates every structured case with the
// compiled reference implementation too: both must agree on validity,
// and the reference must report a problem where Validate does.
func TestValidateAgreesWithReference(t *testing.T) {
	r := Result{Kind: Structured, Schema: mustParse(t, statusSchema)}
	for _, tc := range structuredCases {
		compareWithReference(t, r, []byte(tc.raw))
	}
}

// compareWithReference fails t when Validate and the compiled reference
// schema disagree about raw. Results that are not JSON, break a limit or
// hold numbers outside binary64 are not compared: only Rukh judges those.
func compareWithReference(t testing.TB, r Result, raw []byte) {
	t.Helper()
	lim := testLimits()
	cr, verr := r.Validate(raw, lim)
	if verr != nil && verr.Code != CodeResultInvalid {
		return
	}
	root, err := strictjson.Parse(raw, strictjson.Limits{MaxBytes: lim.ResultBytes, MaxDepth: lim.Depth + 1, MaxMembers: 2*lim.Members + 16})
	if err != nil {
		t.Fatalf("Validate judged %q that does not parse: %v", raw, err)
	}
	data := root.Get("data")
	if !numbersFit(data) {
		return
	}
	compiled, err := reference(r.Schema)
	if err != nil {
		t.Fatalf("the reference implementation refuses a checked schema: %v", err)
	}
	refErr := compiled.Validate(data.Any())
	if (verr == nil) != (refErr == nil) {
		t.Fatalf("Validate(%s) = %v, %v; the reference says %v", raw, cr, verr, refErr)
	}
	if verr == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(refErr, &ve) {
		t.Fatalf("reference error %T", refErr)
	}
	var where []string
	for _, leaf := range leaves(ve) {
		loc := "/data" + pointer(leaf.InstanceLocation)
		where = append(where, loc)
		if _, ok := leaf.ErrorKind.(*kind.AdditionalProperties); ok && loc == parentPointer(verr.Path) {
			return
		}
	}
	if !slices.Contains(where, verr.Path) {
		t.Fatalf("Validate(%s) reports %v; the reference reports problems at %q: %v", raw, verr, where, refErr)
	}
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func parentPointer(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

func numbersFit(v *strictjson.Value) bool {
	switch v.Kind {
	case strictjson.Number:
		d, _ := parseDecimal(v.Text)
		return d.fitsBinary64()
	case strictjson.Array:
		for _, it := range v.Items {
			if !numbersFit(it) {
				return false
			}
		}
	case strictjson.Object:
		for _, m := range v.Members {
			if !numbersFit(m.Value) {
				return false
			}
		}
	}
	return true
}

// depthSchema accepts data nested exactly lim.Depth deep: 15 arrays around
// an object.
var depthSchema = arrayChain(15, obj("", ""))

// listSchema accepts up to 5000 integers, more than any result may hold.
const listSchema = `{"type":"array","maxItems":5000,"items":{"type":"integer"}}`

func list(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]"
}

func TestValidateLimits(t *testing.T) {
	lim := testLimits()
	text := func(n int) string { // a text result of exactly n bytes
		const head, tail = `{"kind":"text","text":"`, `"}`
		return head + strings.Repeat("t", n-len(head)-len(tail)) + tail
	}
	nested := func(n int) string { return strings.Repeat("[", n-1) + "{}" + strings.Repeat("]", n-1) }
	tests := []struct {
		name   string
		result Result
		raw    string
		lim    Limits
		want   problem
	}{
		{"size at limit", Result{Kind: Text}, text(lim.ResultBytes), lim, problem{}},
		{"size one over", Result{Kind: Text}, text(lim.ResultBytes + 1), lim, problem{CodeResultTooLarge, ""}},
		{"depth at limit", Result{Kind: Structured, Schema: mustParse(t, depthSchema)}, structured(nested(16)), lim, problem{}},
		{"depth one over", Result{Kind: Structured, Schema: mustParse(t, depthSchema)}, structured(nested(17)), lim,
			problem{CodeResultTooDeep, "/data" + pointerOf(16, "0")}},
		{"depth one over in an object", Result{Kind: Structured, Schema: mustParse(t, depthSchema)},
			structured(strings.Repeat(`{"a":`, 17) + "1" + strings.Repeat("}", 17)), lim,
			problem{CodeResultTooDeep, "/data" + pointerOf(16, "a")}},
		{"members at limit", Result{Kind: Structured, Schema: mustParse(t, listSchema)}, structured(list(2048)), lim, problem{}},
		{"members one over", Result{Kind: Structured, Schema: mustParse(t, listSchema)}, structured(list(2049)), lim,
			problem{CodeResultTooManyMembers, "/data/2048"}},
		{"members one over, data first", Result{Kind: Structured, Schema: mustParse(t, listSchema)},
			`{"data":` + list(2049) + `,"kind":"structured"}`, lim, problem{CodeResultTooManyMembers, ""}},
		{"members far over", Result{Kind: Structured, Schema: mustParse(t, listSchema)}, structured(list(5000)), lim,
			problem{CodeResultTooManyMembers, "/data/2048"}},
		{"members counted in nested data", Result{Kind: Structured, Schema: mustParse(t, obj(`"a":`+listSchema, ""))},
			structured(`{"a":` + list(2048) + `}`), lim, problem{CodeResultTooManyMembers, "/data/a/2047"}},
		{"smaller limits", Result{Kind: Structured, Schema: mustParse(t, listSchema)}, structured(list(4)),
			Limits{SchemaBytes: 1, ResultBytes: 1000, Depth: 1, Members: 3, Steps: StepBudget(3)},
			problem{CodeResultTooManyMembers, "/data/3"}},
		{"smaller depth", Result{Kind: Structured, Schema: mustParse(t, depthSchema)}, structured("[[]]"),
			Limits{SchemaBytes: 1, ResultBytes: 1000, Depth: 1, Members: 3, Steps: StepBudget(3)},
			problem{CodeResultTooDeep, "/data/0"}},
		{"step budget", Result{Kind: Structured, Schema: mustParse(t, listSchema)}, structured(list(2048)),
			Limits{SchemaBytes: 1, ResultBytes: lim.ResultBytes, Depth: 16, Members: 2048, Steps: 100},
			problem{CodeResultTimeout, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := tc.result.Validate([]byte(tc.raw), tc.lim)
			if tc.want == (problem{}) {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				checkCommandResult(t, tc.result, tc.raw, cr)
				return
			}
			if err == nil || cr != nil {
				t.Fatalf("Validate = %v, %v; want %v", cr, err, tc.want)
			}
			if got := (problem{err.Code, err.Path}); got != tc.want {
				t.Fatalf("got %v, want %v (%v)", got, tc.want, err)
			}
		})
	}
}

func TestValidatePanicsOnInvalidResult(t *testing.T) {
	s := mustParse(t, `{"type":"null"}`)
	for _, r := range []Result{{}, {Kind: Structured}, {Kind: Text, Schema: s}, {Kind: "json", Schema: s}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Validate on %+v did not panic", r)
				}
			}()
			r.Validate([]byte(`{"kind":"text","text":""}`), testLimits())
		}()
	}
}

// TestValidateConcurrently validates with one schema from many goroutines
// (run with -race).
func TestValidateConcurrently(t *testing.T) {
	r := Result{Kind: Structured, Schema: mustParse(t, statusSchema)}
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() {
			for _, tc := range structuredCases {
				_, err := r.Validate([]byte(tc.raw), testLimits())
				if (err == nil) != (tc.want == problem{}) {
					t.Errorf("%s: %v", tc.name, err)
				}
			}
			done <- true
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
}

// TestPathologicalResults checks that the benchmark's worst cases are
// valid results, so the benchmark measures complete validations.
func TestPathologicalResults(t *testing.T) {
	for _, p := range pathologicalResults(t) {
		r := Result{Kind: Structured, Schema: mustParse(t, p.schema)}
		if _, err := r.Validate([]byte(p.raw), testLimits()); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
}

// TestStepBudget bounds validation by counted steps, not by a clock: a
// list of n integers against listSchema costs the array's steps (type,
// items, maxItems: 3) and one per integer, so it is accepted with a budget
// of exactly n+3 steps and refused with result_timeout at n+2, whatever
// the machine's speed or load. (With the wall-clock budget this replaced,
// the same result passed or failed depending on how busy the machine was.)
func TestStepBudget(t *testing.T) {
	r := Result{Kind: Structured, Schema: mustParse(t, listSchema)}
	for _, n := range []int{0, 1, 100, 2048} {
		raw := []byte(structured(list(n)))
		lim := DefaultLimits()
		lim.Steps = n + 3
		if _, err := r.Validate(raw, lim); err != nil {
			t.Fatalf("%d items with %d steps: %v", n, lim.Steps, err)
		}
		lim.Steps = n + 2
		cr, err := r.Validate(raw, lim)
		if cr != nil || err == nil {
			t.Fatalf("%d items with %d steps: accepted", n, lim.Steps)
		}
		want := fmt.Sprintf("result_timeout at the result root: validating the result needs more than %d steps (one per value and per keyword checked on it); return a smaller result", n+2)
		if err.Code != CodeResultTimeout || err.Path != "" || err.Error() != want {
			t.Fatalf("%d items with %d steps: %q, want %q", n, lim.Steps, err, want)
		}
	}
}

// TestStepsPerValue counts what a value costs for each shape of subschema:
// one step for the type and one per constraining keyword, never more than
// MaxValueSteps; title and description cost nothing.
func TestStepsPerValue(t *testing.T) {
	for _, tc := range []struct {
		schema, data string
		steps        int
	}{
		{`{"type":"null"}`, `null`, 1},
		{`{"type":"boolean","title":"t","description":"d"}`, `true`, 1},
		{`{"type":"boolean","enum":[true]}`, `true`, 2},
		{`{"type":"string","minLength":1,"maxLength":3,"enum":["a"]}`, `"a"`, 4},
		{`{"type":"number","minimum":0,"maximum":3,"enum":[1]}`, `1`, 4},
		{`{"type":"integer","minimum":0}`, `1`, 2},
		{`{"type":"array","items":{"type":"null"},"minItems":1,"maxItems":3}`, `[null,null]`, 4 + 2},
		{`{"type":"object","properties":{"a":{"type":"null"}},"required":["a"],"additionalProperties":false}`, `{"a":null}`, 4 + 1},
		{`{"type":"object","properties":{},"additionalProperties":false}`, `{}`, 3},
	} {
		r := Result{Kind: Structured, Schema: mustParse(t, tc.schema)}
		raw := []byte(structured(tc.data))
		lim := DefaultLimits()
		lim.Steps = tc.steps
		if _, err := r.Validate(raw, lim); err != nil {
			t.Errorf("%s with %d steps: %v", tc.schema, tc.steps, err)
		}
		lim.Steps = tc.steps - 1
		if lim.Steps == 0 {
			continue
		}
		if _, err := r.Validate(raw, lim); err == nil || err.Code != CodeResultTimeout {
			t.Errorf("%s with %d steps: %v, want %s", tc.schema, lim.Steps, err, CodeResultTimeout)
		}
	}
}

// TestDefaultStepsFitEveryResult validates, with the default limits, the
// costliest result there is: 2,048 members (the limit), every value at
// MaxValueSteps. It is accepted with the budget spent to the last step
// (one step less refuses it), so no result within the other limits is
// ever refused for its work; nor is any of the benchmark's worst cases.
func TestDefaultStepsFitEveryResult(t *testing.T) {
	lim := DefaultLimits()
	// An object (4 steps) of 2,048 strings with three constraining
	// keywords each (4 steps): 2,049 values, 8,196 steps.
	var props, data []string
	for i := range lim.Members {
		name := fmt.Sprintf("p%d", i)
		props = append(props, fmt.Sprintf(`%q:{"type":"string","minLength":1,"maxLength":8,"enum":["v"]}`, name))
		data = append(data, fmt.Sprintf(`%q:"v"`, name))
	}
	schema := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":["p0"],"additionalProperties":false}`
	s, errs := Parse([]byte(schema), Limits{SchemaBytes: 1 << 20, ResultBytes: lim.ResultBytes, Depth: lim.Depth, Members: 1 << 20, Steps: lim.Steps})
	if errs != nil {
		t.Fatal(errs)
	}
	r := Result{Kind: Structured, Schema: s}
	raw := []byte(structured("{" + strings.Join(data, ",") + "}"))
	if _, err := r.Validate(raw, lim); err != nil {
		t.Fatalf("default limits: %v", err)
	}
	if lim.Steps != (lim.Members+1)*MaxValueSteps || lim.Steps != 8196 {
		t.Fatalf("default budget %d", lim.Steps)
	}
	tight := lim
	tight.Steps--
	if _, err := r.Validate(raw, tight); err == nil || err.Code != CodeResultTimeout {
		t.Fatalf("one step less: %v, want %s", err, CodeResultTimeout)
	}
	for _, p := range pathologicalResults(t) {
		r := Result{Kind: Structured, Schema: mustParse(t, p.schema)}
		if _, err := r.Validate([]byte(p.raw), lim); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
}
