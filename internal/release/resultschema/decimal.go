package resultschema

import (
	"math"
	"strconv"
	"strings"
)

// decimal is the exact value of a JSON number literal: 0.digits × 10^exp,
// negated when neg. digits has no leading or trailing zeros; zero is the
// empty digits with exp 0 and neg false, so -0 equals 0.
//
// Comparing decimals costs time linear in the literals and never
// allocates a power of ten, unlike math/big, so "1e999999999" is as cheap
// as "1".
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxExp saturates written exponents. A saturated value is far outside
// binary64, so it is rejected before its exact magnitude could matter.
const maxExp = 1 << 30

// parseDecimal parses a JSON number literal. ok is false when lit is not
// one.
func parseDecimal(lit string) (d decimal, ok bool) {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(lit) && lit[i] == '0':
		i++
	case i < len(lit) && lit[i] >= '1' && lit[i] <= '9':
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
	default:
		return decimal{}, false
	}
	intPart := lit[intStart:i]
	var frac string
	if i < len(lit) && lit[i] == '.' {
		i++
		start := i
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
		if i == start {
			return decimal{}, false
		}
		frac = lit[start:i]
	}
	exp := 0
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		expNeg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			expNeg = lit[i] == '-'
			i++
		}
		start := i
		for ; i < len(lit) && isDigit(lit[i]); i++ {
			if exp < maxExp {
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if i == start {
			return decimal{}, false
		}
		exp = min(exp, maxExp)
		if expNeg {
			exp = -exp
		}
	}
	if i != len(lit) {
		return decimal{}, false
	}
	// The value is 0.(intPart frac) × 10^(len(intPart)+exp); drop the
	// zeros that do not change it.
	exp += len(intPart)
	digits := intPart + frac
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = strings.TrimRight(digits[lead:], "0")
	if digits == "" {
		return decimal{}, true
	}
	d.digits = digits
	d.exp = exp - lead
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d decimal) isZero() bool { return d.digits == "" }

// isInteger reports whether d has no fractional part.
func (d decimal) isInteger() bool { return d.isZero() || len(d.digits) <= d.exp }

// fitsBinary64 reports whether d rounds to a finite binary64 value that is
// zero only when d is: no overflow to infinity, no underflow to zero.
func (d decimal) fitsBinary64() bool {
	if d.isZero() {
		return true
	}
	// 10^308 < MaxFloat64 < 10^309 and the smallest subnormal is about
	// 4.9 × 10^-324; decide the clear cases without parsing.
	switch {
	case d.exp > 309:
		return false
	case d.exp < -323:
		return false
	}
	f, err := strconv.ParseFloat("0."+d.digits+"e"+strconv.Itoa(d.exp), 64)
	return err == nil && f != 0 && !math.IsInf(f, 0)
}

// cmp compares d and e by value: -1, 0 or +1.
func (d decimal) cmp(e decimal) int {
	ds, es := d.sign(), e.sign()
	if ds != es {
		if ds < es {
			return -1
		}
		return 1
	}
	if ds == 0 {
		return 0
	}
	mag := 0 // compare magnitudes
	switch {
	case d.exp != e.exp:
		mag = 1
		if d.exp < e.exp {
			mag = -1
		}
	default:
		// Same exponent: digit strings without trailing zeros compare
		// like the numbers they stand for.
		mag = strings.Compare(d.digits, e.digits)
	}
	return mag * ds
}

func (d decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// key is a canonical spelling of d: equal values, and only those, have
// equal keys.
func (d decimal) key() string {
	if d.isZero() {
		return "0"
	}
	s := d.digits + "e" + strconv.Itoa(d.exp)
	if d.neg {
		s = "-" + s
	}
	return s
}
