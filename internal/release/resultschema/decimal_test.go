package resultschema

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		lit     string
		key     string
		integer bool
		fits    bool
	}{
		{"0", "0", true, true},
		{"-0", "0", true, true},
		{"-0.000e-5", "0", true, true},
		{"0e999999999999999999999", "0", true, true},
		{"1", "1e1", true, true},
		{"1.0", "1e1", true, true},
		{"100", "1e3", true, true},
		{"1e2", "1e3", true, true},
		{"0.01e4", "1e3", true, true},
		{"-12.5", "-125e2", false, true},
		{"1.25E-1", "125e0", false, true},
		{"1e400", "1e401", true, false},
		{"1e-400", "1e-399", false, false},
		{"1e999999999", "1e1000000000", true, false},
		{"1e9999999999999", "1e" + fmt.Sprint(maxExp+1), true, false},
		{"1.7976931348623157e308", "17976931348623157e309", true, true},
		{"1.7976931348623159e308", "17976931348623159e309", true, false},
		{"4.9e-324", "49e-323", false, true},
		{"2e-324", "2e-323", false, false},
		{"9007199254740993", "9007199254740993e16", true, true},
	}
	for _, tc := range tests {
		d, ok := parseDecimal(tc.lit)
		if !ok {
			t.Errorf("parseDecimal(%q) failed", tc.lit)
			continue
		}
		if d.key() != tc.key || d.isInteger() != tc.integer || d.fitsBinary64() != tc.fits {
			t.Errorf("parseDecimal(%q): key %s integer %t fits %t; want %s %t %t",
				tc.lit, d.key(), d.isInteger(), d.fitsBinary64(), tc.key, tc.integer, tc.fits)
		}
	}
	for _, lit := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "1_000", "NaN", "Infinity", "1 ", " 1", "--1"} {
		if _, ok := parseDecimal(lit); ok {
			t.Errorf("parseDecimal(%q) accepted a literal JSON does not allow", lit)
		}
	}
}

// randomLiteral returns a JSON number literal with small exponents, so
// math/big can judge it.
func randomLiteral(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('-')
	}
	digits := func(n int) {
		for i := 0; i < n; i++ {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(3) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + r.IntN(9)))
		digits(r.IntN(4))
	}
	if r.IntN(2) == 0 {
		b.WriteByte('.')
		digits(1 + r.IntN(4))
	}
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "e%d", r.IntN(11)-5)
	}
	return b.String()
}

// TestDecimalMatchesBigRat compares the decimal arithmetic with math/big on
// random literals.
func TestDecimalMatchesBigRat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		a, b := randomLiteral(r), randomLiteral(r)
		if i%4 == 0 {
			b = a + "0" // often equal values written differently
			if !strings.ContainsAny(a, ".e") {
				b = a + ".0"
			}
		}
		compareWithBigRat(t, a, b)
	}
}

func compareWithBigRat(t testing.TB, a, b string) {
	t.Helper()
	da, oka := parseDecimal(a)
	db, okb := parseDecimal(b)
	ra, okra := new(big.Rat).SetString(a)
	rb, okrb := new(big.Rat).SetString(b)
	if !oka || !okb || !okra || !okrb {
		t.Fatalf("cannot parse %q or %q", a, b)
	}
	if got, want := da.cmp(db), ra.Cmp(rb); got != want {
		t.Fatalf("cmp(%s, %s) = %d, want %d", a, b, got, want)
	}
	if got, want := da.key() == db.key(), ra.Cmp(rb) == 0; got != want {
		t.Fatalf("keys of %s and %s: %s, %s; equal values: %t", a, b, da.key(), db.key(), want)
	}
	if da.isInteger() != ra.IsInt() {
		t.Fatalf("isInteger(%s) = %t", a, da.isInteger())
	}
}

// FuzzDecimal compares the decimal arithmetic with math/big on literals
// whose exponents math/big handles cheaply.
func FuzzDecimal(f *testing.F) {
	f.Add("1", "1.0")
	f.Add("-0", "0e5")
	f.Add("12.5e-1", "1.25")
	f.Add("0.000100", "1e-4")
	f.Fuzz(func(t *testing.T, a, b string) {
		_, oka := parseDecimal(a)
		_, okb := parseDecimal(b)
		if !oka || !okb || len(a) > 64 || len(b) > 64 || !smallExponent(a) || !smallExponent(b) {
			return
		}
		compareWithBigRat(t, a, b)
	})
}

// smallExponent reports whether the exponent written in lit, if any, is
// below 10,000 in magnitude.
func smallExponent(lit string) bool {
	i := strings.IndexAny(lit, "eE")
	if i < 0 {
		return true
	}
	exp := strings.TrimLeft(strings.TrimLeft(lit[i+1:], "+-"), "0")
	return len(exp) <= 4
}
