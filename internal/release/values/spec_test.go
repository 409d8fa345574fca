package values

import (
	"math"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

func parseJSON(t *testing.T, s string) *strictjson.Value {
	t.Helper()
	v, err := strictjson.Parse([]byte(s), strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 8, MaxMembers: 1 << 16})
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestParseLiteral(t *testing.T) {
	_, items1025 := manyItems(MaxListItems+1, "", `"a"`)
	cases := []struct {
		name string
		t    Type
		item *Spec
		lit  string // "" means a nil literal
		want Value
		code Code
		path string
	}{
		{"integer", Integer, nil, `10`, iv(10), "", ""},
		{"integer 5.0", Integer, nil, `5.0`, iv(5), "", ""},
		{"integer 1.5", Integer, nil, `1.5`, Value{}, CodeNotInteger, ""},
		{"integer exact", Integer, nil, `-9223372036854775808`, iv(math.MinInt64), "", ""},
		{"integer too big", Integer, nil, `1e19`, Value{}, CodeOutOfRange, ""},
		{"integer as string", Integer, nil, `"10"`, Value{}, CodeWrongType, ""},
		{"number", Number, nil, `2.5`, nv(2.5), "", ""},
		{"number from integer literal", Number, nil, `3`, nv(3), "", ""},
		{"number overflow", Number, nil, `-1e400`, Value{}, CodeOutOfRange, ""},
		{"decimal", Decimal, nil, `"1.50"`, dv("1.50"), "", ""},
		{"decimal as number", Decimal, nil, `1.5`, Value{}, CodeWrongType, ""},
		{"decimal bad", Decimal, nil, `"1.5e3"`, Value{}, CodeInvalidDecimal, ""},
		{"boolean", Boolean, nil, `false`, bv(false), "", ""},
		{"boolean as string", Boolean, nil, `"false"`, Value{}, CodeWrongType, ""},
		{"string", String, nil, `"stage"`, sv("stage"), "", ""},
		{"string with NUL", String, nil, `"a\u0000"`, Value{}, CodeInvalidString, ""},
		{"null", String, nil, `null`, Value{}, CodeNullValue, ""},
		{"nil literal", Integer, nil, "", Value{}, CodeNullValue, ""},
		{"invalid type", Type("float"), nil, `1`, Value{}, CodeInvalidType, ""},
		{"list", List, &Spec{Type: Integer}, `[3,1,2.0]`, list(Integer, iv(3), iv(1), iv(2)), "", ""},
		{"empty list", List, &Spec{Type: String}, `[]`, list(String), "", ""},
		{"list item wrong type", List, &Spec{Type: String}, `["a",1]`, Value{}, CodeWrongType, "/1"},
		{"list item null", List, &Spec{Type: String}, `["a",null]`, Value{}, CodeNullValue, "/1"},
		{"list item not integer", List, &Spec{Type: Integer}, `[1,1.5]`, Value{}, CodeNotInteger, "/1"},
		{"list not array", List, &Spec{Type: String}, `"a"`, Value{}, CodeWrongType, ""},
		{"list null", List, &Spec{Type: String}, `null`, Value{}, CodeNullValue, ""},
		{"list without item", List, nil, `[]`, Value{}, CodeItemsRequired, ""},
		{"list of lists", List, &Spec{Type: List}, `[[1]]`, Value{}, CodeNestedList, ""},
		{"list over the hard limit", List, &Spec{Type: String}, items1025, Value{}, CodeTooManyItems, ""},
		// Constraints are Check's business, not ParseLiteral's.
		{"constraints not applied", List, &Spec{Type: String, MaxLength: ip(1)}, `["long"]`, list(String, sv("long")), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lit *strictjson.Value
			if c.lit != "" {
				lit = parseJSON(t, c.lit)
			}
			v, e := ParseLiteral(c.t, c.item, lit)
			if c.code != "" {
				if e == nil || e.Code != c.code || e.Path != c.path || e.Input != "" {
					t.Fatalf("got %v, %+v; want %s at %q", v, e, c.code, c.path)
				}
				return
			}
			mustNoErr(t, e)
			if !v.Equal(c.want) {
				t.Errorf("got %v, want %v", v, c.want)
			}
		})
	}
}

type found struct {
	code Code
	path string
}

func TestCheck(t *testing.T) {
	str := &Spec{Type: String}
	cases := []struct {
		name string
		spec Spec
		want []found
	}{
		{"valid example inputs", exampleSpecs[1], nil},
		{"valid list", Spec{ID: "t", Type: List, Item: &Spec{Type: String, Enum: svs("a", "b"), MaxLength: ip(1)}, MinItems: ip(0), MaxItems: ip(2), Default: vp(list(String, sv("a")))}, nil},
		{"valid decimal", Spec{ID: "p", Type: Decimal, Minimum: vp(dv("0.00")), Maximum: vp(dv("0")), Default: vp(dv("-0.0"))}, nil},
		{"missing id", Spec{Type: String}, []found{{CodeInvalidID, "/id"}}},
		{"invalid type", Spec{ID: "x", Type: "float", MinLength: ip(1)}, []found{{CodeInvalidType, "/type"}}},
		{"minLength on integer", Spec{ID: "x", Type: Integer, MinLength: ip(1)}, []found{{CodeNotApplicable, "/minLength"}}},
		{"minimum on string", Spec{ID: "x", Type: String, Minimum: vp(iv(1))}, []found{{CodeNotApplicable, "/minimum"}}},
		{"minItems on string", Spec{ID: "x", Type: String, MinItems: ip(1)}, []found{{CodeNotApplicable, "/minItems"}}},
		{"items on string", Spec{ID: "x", Type: String, Item: str}, []found{{CodeNotApplicable, "/items"}}},
		{"enum on list", Spec{ID: "x", Type: List, Item: str, Enum: []Value{list(String)}}, []found{{CodeNotApplicable, "/enum"}}},
		{"maximum on list", Spec{ID: "x", Type: List, Item: &Spec{Type: Integer}, Maximum: vp(iv(1))}, []found{{CodeNotApplicable, "/maximum"}}},
		{"list without items", Spec{ID: "x", Type: List}, []found{{CodeItemsRequired, "/items"}}},
		{"list of lists", Spec{ID: "x", Type: List, Item: &Spec{Type: List, Item: str}}, []found{{CodeNestedList, "/items/type"}}},
		{"item invalid type", Spec{ID: "x", Type: List, Item: &Spec{Type: "int"}}, []found{{CodeInvalidType, "/items/type"}}},
		{"item with id, required, default, minItems", Spec{ID: "x", Type: List, Item: &Spec{ID: "y", Type: String, Required: true, Default: vp(sv("a")), MinItems: ip(1)}},
			[]found{{CodeInvalidID, "/items/id"}, {CodeNotApplicable, "/items/minItems"}, {CodeNotApplicable, "/items/required"}, {CodeNotApplicable, "/items/default"}}},
		{"item constraints checked", Spec{ID: "x", Type: List, Item: &Spec{Type: String, MinLength: ip(3), MaxLength: ip(2)}},
			[]found{{CodeBoundsInverted, "/items/maxLength"}}},
		{"item enum member invalid", Spec{ID: "x", Type: List, Item: &Spec{Type: Integer, Enum: []Value{iv(1), iv(50)}, Maximum: vp(iv(10))}},
			[]found{{CodeEnumMemberInvalid, "/items/enum/1"}}},
		{"integer bound is a number", Spec{ID: "x", Type: Integer, Minimum: vp(nv(1.5))}, []found{{CodeTypeMismatch, "/minimum"}}},
		{"null bound", Spec{ID: "x", Type: Integer, Maximum: &Value{}}, []found{{CodeNullLiteral, "/maximum"}}},
		{"non-finite bound", Spec{ID: "x", Type: Number, Maximum: vp(nv(math.Inf(1)))}, []found{{CodeInvalidLiteral, "/maximum"}}},
		{"negative counter", Spec{ID: "x", Type: String, MinLength: ip(-1)}, []found{{CodeNegativeCount, "/minLength"}}},
		{"counter beyond the hard limit", Spec{ID: "x", Type: List, Item: str, MaxItems: ip(MaxListItems + 1)}, []found{{CodeBeyondLimit, "/maxItems"}}},
		{"length beyond the hard limit", Spec{ID: "x", Type: String, MinLength: ip(MaxStringLength + 1)}, []found{{CodeBeyondLimit, "/minLength"}}},
		{"minimum above maximum", Spec{ID: "x", Type: Integer, Minimum: vp(iv(5)), Maximum: vp(iv(4))}, []found{{CodeBoundsInverted, "/maximum"}}},
		{"decimal bounds inverted exactly", Spec{ID: "x", Type: Decimal, Minimum: vp(dv("0.10000000000000000001")), Maximum: vp(dv("0.1"))}, []found{{CodeBoundsInverted, "/maximum"}}},
		{"bounds of the wrong type are not compared", Spec{ID: "x", Type: Number, Minimum: vp(iv(5)), Maximum: vp(iv(1))}, []found{{CodeTypeMismatch, "/minimum"}, {CodeTypeMismatch, "/maximum"}}},
		{"empty enum on a list", Spec{ID: "x", Type: List, Item: str, Enum: []Value{}}, []found{{CodeNotApplicable, "/enum"}}},
		{"minItems above maxItems", Spec{ID: "x", Type: List, Item: str, MinItems: ip(3), MaxItems: ip(2)}, []found{{CodeBoundsInverted, "/maxItems"}}},
		{"empty enum", Spec{ID: "x", Type: String, Enum: []Value{}}, []found{{CodeEmptyEnum, "/enum"}}},
		{"duplicate enum", Spec{ID: "x", Type: String, Enum: svs("a", "b", "a")}, []found{{CodeDuplicateEnum, "/enum/2"}}},
		{"duplicate decimal enum by value", Spec{ID: "x", Type: Decimal, Enum: []Value{dv("1.5"), dv("1.50")}}, []found{{CodeDuplicateEnum, "/enum/1"}}},
		{"duplicate number enum -0", Spec{ID: "x", Type: Number, Enum: []Value{nv(0), nv(math.Copysign(0, -1))}}, []found{{CodeDuplicateEnum, "/enum/1"}}},
		{"enum member of wrong type", Spec{ID: "x", Type: Integer, Enum: []Value{iv(1), sv("2")}}, []found{{CodeTypeMismatch, "/enum/1"}}},
		{"null enum member", Spec{ID: "x", Type: Integer, Enum: []Value{{}}}, []found{{CodeNullLiteral, "/enum/0"}}},
		{"enum member with NUL", Spec{ID: "x", Type: String, Enum: svs("a\x00")}, []found{{CodeInvalidLiteral, "/enum/0"}}},
		{"enum member violates bounds", Spec{ID: "x", Type: Integer, Enum: []Value{iv(1), iv(2), iv(200)}, Maximum: vp(iv(100))}, []found{{CodeEnumMemberInvalid, "/enum/2"}}},
		{"enum member too long", Spec{ID: "x", Type: String, Enum: svs("ab", "é"), MaxLength: ip(1)}, []found{{CodeEnumMemberInvalid, "/enum/0"}}},
		{"required with default", Spec{ID: "x", Type: Integer, Required: true, Default: vp(iv(1))}, []found{{CodeRequiredWithDefault, "/default"}}},
		{"null default", Spec{ID: "x", Type: Integer, Default: &Value{}}, []found{{CodeNullLiteral, "/default"}}},
		{"default of wrong type", Spec{ID: "x", Type: Integer, Default: vp(nv(1))}, []found{{CodeTypeMismatch, "/default"}}},
		{"default list of wrong item type", Spec{ID: "x", Type: List, Item: str, Default: vp(list(Integer, iv(1)))}, []found{{CodeTypeMismatch, "/default"}}},
		{"default list with mixed items", Spec{ID: "x", Type: List, Item: str, Default: vp(list(String, sv("a"), iv(1)))}, []found{{CodeInvalidLiteral, "/default"}}},
		{"default below minimum", Spec{ID: "x", Type: Integer, Minimum: vp(iv(1)), Default: vp(iv(0))}, []found{{CodeDefaultInvalid, "/default"}}},
		{"default not in enum", Spec{ID: "x", Type: String, Enum: svs("a"), Default: vp(sv("b"))}, []found{{CodeDefaultInvalid, "/default"}}},
		{"default decimal above maximum", Spec{ID: "x", Type: Decimal, Maximum: vp(dv("1")), Default: vp(dv("1.000000001"))}, []found{{CodeDefaultInvalid, "/default"}}},
		{"default list too long", Spec{ID: "x", Type: List, Item: str, MaxItems: ip(1), Default: vp(list(String, sv("a"), sv("b")))}, []found{{CodeDefaultInvalid, "/default"}}},
		{"default list item violates item", Spec{ID: "x", Type: List, Item: &Spec{Type: String, MaxLength: ip(1)}, Default: vp(list(String, sv("a"), sv("bb")))}, []found{{CodeDefaultInvalid, "/default"}}},
		{"default string over the hard limit", Spec{ID: "x", Type: String, Default: vp(sv(strings.Repeat("a", MaxStringLength+1)))}, []found{{CodeInvalidLiteral, "/default"}}},
		{"satisfaction skipped when constraints are broken", Spec{ID: "x", Type: Integer, Minimum: vp(iv(5)), Maximum: vp(iv(1)), Enum: []Value{iv(3)}, Default: vp(iv(9))},
			[]found{{CodeBoundsInverted, "/maximum"}}},
		{"several problems in order", Spec{ID: "", Type: String, Enum: []Value{}, Minimum: vp(iv(1)), MinLength: ip(-2), MaxItems: ip(1), Required: true, Default: vp(iv(1))},
			[]found{{CodeInvalidID, "/id"}, {CodeEmptyEnum, "/enum"}, {CodeNotApplicable, "/minimum"}, {CodeNegativeCount, "/minLength"}, {CodeNotApplicable, "/maxItems"}, {CodeRequiredWithDefault, "/default"}, {CodeTypeMismatch, "/default"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := c.spec.Check()
			var got []found
			for _, e := range errs {
				got = append(got, found{e.Code, e.Path})
				if e.Input != c.spec.ID || e.Message == "" || e.Error() == "" {
					t.Errorf("bad error %+v", e)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v\nwant %v\n%v", got, c.want, errs)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("problem %d: got %v, want %v (%v)", i, got[i], c.want[i], errs[i])
				}
			}
		})
	}
}

// TestCheckSpecsOfTests keeps the spec sets used by the other tests sound.
func TestCheckSpecsOfTests(t *testing.T) {
	for _, set := range [][]Spec{exampleSpecs, plainSpecs, defaultSpecs, constrainedSpecs, fuzzSpecs} {
		for _, s := range set {
			if errs := s.Check(); len(errs) > 0 {
				t.Errorf("%s: %v", s.ID, errs)
			}
		}
	}
}
