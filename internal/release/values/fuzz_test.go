package values

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// fuzzSpecs mix every type and constraint in one declaration.
var fuzzSpecs = []Spec{
	{ID: "s", Type: String, MaxLength: ip(8)},
	{ID: "e", Type: String, Enum: svs("a", "é", "")},
	{ID: "i", Type: Integer, Minimum: vp(iv(-1000)), Maximum: vp(iv(9007199254740993))},
	{ID: "n", Type: Number, Maximum: vp(nv(1e300)), Default: vp(nv(0.5))},
	{ID: "d", Type: Decimal, Minimum: vp(dv("-1.5")), Default: vp(dv("0.00"))},
	{ID: "b", Type: Boolean},
	{ID: "l", Type: List, Item: &Spec{Type: Integer, Minimum: vp(iv(0))}, MaxItems: ip(5)},
	{ID: "ld", Type: List, Item: &Spec{Type: Decimal, Enum: []Value{dv("1"), dv("2.5")}}, MinItems: ip(1)},
	{ID: "r", Type: String, Required: true},
}

// specSets are the declarations the fuzz targets choose from.
var specSets = [][]Spec{fuzzSpecs, exampleSpecs, plainSpecs, defaultSpecs, constrainedSpecs}

// toCLI turns an arguments object into the strings a command line would
// carry for the same intent, when there are such strings: every member of
// the JSON type its input expects, no null, no empty list.
func toCLI(specs []Spec, obj *strictjson.Value) (map[string][]string, bool) {
	if obj.Kind != strictjson.Object {
		return nil, false
	}
	text := func(t Type, j *strictjson.Value) (string, bool) {
		if j.Kind != jsonKind(t) {
			return "", false
		}
		if j.Kind == strictjson.Bool {
			return strconv.FormatBool(j.Bool), true
		}
		return j.Text, true
	}
	given := map[string][]string{}
	for _, mb := range obj.Members {
		i := specIndex(specs, mb.Name)
		switch {
		case i < 0:
			given[mb.Name] = []string{"x"}
		case specs[i].Type != List:
			s, ok := text(specs[i].Type, mb.Value)
			if !ok {
				return nil, false
			}
			given[mb.Name] = []string{s}
		default:
			if mb.Value.Kind != strictjson.Array || len(mb.Value.Items) == 0 || specs[i].Item == nil {
				return nil, false
			}
			for _, it := range mb.Value.Items {
				s, ok := text(specs[i].Item.Type, it)
				if !ok {
					return nil, false
				}
				given[mb.Name] = append(given[mb.Name], s)
			}
		}
	}
	return given, true
}

// toArguments turns CLI strings into the arguments object an MCP client
// would send for the same intent, when there is one.
func toArguments(specs []Spec, given map[string][]string) ([]byte, bool) {
	lit := func(t Type, s string) (string, bool) {
		switch t {
		case Integer, Number:
			if _, ok := splitNumber(s); !ok {
				return "", false
			}
			return s, true
		case Boolean:
			return s, s == "true" || s == "false"
		default:
			return jsonString(s), utf8.ValidString(s)
		}
	}
	names := make([]string, 0, len(given))
	for name, strs := range given {
		if len(strs) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteByte('{')
	members := 0
	for k, name := range names {
		if !utf8.ValidString(name) {
			return nil, false
		}
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(name))
		b.WriteByte(':')
		members++
		strs := given[name]
		i := specIndex(specs, name)
		switch {
		case i < 0:
			b.WriteString("1")
		case specs[i].Type != List:
			if len(strs) > 1 {
				return nil, false
			}
			s, ok := lit(specs[i].Type, strs[0])
			if !ok {
				return nil, false
			}
			b.WriteString(s)
		default:
			if specs[i].Item == nil {
				return nil, false
			}
			b.WriteByte('[')
			for j, str := range strs {
				if j > 0 {
					b.WriteByte(',')
				}
				s, ok := lit(specs[i].Item.Type, str)
				if !ok {
					return nil, false
				}
				b.WriteString(s)
				members++
			}
			b.WriteByte(']')
		}
	}
	b.WriteByte('}')
	if b.Len() > MaxArgumentBytes || members > MaxArgumentMembers {
		return nil, false
	}
	return []byte(b.String()), true
}

// explicitArguments re-encodes the explicit entries of m as arguments.
func explicitArguments(m Map) []byte {
	buf := []byte{'{'}
	for id, e := range m {
		if !e.Explicit {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = strictjson.AppendString(buf, id)
		buf = append(buf, ':')
		buf = e.Value.AppendJSON(buf)
	}
	return append(buf, '}')
}

// explicitCLI re-encodes the explicit entries of m as CLI strings; it
// reports false when m holds an explicitly empty list, which a command
// line cannot say (no strings means not supplied).
func explicitCLI(m Map) (map[string][]string, bool) {
	text := func(v Value) string {
		switch v.Type() {
		case String:
			return v.Str()
		case Decimal:
			return v.Decimal()
		}
		return string(v.AppendJSON(nil))
	}
	given := map[string][]string{}
	for id, e := range m {
		if !e.Explicit {
			continue
		}
		if e.Value.Type() == List {
			if len(e.Value.Items()) == 0 {
				return nil, false
			}
			for _, it := range e.Value.Items() {
				given[id] = append(given[id], text(it))
			}
			continue
		}
		given[id] = []string{text(e.Value)}
	}
	return given, true
}

// checkSame fails unless two outcomes are the same: Equal maps with equal
// frames, or errors with the same code, input, path and message.
func checkSame(t *testing.T, what string, m1 Map, e1 *Error, m2 Map, e2 *Error) {
	t.Helper()
	switch {
	case e1 != nil && e2 != nil:
		if !sameError(e1, e2) || e1.Message != e2.Message {
			t.Fatalf("%s: errors differ:\n%s %q %q %s\n%s %q %q %s", what, e1.Code, e1.Input, e1.Path, e1.Message, e2.Code, e2.Input, e2.Path, e2.Message)
		}
	case e1 != nil || e2 != nil:
		t.Fatalf("%s: one door failed: %v / %v (maps %s / %s)", what, e1, e2, frame(m1), frame(m2))
	case !m1.Equal(m2) || frame(m1) != frame(m2):
		t.Fatalf("%s: maps differ:\n%s\n%s", what, frame(m1), frame(m2))
	}
}

// checkMap checks what holds for every successful result: every entry is
// declared, its value is valid for its spec, defaults are not explicit.
func checkMap(t *testing.T, specs []Spec, m Map) {
	t.Helper()
	for id, e := range m {
		i := specIndex(specs, id)
		if i < 0 {
			t.Fatalf("undeclared %q in map", id)
		}
		s := specs[i]
		if !e.Explicit && (s.Default == nil || !e.Value.Equal(*s.Default)) {
			t.Fatalf("%s: implicit value %v is not the default", id, e.Value)
		}
		probe := s
		probe.Required, probe.Default = false, &e.Value
		for _, pe := range probe.Check() {
			t.Fatalf("%s: value %v violates its spec: %v", id, e.Value, pe)
		}
	}
	for _, s := range specs {
		if _, ok := m[s.ID]; s.Required && !ok {
			t.Fatalf("required %s missing", s.ID)
		}
	}
}

func seedSets(f *testing.F, add func(which uint8)) {
	for k := range specSets {
		add(uint8(k))
	}
}

func FuzzArguments(f *testing.F) {
	// Seeds stay small: the engine minimizes every new interesting input,
	// and minimizing one grown from a 30 KiB seed stalls it for a minute.
	// The large parity cases run in TestParity anyway.
	for _, c := range parityCases {
		if len(c.mcp) <= 4096 {
			seedSets(f, func(k uint8) { f.Add(k, []byte(c.mcp)) })
		}
	}
	for _, s := range []string{`{"r":"x","l":[0,1],"ld":["2.5"],"d":"-1.50","n":1e300,"e":"é"}`, `{"r":"","i":9007199254740993}`, ``, `null`, `{"r":null}`} {
		f.Add(uint8(0), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		specs := specSets[int(which)%len(specSets)]
		m, e := FromArguments(specs, raw)
		if e != nil {
			if m != nil || e.Code == "" || e.Message == "" || e.Error() == "" {
				t.Fatalf("malformed failure %+v, map %v", e, m)
			}
			// The CLI door says the same, where a command line can.
			if obj, err := strictjson.Parse(raw, argumentLimits); err == nil {
				if given, ok := toCLI(specs, obj); ok {
					cm, ce := FromCLI(specs, given)
					checkSame(t, "MCP vs CLI", m, e, cm, ce)
				}
			}
			return
		}
		checkMap(t, specs, m)
		// Re-encoding the explicit values gives the same map, through
		// either door.
		m2, e2 := FromArguments(specs, explicitArguments(m))
		checkSame(t, "round trip through JSON", m, nil, m2, e2)
		if given, ok := explicitCLI(m); ok {
			m3, e3 := FromCLI(specs, given)
			checkSame(t, "round trip through CLI", m, nil, m3, e3)
		}
	})
}

// decodeGiven reads CLI strings from a fuzz blob: lines "NAME\tVALUE",
// where a one-digit NAME picks the declared input of that index.
func decodeGiven(specs []Spec, blob string) map[string][]string {
	given := map[string][]string{}
	for line := range strings.SplitSeq(blob, "\n") {
		name, value, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		if len(name) == 1 && name[0] >= '0' && int(name[0]-'0') < len(specs) {
			name = specs[name[0]-'0'].ID
		}
		given[name] = append(given[name], value)
	}
	return given
}

func encodeGiven(given map[string][]string) string {
	var b strings.Builder
	for name, strs := range given {
		for _, s := range strs {
			b.WriteString(name + "\t" + s + "\n")
		}
	}
	return b.String()
}

func FuzzCLI(f *testing.F) {
	for _, c := range parityCases {
		if len(encodeGiven(c.cli)) > 4096 {
			continue
		}
		seedSets(f, func(k uint8) { f.Add(k, encodeGiven(c.cli)) })
	}
	f.Add(uint8(0), "8\tx\n6\t1\n6\t2\n7\t2.50\n3\t-0\n4\t-0\n2\t1e2\n")
	f.Fuzz(func(t *testing.T, which uint8, blob string) {
		specs := specSets[int(which)%len(specSets)]
		given := decodeGiven(specs, blob)
		m, e := FromCLI(specs, given)
		if e != nil && (m != nil || e.Code == "" || e.Message == "") {
			t.Fatalf("malformed failure %+v", e)
		}
		if raw, ok := toArguments(specs, given); ok {
			am, ae := FromArguments(specs, raw)
			checkSame(t, "CLI vs MCP "+string(raw), m, e, am, ae)
		}
		if e == nil {
			checkMap(t, specs, m)
			given, ok := explicitCLI(m)
			if !ok {
				t.Fatalf("the CLI produced an empty list: %s", frame(m))
			}
			m2, e2 := FromCLI(specs, given)
			checkSame(t, "round trip through CLI", m, nil, m2, e2)
		}
	})
}

// TestParityConversions runs the fuzz conversions over the parity table,
// so the helpers themselves are tested on every run.
func TestParityConversions(t *testing.T) {
	for _, c := range parityCases {
		raw, ok := toArguments(c.specs, c.cli)
		if !ok {
			t.Errorf("%s: no arguments for the CLI strings", c.name)
			continue
		}
		m1, e1 := FromArguments(c.specs, raw)
		m2, e2 := FromArguments(c.specs, []byte(c.mcp))
		checkSame(t, c.name, m1, e1, m2, e2)
		obj, err := strictjson.Parse([]byte(c.mcp), argumentLimits)
		if err != nil {
			t.Fatal(err)
		}
		given, ok := toCLI(c.specs, obj)
		if !ok {
			t.Errorf("%s: no CLI strings for the arguments", c.name)
			continue
		}
		m3, e3 := FromCLI(c.specs, given)
		checkSame(t, c.name, m2, e2, m3, e3)
	}
}

func BenchmarkFromArguments(b *testing.B) {
	raw := []byte(`{"env":"stage","limit":25,"amount":"1234.50","tags":["blue","green","canary"],"target":"web-1"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, e := FromArguments(exampleSpecs, raw); e != nil {
			b.Fatal(e)
		}
	}
}

func BenchmarkFromCLI(b *testing.B) {
	given := map[string][]string{"env": {"stage"}, "limit": {"25"}, "amount": {"1234.50"}, "tags": {"blue", "green", "canary"}, "target": {"web-1"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, e := FromCLI(exampleSpecs, given); e != nil {
			b.Fatal(e)
		}
	}
}
