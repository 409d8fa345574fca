package values

import (
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

func ip(n int) *int            { return &n }
func vp(v Value) *Value        { return &v }
func ex(v Value) Entry         { return Entry{Value: v, Explicit: true} }
func df(v Value) Entry         { return Entry{Value: v} }
func sv(s string) Value        { return StringValue(s) }
func iv(i int64) Value         { return IntegerValue(i) }
func nv(f float64) Value       { return NumberValue(f) }
func bv(b bool) Value          { return BooleanValue(b) }
func cli(s ...string) []string { return s }

func dv(s string) Value {
	v, err := DecimalValue(s)
	if err != nil {
		panic(err)
	}
	return v
}

func svs(ss ...string) []Value {
	out := make([]Value, len(ss))
	for i, s := range ss {
		out[i] = StringValue(s)
	}
	return out
}

func list(item Type, vs ...Value) Value { return ListValue(item, vs) }

// exampleSpecs are the inputs of the descriptor example in
// docs/reference.md §1.
var exampleSpecs = []Spec{
	{ID: "env", Type: String, Enum: svs("prod", "stage"), Required: true, Description: "Target environment"},
	{ID: "limit", Type: Integer, Minimum: vp(iv(1)), Maximum: vp(iv(100)), Default: vp(iv(10))},
	{ID: "amount", Type: Decimal},
	{ID: "tags", Type: List, Item: &Spec{Type: String}, MaxItems: ip(16)},
	{ID: "target", Type: String},
}

// plainSpecs declare one unconstrained input of every type.
var plainSpecs = []Spec{
	{ID: "s", Type: String},
	{ID: "i", Type: Integer},
	{ID: "n", Type: Number},
	{ID: "d", Type: Decimal},
	{ID: "b", Type: Boolean},
	{ID: "ls", Type: List, Item: &Spec{Type: String}},
	{ID: "li", Type: List, Item: &Spec{Type: Integer}},
	{ID: "ln", Type: List, Item: &Spec{Type: Number}},
	{ID: "ld", Type: List, Item: &Spec{Type: Decimal}},
	{ID: "lb", Type: List, Item: &Spec{Type: Boolean}},
}

// defaultSpecs give every type a default.
var defaultSpecs = []Spec{
	{ID: "s", Type: String, Default: vp(sv("x"))},
	{ID: "i", Type: Integer, Default: vp(iv(7))},
	{ID: "n", Type: Number, Default: vp(nv(2.5))},
	{ID: "d", Type: Decimal, Default: vp(dv("9.99"))},
	{ID: "b", Type: Boolean, Default: vp(bv(true))},
	{ID: "tags", Type: List, Item: &Spec{Type: String}, Default: vp(list(String, sv("a"), sv("b")))},
}

// constrainedSpecs carry every kind of constraint.
var constrainedSpecs = []Spec{
	{ID: "name", Type: String, MinLength: ip(1), MaxLength: ip(2)},
	{ID: "greet", Type: String, Enum: svs("héllo", "日本")},
	{ID: "ratio", Type: Number, Minimum: vp(nv(0.5)), Maximum: vp(nv(1))},
	{ID: "zero", Type: Number, Enum: []Value{nv(0), nv(1.5)}},
	{ID: "price", Type: Decimal, Minimum: vp(dv("0.01")), Maximum: vp(dv("1000"))},
	{ID: "half", Type: Decimal, Enum: []Value{dv("1.5"), dv("2")}},
	{ID: "short", Type: List, Item: &Spec{Type: String, MaxLength: ip(3)}, MinItems: ip(2), MaxItems: ip(3)},
	{ID: "unit", Type: List, Item: &Spec{Type: Decimal, Minimum: vp(dv("0")), Maximum: vp(dv("1"))}},
	{ID: "a/b~c", Type: Integer},
	{ID: "dry", Type: Boolean, Default: vp(bv(true))},
}

// jsonString returns s as a JSON string.
func jsonString(s string) string { return string(strictjson.AppendString(nil, s)) }

// manyItems returns n copies of item as CLI strings and as a JSON array.
func manyItems(n int, cliItem, jsonItem string) ([]string, string) {
	strs := make([]string, n)
	js := make([]string, n)
	for i := range n {
		strs[i], js[i] = cliItem, jsonItem
	}
	return strs, "[" + strings.Join(js, ",") + "]"
}

func frame(m Map) string { return string(m.AppendJSON(nil)) }

// sameError reports whether a and b have the same code, input and path.
func sameError(a, b *Error) bool {
	return a != nil && b != nil && a.Code == b.Code && a.Input == b.Input && a.Path == b.Path
}

func mustNoErr(t *testing.T, e *Error) {
	t.Helper()
	if e != nil {
		t.Fatalf("unexpected error: %v (%s %s)", e, e.Code, e.Path)
	}
}
