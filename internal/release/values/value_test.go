package values

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestType(t *testing.T) {
	for _, ty := range []Type{String, Integer, Number, Decimal, Boolean} {
		if !ty.Valid() || !ty.Scalar() {
			t.Errorf("%s: Valid %v Scalar %v", ty, ty.Valid(), ty.Scalar())
		}
	}
	if !List.Valid() || List.Scalar() {
		t.Error("list")
	}
	for _, ty := range []Type{"", "float", "String", "array", "object"} {
		if ty.Valid() || ty.Scalar() {
			t.Errorf("%q is valid", ty)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	var zero Value
	if zero.Type() != "" || zero.String() != "<invalid>" || string(zero.AppendJSON(nil)) != "null" {
		t.Errorf("zero value: %q %q %q", zero.Type(), zero.String(), zero.AppendJSON(nil))
	}
	v := iv(42)
	if v.Int() != 42 || v.Str() != "" || v.Float() != 0 || v.Decimal() != "" || v.Bool() || v.Items() != nil || v.ItemType() != "" {
		t.Error("integer accessors")
	}
	if sv("x").Str() != "x" || nv(1.5).Float() != 1.5 || dv("1.50").Decimal() != "1.50" || !bv(true).Bool() || bv(false).Bool() {
		t.Error("scalar accessors")
	}
	items := []Value{sv("a"), sv("b")}
	l := ListValue(String, items)
	items[0] = sv("changed")
	got := l.Items()
	got[1] = sv("changed too")
	if l.ItemType() != String || len(l.Items()) != 2 || l.Items()[0].Str() != "a" || l.Items()[1].Str() != "b" {
		t.Errorf("list is not immutable: %v", l)
	}
}

func TestValueEqual(t *testing.T) {
	cases := []struct {
		a, b Value
		want bool
	}{
		{iv(1), iv(1), true},
		{iv(1), iv(2), false},
		{iv(1), nv(1), false},
		{nv(0), nv(math.Copysign(0, -1)), true},
		{nv(0.1), nv(0.1), true},
		{dv("1.5"), dv("1.5"), true},
		{dv("1.5"), dv("1.50"), false},
		{dv("1"), sv("1"), false},
		{sv("a"), sv("a"), true},
		{bv(true), bv(true), true},
		{bv(true), bv(false), false},
		{list(String, sv("a")), list(String, sv("a")), true},
		{list(String, sv("a"), sv("b")), list(String, sv("b"), sv("a")), false},
		{list(String), list(Integer), false},
		{list(String, sv("a")), list(String, sv("a"), sv("a")), false},
		{Value{}, Value{}, true},
		{Value{}, sv(""), false},
	}
	for _, c := range cases {
		if got := c.a.Equal(c.b); got != c.want {
			t.Errorf("%v.Equal(%v) = %v", c.a, c.b, got)
		}
		if got := c.b.Equal(c.a); got != c.want {
			t.Errorf("%v.Equal(%v) = %v (not symmetric)", c.b, c.a, got)
		}
	}
}

func TestValueJSONAndString(t *testing.T) {
	cases := []struct {
		v          Value
		json, text string
	}{
		{sv("a\"é\x00"), `"a\"é\u0000"`, `"a\"é\x00"`},
		{iv(math.MinInt64), `-9223372036854775808`, `-9223372036854775808`},
		{nv(0.1), `0.1`, `0.1`},
		{nv(100), `100`, `100`},
		{nv(1e20), `100000000000000000000`, `100000000000000000000`},
		{nv(1e21), `1e+21`, `1e+21`},
		{nv(1e-6), `0.000001`, `0.000001`},
		{nv(1e-7), `1e-7`, `1e-7`},
		{nv(-1.5e-300), `-1.5e-300`, `-1.5e-300`},
		{nv(math.Copysign(0, -1)), `-0`, `-0`},
		{nv(math.MaxFloat64), `1.7976931348623157e+308`, `1.7976931348623157e+308`},
		{dv("-0.50"), `"-0.50"`, `-0.50`},
		{bv(false), `false`, `false`},
		{list(Integer, iv(1), iv(2)), `[1,2]`, `[1, 2]`},
		{list(String, sv("a")), `["a"]`, `["a"]`},
		{list(String), `[]`, `[]`},
		{nv(math.NaN()), `null`, `null`},
	}
	for _, c := range cases {
		if got := string(c.v.AppendJSON([]byte("x"))); got != "x"+c.json {
			t.Errorf("AppendJSON(%v) = %s, want %s", c.v, got[1:], c.json)
		}
		if got := c.v.String(); got != c.text {
			t.Errorf("String() = %s, want %s", got, c.text)
		}
	}
}

func TestDecimalValue(t *testing.T) {
	for _, s := range []string{"0", "-0", "0.0", "12.50", "-123.456", "1" + strings.Repeat("0", 63)} {
		v, err := DecimalValue(s)
		if err != nil || v.Decimal() != s || v.Type() != Decimal {
			t.Errorf("%q: %v %v", s, v, err)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "00", "1.", ".5", "1e5", "1E5", "0x1", " 1", "1 ", "1,5", "--1", "1" + strings.Repeat("0", 64), "NaN", "١"} {
		v, err := DecimalValue(s)
		e, ok := err.(*Error)
		if !ok || e.Code != CodeInvalidDecimal || v.Type() != "" {
			t.Errorf("%q: got %v, %v", s, v, err)
		}
	}
}

// TestIntegerExact compares the exact integer rule with math/big on
// random literals built around interesting values.
func TestIntegerExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	mantissas := []string{"0", "1", "5", "9223372036854775807", "9223372036854775808", "922337203685477580", "9007199254740993", "123456789", "1000", "18446744073709551616"}
	var lits []string
	for range 20000 {
		m := mantissas[r.IntN(len(mantissas))]
		if r.IntN(3) == 0 {
			m = strconv.FormatUint(r.Uint64()>>r.IntN(64), 10)
		}
		lit := m
		if p := r.IntN(len(m) + 2); p > 0 && p < len(m) && m[0] != '0' {
			lit = m[:p] + "." + m[p:]
		}
		if r.IntN(3) == 0 && !strings.Contains(lit, ".") {
			lit += "." + strings.Repeat("0", r.IntN(4)) + strconv.Itoa(r.IntN(3))
		}
		if r.IntN(2) == 0 {
			lit += "e" + []string{"", "+", "-"}[r.IntN(3)] + strconv.Itoa(r.IntN(25))
		}
		if r.IntN(2) == 0 {
			lit = "-" + lit
		}
		lits = append(lits, lit)
	}
	lits = append(lits, "0e0", "-0.0e-0", "0.000e99", "10e-1", "1.0e1", "9.223372036854775807e18", "-9.223372036854775808e18", "9.223372036854775808e18", "1E+2", "100E-2")
	minI, maxI := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	for _, lit := range lits {
		n, ok := splitNumber(lit)
		if !ok {
			t.Fatalf("test literal %q is not JSON", lit)
		}
		got, code := n.integer()
		var want Code
		rat, ok := new(big.Rat).SetString(lit)
		if !ok {
			t.Fatalf("big.Rat rejects %q", lit)
		}
		switch {
		case !rat.IsInt():
			want = CodeNotInteger
		case rat.Num().Cmp(minI) < 0 || rat.Num().Cmp(maxI) > 0:
			want = CodeOutOfRange
		}
		if code != want || (want == "" && got != rat.Num().Int64()) {
			t.Errorf("%s: got %d %q, want %s %q", lit, got, code, rat.Num(), want)
		}
	}
}

// TestHugeExponentsAreCheap: exponents are never expanded.
func TestHugeExponentsAreCheap(t *testing.T) {
	lits := []string{"1e999999999", "1e-999999999", "1.5e999999999999999999999999999", "-0e999999999", "1" + strings.Repeat("0", 100000) + "e-100000"}
	for _, lit := range lits {
		allocs := testing.AllocsPerRun(10, func() {
			n, _ := splitNumber(lit)
			n.integer()
		})
		if allocs != 0 {
			t.Errorf("%.20s: %v allocations", lit, allocs)
		}
	}
	for _, c := range []struct {
		lit  string
		want Code
	}{{"1e999999999", CodeOutOfRange}, {"1e-999999999", CodeNotInteger}, {"1e-999999999999999999999", CodeNotInteger}, {"0e-999999999999999999999", ""}, {"5e99999999999999999999999999", CodeOutOfRange}, {"-0e999999999", ""}, {"1" + strings.Repeat("0", 100000) + "e-100000", ""}} {
		n, _ := splitNumber(c.lit)
		if _, code := n.integer(); code != c.want {
			t.Errorf("%.20s: %q, want %q", c.lit, code, c.want)
		}
	}
}

func TestSplitNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-1.5", "1e5", "1E+5", "1e-5", "0.0", "123.456e789"} {
		if _, ok := splitNumber(s); !ok {
			t.Errorf("%q rejected", s)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-01", ".5", "5.", "1e", "1e+", "0x10", "Inf", "-Inf", "NaN", "1_000", " 1", "1 ", "1.5.5", "1e5e5", "١"} {
		if _, ok := splitNumber(s); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestCompareDecimal compares the exact decimal order with math/big.
func TestCompareDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gen := func() string {
		digits := func(n int) string {
			b := make([]byte, n)
			for i := range b {
				b[i] = "0123456789"[r.IntN(10)]
			}
			return string(b)
		}
		s := strconv.Itoa(r.IntN(3))
		if r.IntN(2) == 0 {
			s = strconv.FormatInt(r.Int64N(1000000), 10)
		}
		if r.IntN(2) == 0 {
			s += "." + digits(1+r.IntN(6))
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		return s
	}
	for range 20000 {
		a, b := gen(), gen()
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if got, want := compareDecimal(a, b), ra.Cmp(rb); got != want {
			t.Fatalf("compareDecimal(%s, %s) = %d, want %d", a, b, got, want)
		}
	}
}

func TestFloat(t *testing.T) {
	cases := []struct {
		lit  string
		want float64
		code Code
	}{
		{"0.1", 0.1, ""},
		{"1e400", 0, CodeOutOfRange},
		{"-1e400", 0, CodeOutOfRange},
		{"1.7976931348623157e308", math.MaxFloat64, ""},
		{"1.7976931348623159e308", 0, CodeOutOfRange},
		{"1e-400", 0, ""},
		{"4.9e-324", 5e-324, ""},
		{"1e999999999999999999", 0, CodeOutOfRange},
	}
	for _, c := range cases {
		f, code := float(c.lit)
		if code != c.code || f != c.want {
			t.Errorf("%s: %v %q", c.lit, f, code)
		}
	}
}
