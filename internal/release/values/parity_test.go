package values

import (
	"math"
	"strings"
	"testing"
)

// schemaAgreement says how the advertised InputSchema relates to the core
// for a parity case.
type schemaAgreement int

const (
	agrees    schemaAgreement = iota // the schema accepts exactly when the core does
	schemaGap                        // the core rejects what JSON Schema cannot express (documented)
	noSchema                         // not validated against the schema (huge exponents)
)

// parityCase is one intent given to both front doors.
type parityCase struct {
	name   string
	specs  []Spec
	cli    map[string][]string
	mcp    string
	want   Map  // for success
	code   Code // for failure
	path   string
	schema schemaAgreement
}

var (
	longCLI, longJSON         = strings.Repeat("a", MaxStringLength+1), jsonString(strings.Repeat("a", MaxStringLength+1))
	maxCLI, maxJSON           = strings.Repeat("é", MaxStringLength), jsonString(strings.Repeat("é", MaxStringLength))
	listCLI1025, listJSON1025 = manyItems(MaxListItems+1, "1", "1")
	listCLI1024, listJSON1024 = manyItems(MaxListItems, "1", "1")
	dec64                     = strings.Repeat("9", 32) + "." + strings.Repeat("9", 32)
	dec65                     = strings.Repeat("9", 33) + "." + strings.Repeat("9", 32)
)

func ints(n int, v int64) []Value {
	out := make([]Value, n)
	for i := range out {
		out[i] = iv(v)
	}
	return out
}

var parityCases = []parityCase{
	// The example of docs/reference.md §1.
	{name: "example default applied", specs: exampleSpecs,
		cli:  map[string][]string{"env": cli("stage")},
		mcp:  `{"env":"stage"}`,
		want: Map{"env": ex(sv("stage")), "limit": df(iv(10))}},
	{name: "example all given", specs: exampleSpecs,
		cli:  map[string][]string{"env": cli("prod"), "limit": cli("5"), "amount": cli("12.50"), "tags": cli("b", "a", "c"), "target": cli("web-1")},
		mcp:  `{"target":"web-1","tags":["b","a","c"],"amount":"12.50","limit":5,"env":"prod"}`,
		want: Map{"env": ex(sv("prod")), "limit": ex(iv(5)), "amount": ex(dv("12.50")), "tags": ex(list(String, sv("b"), sv("a"), sv("c"))), "target": ex(sv("web-1"))}},
	{name: "explicit value equal to default stays explicit", specs: exampleSpecs,
		cli:  map[string][]string{"env": cli("prod"), "limit": cli("10")},
		mcp:  `{"env":"prod","limit":10}`,
		want: Map{"env": ex(sv("prod")), "limit": ex(iv(10))}},
	{name: "enum miss", specs: exampleSpecs,
		cli: map[string][]string{"env": cli("dev")}, mcp: `{"env":"dev"}`,
		code: CodeNotInEnum, path: "/env"},
	{name: "missing required", specs: exampleSpecs,
		cli: map[string][]string{"limit": cli("5")}, mcp: `{"limit":5}`,
		code: CodeMissingRequired, path: "/env"},
	{name: "unknown flag or property", specs: exampleSpecs,
		cli: map[string][]string{"env": cli("prod"), "nope": cli("1")}, mcp: `{"env":"prod","nope":1}`,
		code: CodeUnknownInput, path: "/nope"},
	{name: "least unknown name first", specs: exampleSpecs,
		cli: map[string][]string{"zz": cli("1"), "aa": cli("1")}, mcp: `{"zz":1,"aa":1}`,
		code: CodeUnknownInput, path: "/aa"},
	{name: "unknown before value errors", specs: exampleSpecs,
		cli: map[string][]string{"limit": cli("0"), "bogus": cli("1")}, mcp: `{"limit":0,"bogus":1}`,
		code: CodeUnknownInput, path: "/bogus"},
	{name: "value errors in declaration order", specs: exampleSpecs,
		cli: map[string][]string{"amount": cli("x"), "limit": cli("0"), "env": cli("stage")}, mcp: `{"amount":"x","limit":0,"env":"stage"}`,
		code: CodeBelowMinimum, path: "/limit"},
	{name: "value errors before missing required", specs: exampleSpecs,
		cli: map[string][]string{"limit": cli("500")}, mcp: `{"limit":500}`,
		code: CodeAboveMaximum, path: "/limit"},
	{name: "integer bound inclusive", specs: exampleSpecs,
		cli:  map[string][]string{"env": cli("prod"), "limit": cli("1e2")},
		mcp:  `{"env":"prod","limit":1e2}`,
		want: Map{"env": ex(sv("prod")), "limit": ex(iv(100))}},

	// Integers are exact.
	{name: "integer past 2^53", specs: plainSpecs,
		cli: map[string][]string{"i": cli("9007199254740993")}, mcp: `{"i":9007199254740993}`,
		want: Map{"i": ex(iv(9007199254740993))}},
	{name: "int64 max", specs: plainSpecs,
		cli: map[string][]string{"i": cli("9223372036854775807")}, mcp: `{"i":9223372036854775807}`,
		want: Map{"i": ex(iv(math.MaxInt64))}},
	{name: "int64 min", specs: plainSpecs,
		cli: map[string][]string{"i": cli("-9223372036854775808")}, mcp: `{"i":-9223372036854775808}`,
		want: Map{"i": ex(iv(math.MinInt64))}},
	{name: "int64 max plus one", specs: plainSpecs,
		cli: map[string][]string{"i": cli("9223372036854775808")}, mcp: `{"i":9223372036854775808}`,
		code: CodeOutOfRange, path: "/i", schema: schemaGap},
	{name: "int64 min minus one", specs: plainSpecs,
		cli: map[string][]string{"i": cli("-9223372036854775809")}, mcp: `{"i":-9223372036854775809}`,
		code: CodeOutOfRange, path: "/i", schema: schemaGap},
	{name: "5.0 is the integer 5", specs: plainSpecs,
		cli: map[string][]string{"i": cli("5.0")}, mcp: `{"i":5.0}`,
		want: Map{"i": ex(iv(5))}},
	{name: "50e-1 and 0.5E1 are 5", specs: plainSpecs,
		cli: map[string][]string{"i": cli("50e-1"), "li": cli("0.5E1", "500e-2")}, mcp: `{"i":50e-1,"li":[0.5E1,500e-2]}`,
		want: Map{"i": ex(iv(5)), "li": ex(list(Integer, iv(5), iv(5)))}},
	{name: "1.5 is not an integer", specs: plainSpecs,
		cli: map[string][]string{"i": cli("1.5")}, mcp: `{"i":1.5}`,
		code: CodeNotInteger, path: "/i"},
	{name: "integer -0 is 0", specs: plainSpecs,
		cli: map[string][]string{"i": cli("-0")}, mcp: `{"i":-0}`,
		want: Map{"i": ex(iv(0))}},
	{name: "integer huge exponent", specs: plainSpecs,
		cli: map[string][]string{"i": cli("1e999999999")}, mcp: `{"i":1e999999999}`,
		code: CodeOutOfRange, path: "/i", schema: noSchema},
	{name: "integer tiny exponent", specs: plainSpecs,
		cli: map[string][]string{"i": cli("1e-999999999")}, mcp: `{"i":1e-999999999}`,
		code: CodeNotInteger, path: "/i", schema: noSchema},
	{name: "list of integers exact and in order", specs: plainSpecs,
		cli:  map[string][]string{"li": cli("9007199254740993", "-5", "5.0")},
		mcp:  `{"li":[9007199254740993,-5,5.0]}`,
		want: Map{"li": ex(list(Integer, iv(9007199254740993), iv(-5), iv(5)))}},
	{name: "list item not an integer", specs: plainSpecs,
		cli: map[string][]string{"li": cli("1", "2.5")}, mcp: `{"li":[1,2.5]}`,
		code: CodeNotInteger, path: "/li/1"},

	// Numbers are finite binary64.
	{name: "number 1e400 overflows", specs: plainSpecs,
		cli: map[string][]string{"n": cli("1e400")}, mcp: `{"n":1e400}`,
		code: CodeOutOfRange, path: "/n", schema: schemaGap},
	{name: "number -0", specs: plainSpecs,
		cli: map[string][]string{"n": cli("-0")}, mcp: `{"n":-0}`,
		want: Map{"n": ex(nv(math.Copysign(0, -1)))}},
	{name: "number underflow to zero", specs: plainSpecs,
		cli: map[string][]string{"n": cli("1e-400"), "ln": cli("0.1", "1E21", "-2.5e-7")}, mcp: `{"n":1e-400,"ln":[0.1,1E21,-2.5e-7]}`,
		want: Map{"n": ex(nv(0)), "ln": ex(list(Number, nv(0.1), nv(1e21), nv(-2.5e-7)))}},
	{name: "number bounds", specs: constrainedSpecs,
		cli: map[string][]string{"ratio": cli("0.49999")}, mcp: `{"ratio":0.49999}`,
		code: CodeBelowMinimum, path: "/ratio"},
	{name: "number -0 matches enum 0", specs: constrainedSpecs,
		cli: map[string][]string{"zero": cli("-0"), "ratio": cli("1.0")}, mcp: `{"zero":-0,"ratio":1.0}`,
		want: Map{"zero": ex(nv(math.Copysign(0, -1))), "ratio": ex(nv(1)), "dry": df(bv(true))}},

	// Decimals are exact strings.
	{name: "decimal with 30 digits kept as written", specs: plainSpecs,
		cli: map[string][]string{"d": cli("123456789012345.678901234567890")}, mcp: `{"d":"123456789012345.678901234567890"}`,
		want: Map{"d": ex(dv("123456789012345.678901234567890"))}},
	{name: "decimal with 64 digits", specs: plainSpecs,
		cli: map[string][]string{"d": cli("-" + dec64)}, mcp: `{"d":"-` + dec64 + `"}`,
		want: Map{"d": ex(dv("-" + dec64))}},
	{name: "decimal with 65 digits", specs: plainSpecs,
		cli: map[string][]string{"d": cli(dec65)}, mcp: `{"d":"` + dec65 + `"}`,
		code: CodeInvalidDecimal, path: "/d", schema: schemaGap},
	{name: "decimal with exponent", specs: plainSpecs,
		cli: map[string][]string{"d": cli("1e5")}, mcp: `{"d":"1e5"}`,
		code: CodeInvalidDecimal, path: "/d"},
	{name: "decimal with leading zero", specs: plainSpecs,
		cli: map[string][]string{"d": cli("01.5")}, mcp: `{"d":"01.5"}`,
		code: CodeInvalidDecimal, path: "/d"},
	{name: "decimal list item bad", specs: plainSpecs,
		cli: map[string][]string{"ld": cli("1.5", ".5")}, mcp: `{"ld":["1.5",".5"]}`,
		code: CodeInvalidDecimal, path: "/ld/1"},
	{name: "decimal bound compared exactly", specs: constrainedSpecs,
		cli: map[string][]string{"price": cli("0.0099999999999999999999")}, mcp: `{"price":"0.0099999999999999999999"}`,
		code: CodeBelowMinimum, path: "/price", schema: schemaGap},
	{name: "decimal at bound with trailing zeros", specs: constrainedSpecs,
		cli: map[string][]string{"price": cli("1000.000"), "unit": cli("0.5", "1.0000", "-0")}, mcp: `{"price":"1000.000","unit":["0.5","1.0000","-0"]}`,
		want: Map{"price": ex(dv("1000.000")), "unit": ex(list(Decimal, dv("0.5"), dv("1.0000"), dv("-0"))), "dry": df(bv(true))}},
	{name: "decimal list item above maximum", specs: constrainedSpecs,
		cli: map[string][]string{"unit": cli("0.5", "1.0001")}, mcp: `{"unit":["0.5","1.0001"]}`,
		code: CodeAboveMaximum, path: "/unit/1", schema: schemaGap},
	{name: "decimal enum matches as written", specs: constrainedSpecs,
		cli: map[string][]string{"half": cli("1.50")}, mcp: `{"half":"1.50"}`,
		code: CodeNotInEnum, path: "/half"},

	// Strings are valid Unicode, counted in code points.
	{name: "string length in code points fits", specs: constrainedSpecs,
		cli: map[string][]string{"name": cli("éé"), "greet": cli("日本")}, mcp: `{"name":"\u00e9\u00e9","greet":"日本"}`,
		want: Map{"name": ex(sv("éé")), "greet": ex(sv("日本")), "dry": df(bv(true))}},
	{name: "string too long in code points", specs: constrainedSpecs,
		cli: map[string][]string{"name": cli("ééé")}, mcp: `{"name":"ééé"}`,
		code: CodeTooLong, path: "/name"},
	{name: "string too short", specs: constrainedSpecs,
		cli: map[string][]string{"name": cli("")}, mcp: `{"name":""}`,
		code: CodeTooShort, path: "/name"},
	{name: "empty string", specs: plainSpecs,
		cli: map[string][]string{"s": cli("")}, mcp: `{"s":""}`,
		want: Map{"s": ex(sv(""))}},
	{name: "NUL in string", specs: plainSpecs,
		cli: map[string][]string{"s": cli("a\x00b")}, mcp: `{"s":"a\u0000b"}`,
		code: CodeInvalidString, path: "/s", schema: schemaGap},
	{name: "string at the hard limit", specs: plainSpecs,
		cli: map[string][]string{"s": cli(maxCLI)}, mcp: `{"s":` + maxJSON + `}`,
		want: Map{"s": ex(sv(maxCLI))}},
	{name: "string over the hard limit", specs: plainSpecs,
		cli: map[string][]string{"s": cli(longCLI)}, mcp: `{"s":` + longJSON + `}`,
		code: CodeTooLong, path: "/s", schema: schemaGap},
	{name: "unicode enum miss", specs: constrainedSpecs,
		cli: map[string][]string{"greet": cli("hello")}, mcp: `{"greet":"hello"}`,
		code: CodeNotInEnum, path: "/greet"},

	// Lists keep order and check items.
	{name: "list item too long", specs: constrainedSpecs,
		cli: map[string][]string{"short": cli("ok", "toolong")}, mcp: `{"short":["ok","toolong"]}`,
		code: CodeTooLong, path: "/short/1"},
	{name: "list too many items", specs: constrainedSpecs,
		cli: map[string][]string{"short": cli("a", "b", "c", "d")}, mcp: `{"short":["a","b","c","d"]}`,
		code: CodeTooManyItems, path: "/short"},
	{name: "list too few items", specs: constrainedSpecs,
		cli: map[string][]string{"short": cli("a")}, mcp: `{"short":["a"]}`,
		code: CodeTooFewItems, path: "/short"},
	{name: "list count checked before items", specs: constrainedSpecs,
		cli: map[string][]string{"short": cli("toolong")}, mcp: `{"short":["toolong"]}`,
		code: CodeTooFewItems, path: "/short"},
	{name: "list of booleans in order", specs: plainSpecs,
		cli: map[string][]string{"lb": cli("true", "false", "true")}, mcp: `{"lb":[true,false,true]}`,
		want: Map{"lb": ex(list(Boolean, bv(true), bv(false), bv(true)))}},
	{name: "list at the hard limit", specs: plainSpecs,
		cli: map[string][]string{"li": listCLI1024}, mcp: `{"li":` + listJSON1024 + `}`,
		want: Map{"li": ex(ListValue(Integer, ints(MaxListItems, 1)))}},
	{name: "list over the hard limit", specs: plainSpecs,
		cli: map[string][]string{"li": listCLI1025}, mcp: `{"li":` + listJSON1025 + `}`,
		code: CodeTooManyItems, path: "/li", schema: schemaGap},

	// Booleans and defaults.
	{name: "booleans", specs: plainSpecs,
		cli: map[string][]string{"b": cli("true")}, mcp: `{"b":true}`,
		want: Map{"b": ex(bv(true))}},
	{name: "boolean false overrides a true default", specs: constrainedSpecs,
		cli: map[string][]string{"dry": cli("false")}, mcp: `{"dry":false}`,
		want: Map{"dry": ex(bv(false))}},
	{name: "every default applied, none explicit", specs: defaultSpecs,
		cli: map[string][]string{}, mcp: `{}`,
		want: Map{"s": df(sv("x")), "i": df(iv(7)), "n": df(nv(2.5)), "d": df(dv("9.99")), "b": df(bv(true)), "tags": df(list(String, sv("a"), sv("b")))}},
	{name: "defaults mixed with explicit values", specs: defaultSpecs,
		cli:  map[string][]string{"i": cli("7"), "tags": cli("z")},
		mcp:  `{"i":7,"tags":["z"]}`,
		want: Map{"s": df(sv("x")), "i": ex(iv(7)), "n": df(nv(2.5)), "d": df(dv("9.99")), "b": df(bv(true)), "tags": ex(list(String, sv("z")))}},

	// Pointers are escaped.
	{name: "id with slash and tilde", specs: constrainedSpecs,
		cli: map[string][]string{"a/b~c": cli("1.5")}, mcp: `{"a/b~c":1.5}`,
		code: CodeNotInteger, path: "/a~1b~0c"},
}

// TestParity is invariant I3: the CLI strings and the MCP arguments for the
// same intent give Equal maps with byte-identical invoke frames, or errors
// with the same code, input and path.
func TestParity(t *testing.T) {
	for _, c := range parityCases {
		t.Run(c.name, func(t *testing.T) {
			fromCLI, cliErr := FromCLI(c.specs, c.cli)
			fromMCP, mcpErr := FromArguments(c.specs, []byte(c.mcp))
			if c.code != "" {
				if cliErr == nil || mcpErr == nil {
					t.Fatalf("want %s at %s; CLI error %v, MCP error %v", c.code, c.path, cliErr, mcpErr)
				}
				if cliErr.Code != c.code || cliErr.Path != c.path {
					t.Errorf("CLI: got %s at %q (%v); want %s at %q", cliErr.Code, cliErr.Path, cliErr, c.code, c.path)
				}
				if !sameError(cliErr, mcpErr) {
					t.Errorf("doors differ: CLI %s %q %q, MCP %s %q %q", cliErr.Code, cliErr.Input, cliErr.Path, mcpErr.Code, mcpErr.Input, mcpErr.Path)
				}
				if want := firstToken(c.path); cliErr.Input != want {
					t.Errorf("Input = %q, want %q", cliErr.Input, want)
				}
				if cliErr.Message == "" || cliErr.Message != mcpErr.Message {
					t.Errorf("messages differ:\nCLI %s\nMCP %s", cliErr.Message, mcpErr.Message)
				}
				return
			}
			if cliErr != nil || mcpErr != nil {
				t.Fatalf("want success; CLI error %v, MCP error %v", cliErr, mcpErr)
			}
			if !fromCLI.Equal(c.want) {
				t.Errorf("CLI map %s, want %s", frame(fromCLI), frame(c.want))
			}
			if !fromMCP.Equal(c.want) {
				t.Errorf("MCP map %s, want %s", frame(fromMCP), frame(c.want))
			}
			if a, b := frame(fromCLI), frame(fromMCP); a != b {
				t.Errorf("invoke frames differ:\nCLI %.200s\nMCP %.200s", a, b)
			}
		})
	}
}

func TestParityTableIsLarge(t *testing.T) {
	if n := len(parityCases); n < 30 {
		t.Fatalf("parity table has %d cases; keep at least 30", n)
	}
}
