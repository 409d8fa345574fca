package values

import (
	"math"
	"strconv"
)

// number is a JSON number literal taken apart. The value is
// -?(intDigits.fracDigits) × 10^exp.
type number struct {
	neg        bool
	intDigits  string
	fracDigits string
	exp        int64 // clamped to ±expClamp, which no int64 or binary64 reaches
}

// expClamp bounds the exponent we keep, so a literal like 1e999999999999999
// costs no more than 1e9 and never overflows the arithmetic below.
const expClamp = 1 << 40

// splitNumber parses s by the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and reports whether all of
// s matched.
func splitNumber(s string) (number, bool) {
	var n number
	i := 0
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return n, false
	}
	n.intDigits = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return n, false
		}
		n.fracDigits = s[start:i]
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		negExp := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			negExp = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			if n.exp < expClamp {
				n.exp = n.exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == start {
			return n, false
		}
		n.exp = min(n.exp, expClamp)
		if negExp {
			n.exp = -n.exp
		}
	}
	return n, i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digit returns the i-th digit of intDigits followed by fracDigits.
func (n *number) digit(i int) byte {
	if i < len(n.intDigits) {
		return n.intDigits[i]
	}
	return n.fracDigits[i-len(n.intDigits)]
}

// integer returns the exact value of n when it is integral and fits int64.
// It never rounds and never allocates: a literal is an integer when its
// exact value is (5.0, 5e0 and 50e-1 are all 5). A value with a fractional
// part is not_integer even when it is also out of range.
func (n *number) integer() (int64, Code) {
	total := len(n.intDigits) + len(n.fracDigits)
	first := 0
	for first < total && n.digit(first) == '0' {
		first++
	}
	if first == total {
		return 0, "" // every zero, including -0 and 0e999, is 0
	}
	last := total - 1
	for n.digit(last) == '0' {
		last--
	}
	// value = digits[first..last] × 10^e
	e := n.exp - int64(len(n.fracDigits)) + int64(total-1-last)
	if e < 0 {
		return 0, CodeNotInteger
	}
	sig := int64(last - first + 1)
	if sig+e > 19 {
		return 0, CodeOutOfRange
	}
	var u uint64 // < 10^19 < 2^64 by the check above
	for i := first; i <= last; i++ {
		u = u*10 + uint64(n.digit(i)-'0')
	}
	for ; e > 0; e-- {
		u *= 10
	}
	if n.neg {
		if u > 1<<63 {
			return 0, CodeOutOfRange
		}
		return int64(-u), ""
	}
	if u > math.MaxInt64 {
		return 0, CodeOutOfRange
	}
	return int64(u), ""
}

// float returns the binary64 nearest to the literal lit, which must be a
// valid JSON number. Overflow to ±Inf is out_of_range; underflow to zero is
// accepted.
func float(lit string) (float64, Code) {
	f, err := strconv.ParseFloat(lit, 64)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, CodeOutOfRange
	}
	if err != nil {
		// Only ErrRange is possible for a valid literal, and only with
		// ±Inf, handled above.
		return 0, CodeInvalidNumber
	}
	return f, ""
}

// DecimalPattern is the grammar of a decimal literal as a JSON Schema
// (ECMA-262) regular expression; InputSchema advertises it.
const DecimalPattern = `^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`

// decimalParts checks s against the decimal grammar and returns its
// integer and fraction digits.
func decimalParts(s string) (neg bool, intDigits, fracDigits string, ok bool) {
	n, ok := splitNumber(s)
	if !ok || n.exp != 0 || hasExponent(s) {
		return false, "", "", false
	}
	return n.neg, n.intDigits, n.fracDigits, true
}

func hasExponent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			return true
		}
	}
	return false
}

// checkDecimal returns an invalid_decimal error when s is not a decimal
// literal within MaxDecimalDigits.
func checkDecimal(s string) *Error {
	_, in, frac, ok := decimalParts(s)
	if !ok {
		return &Error{Code: CodeInvalidDecimal,
			Message: quoteShort(s) + " is not a decimal; write digits with an optional '-' and fraction, such as 12.50 or -0.5 (no exponent, no '+', no leading zeros)"}
	}
	if d := len(in) + len(frac); d > MaxDecimalDigits {
		return &Error{Code: CodeInvalidDecimal,
			Message: "decimal has " + strconv.Itoa(d) + " digits; at most " + strconv.Itoa(MaxDecimalDigits) + " are allowed"}
	}
	return nil
}

// compareDecimal compares two valid decimal literals exactly and returns
// -1, 0 or +1. -0 equals 0 and trailing fraction zeros do not count.
func compareDecimal(a, b string) int {
	an, ai, af, _ := decimalParts(a)
	bn, bi, bf, _ := decimalParts(b)
	af, bf = trimRight0(af), trimRight0(bf)
	aZero := ai == "0" && af == ""
	bZero := bi == "0" && bf == ""
	if aZero {
		an = false
	}
	if bZero {
		bn = false
	}
	if an != bn {
		if an {
			return -1
		}
		return 1
	}
	c := compareMagnitude(ai, af, bi, bf)
	if an {
		return -c
	}
	return c
}

// compareMagnitude compares integer parts without leading zeros (other
// than a lone "0") and fraction parts without trailing zeros.
func compareMagnitude(ai, af, bi, bf string) int {
	if len(ai) != len(bi) {
		if len(ai) < len(bi) {
			return -1
		}
		return 1
	}
	if ai != bi {
		if ai < bi {
			return -1
		}
		return 1
	}
	// Fraction digit strings compare lexicographically: a proper prefix is
	// the smaller value because the trailing zeros are gone.
	switch {
	case af < bf:
		return -1
	case af > bf:
		return 1
	}
	return 0
}

func trimRight0(s string) string {
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return s
}
