package resultschema

import (
	"fmt"
	"strings"
	"testing"
)

const typicalResult = `{"kind":"structured","data":{"name":"web","count":42,"ratio":0.75,"state":"ok","level":2,"flag":true,
	"nothing":null,"tags":["prod","eu"],"items":[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3}]}}`

func BenchmarkValidateTypical(b *testing.B) {
	r := Result{Kind: Structured, Schema: mustParse(b, statusSchema)}
	raw := []byte(typicalResult)
	lim := DefaultLimits()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Validate(raw, lim); err != nil {
			b.Fatal(err)
		}
	}
}

// pathological is a valid result that makes validation work as hard as
// the limits allow.
type pathological struct {
	name   string
	schema string
	raw    string
}

func pathologicalResults(tb testing.TB) []pathological {
	lim := DefaultLimits()
	join := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	// Enums as large as the schema member limit allows; every value of the
	// data is the last member, the worst case for a linear search.
	const enumSize = 2040
	numberEnum := `{"type":"array","maxItems":4096,"items":{"type":"number","enum":[` +
		join(enumSize, func(i int) string { return fmt.Sprintf("%d.5e-3", i) }) + `]}}`
	numbers := "[" + join(lim.Members, func(int) string { return fmt.Sprintf("%d.50e-3", enumSize-1) }) + "]"
	stringEnum := `{"type":"array","maxItems":4096,"items":{"type":"string","enum":[` +
		join(enumSize, func(i int) string { return fmt.Sprintf(`"value-%d"`, i) }) + `]}}`
	strs := "[" + join(lim.Members, func(int) string { return fmt.Sprintf(`"value-%d"`, enumSize-1) }) + "]"

	// Strings filling the result, counted in code points.
	long := strings.Repeat("é", 60<<10/2-16)
	longStrings := `{"type":"array","maxItems":2,"items":{"type":"string","minLength":1,"maxLength":100000}}`

	// Number literals filling the result, compared exactly with bounds.
	mantissa := strings.Repeat("7", 60<<10)
	longNumbers := `{"type":"array","maxItems":2,"items":{"type":"number","minimum":-1e308,"maximum":1e308}}`
	numbersData := "[0." + mantissa + "e10,-" + mantissa[:len(mantissa)-10] + "e-61420]"

	// Depth 16 and 2,048 members: 15 nested arrays, each holding the next
	// one among empty arrays, the innermost holding empty objects.
	deep := strings.Repeat(`{"type":"array","maxItems":200,"items":`, 15) + obj("", "") + strings.Repeat("}", 15)
	perLevel := lim.Members / 15
	var build func(level int) string
	build = func(level int) string {
		if level == 15 {
			return "[" + join(perLevel, func(int) string { return "{}" }) + "]"
		}
		return "[" + build(level+1) + "," + join(perLevel-1, func(int) string { return "[]" }) + "]"
	}

	// Many declared properties at the bottom of an object chain, strings
	// at depth 16.
	name := func(i int) string { return fmt.Sprintf("p%03d", i) + strings.Repeat("n", 24) }
	var props []string
	for i := 0; i < 600; i++ {
		props = append(props, fmt.Sprintf(`"%s":{"type":"string","maxLength":8}`, name(i)))
	}
	objects := strings.Repeat(`{"type":"object","additionalProperties":false,"properties":{"next":`, 14) +
		obj(strings.Join(props, ","), "") + strings.Repeat("}}", 14)
	objectData := strings.Repeat(`{"next":`, 14) +
		"{" + join(len(props), func(i int) string { return fmt.Sprintf(`"%s":"12345678"`, name(i)) }) + "}" +
		strings.Repeat("}", 14)

	// A property name as long as the schema allows above 2,047 elements.
	// internal/strictjson built the JSON pointer of every value while it
	// parsed, and each of these repeated the name: about 128 MB of copying,
	// tens of milliseconds. strictjson now builds a pointer only for an
	// error, and the budget is counted in steps, not time.
	longName := strings.Repeat("n", 60<<10)
	longNameSchema := obj(`"`+longName+`":{"type":"array","maxItems":4096,"items":{"type":"integer"}}`, "")
	longNameData := `{"` + longName + `":` + list(lim.Members-1) + "}"

	out := []pathological{
		{"number-enum", numberEnum, numbers},
		{"string-enum", stringEnum, strs},
		{"long-strings", longStrings, `["` + long + `","` + long + `"]`},
		{"long-numbers", longNumbers, numbersData},
		{"depth-and-members", deep, build(1)},
		{"objects", objects, objectData},
		{"long-name", longNameSchema, longNameData},
	}
	for i := range out {
		out[i].raw = structured(out[i].raw)
		if len(out[i].raw) > lim.ResultBytes {
			tb.Fatalf("%s: result of %d bytes", out[i].name, len(out[i].raw))
		}
	}
	return out
}

func BenchmarkValidatePathological(b *testing.B) {
	lim := DefaultLimits()
	for _, p := range pathologicalResults(b) {
		b.Run(p.name, func(b *testing.B) {
			r := Result{Kind: Structured, Schema: mustParse(b, p.schema)}
			raw := []byte(p.raw)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Validate(raw, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	var props []string
	for i := 0; i < 200; i++ {
		props = append(props, fmt.Sprintf(`"property-%d":{"type":"string","title":"t","maxLength":64,"enum":["a","b","c","d","e"]}`, i))
	}
	var many []string // as many subschemas as the member limit allows
	for i := 0; i < (DefaultLimits().Members-3)/2; i++ {
		many = append(many, fmt.Sprintf(`"p%d":{"type":"integer"}`, i))
	}
	for _, tc := range []struct{ name, schema string }{
		{"typical", statusSchema},
		{"large", obj(strings.Join(props, ","), "")},
		{"most-subschemas", obj(strings.Join(many, ","), "")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.schema)))
			b.ReportAllocs()
			lim := DefaultLimits()
			for b.Loop() {
				if _, errs := Parse([]byte(tc.schema), lim); errs != nil {
					b.Fatal(errs)
				}
			}
		})
	}
}
