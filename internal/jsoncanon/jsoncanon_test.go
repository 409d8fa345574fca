package jsoncanon

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// TestCanonicalMatchesJCS compares Transform with jcs.Transform on
// hand-picked documents and on random ones.
func TestCanonicalMatchesJCS(t *testing.T) {
	docs := []string{
		`{"b":1,"a":[true,false,null],"c":{"z":"\u0000\u001f\"\\\/","y":"é\u2028🙂"}}`,
		`[0,-0,1,-1,1.0,1.5e0,100,1e2,1E21,1e20,123456789012345,1234567890123456,12345678901234567890,0.000001,1e-7,-1.25e-300,5e-324,1.7976931348623157e308]`,
		`{"\ue000":1,"\ud83d\ude00":2,"a":3,"":4,"aa":5,"A":6}`,
		`{"type":"object","properties":{"n":{"type":"number","minimum":0.50,"maximum":1e3}},"additionalProperties":false}`,
		`"just a string"`, `42`, `[]`, `{}`,
		`{"a":"x\/y\u00e9\ud83d\ude00\b\f\n\r\t"}`,
		"  [ 1 , { \"b\" : 2 , \"a\" : [ ] } ]  ",
		// Not canonicalizable: both must refuse.
		`[007]`, `[1e400]`, `{"a":1,"a":2}`, `[1,]`, `{"a"}`, `[01]`, `[1.]`, `[.5]`, `[-]`, `[1e]`, `tru`, `[1] x`,
		`"\ud800"`, `"\udc00\ud800"`, `"\x"`, "\"tab\there\"", `[`, `{"a":1`, ``, `nul`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		docs = append(docs, randomJSON(r, 0))
	}
	for _, d := range docs {
		want, werr := jcs.Transform([]byte(d))
		got, gerr := Transform([]byte(d))
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%s: jcs error %v, Transform error %v", d, werr, gerr)
			continue
		}
		if werr == nil && string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", d, got, want)
		}
	}
}

func randomJSON(r *rand.Rand, depth int) string {
	keys := []string{"a", "b", "B", "é", "\ue000", "🙂", "a\u0001", "type", "", "zz", "\"q\""}
	k := r.IntN(8)
	if depth > 4 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return []string{"null", "true", "false"}[r.IntN(3)]
	case 1:
		switch r.IntN(4) {
		case 0:
			return fmt.Sprint(r.Int64N(1<<60) - 1<<59)
		case 1:
			return fmt.Sprint(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
		case 2:
			return fmt.Sprintf("%de%d", r.IntN(1000), r.IntN(60)-30)
		}
		return fmt.Sprintf("%d.%03d", r.IntN(100), r.IntN(1000))
	case 2, 3:
		b, _ := json.Marshal(keys[r.IntN(len(keys))] + string(rune(r.IntN(0x3000))))
		return string(b)
	case 4, 5:
		var items []string
		for range r.IntN(4) {
			items = append(items, randomJSON(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	seen := map[string]bool{}
	var ms []string
	for range r.IntN(5) {
		key := keys[r.IntN(len(keys))]
		if seen[key] {
			continue
		}
		seen[key] = true
		kb, _ := json.Marshal(key)
		ms = append(ms, string(kb)+":"+randomJSON(r, depth+1))
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// TestNumbersMatchJCS compares the numbers Transform writes with
// jcs.NumberToJSON, the reference it replaces, at every power of ten and
// around the edges of positional notation, and at random bit patterns.
func TestNumbersMatchJCS(t *testing.T) {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.999999999999999e-7, 1e-7, 1e21, 9.999999999999999e20,
		1e20, 123e-20, 5e-324, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2, 0.3, 2.5e-8}
	for e := -324; e <= 308; e++ {
		f, _ := strconv.ParseFloat("1e"+strconv.Itoa(e), 64)
		fs = append(fs, f, -f, f*1.5, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)))
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		if f := math.Float64frombits(r.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			fs = append(fs, f)
		}
	}
	for _, f := range fs {
		if math.IsInf(f, 0) {
			continue
		}
		want, err := jcs.NumberToJSON(f)
		if err != nil {
			t.Fatalf("jcs.NumberToJSON(%v): %v", f, err)
		}
		if got := string(appendNumber(nil, f)); got != want {
			t.Errorf("appendNumber(%v) = %s, want %s", f, got, want)
		}
		// And through a document, as a hash or a signature sees it.
		doc := []byte(strconv.FormatFloat(f, 'g', -1, 64))
		if got, err := Transform(doc); err != nil || string(got) != want {
			t.Errorf("Transform(%s) = %s, %v; want %s", doc, got, err, want)
		}
	}
}

// TestStrings: AppendString writes what jcs writes for the same string
// marshalled by encoding/json, and AppendBytes the same for valid UTF-8.
// A run of invalid bytes becomes one U+FFFD, where encoding/json writes
// one per byte: tool fingerprints hash that form (I7), so it stays.
func TestStrings(t *testing.T) {
	for _, s := range []string{"", "team", `q"uote`, `back\slash`, "\b\t\n\f\r", "\x00\x01\x1f\x7f", "<>&",
		"\u2028\u2029", "é日本🙂", "a/b", "bad\xffutf8"} {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
		if utf8.ValidString(s) {
			if got := AppendBytes(nil, []byte(s)); string(got) != string(want) {
				t.Errorf("AppendBytes(%q) = %s, want %s", s, got, want)
			}
		}
	}
	if got := AppendString(nil, "a\xed\xa0\x80b"); string(got) != "\"a\uFFFDb\"" {
		t.Errorf("AppendString of a run of invalid bytes = %s, want one U+FFFD", got)
	}
}

// TestErrors: a document Transform refuses leaves what it was appending
// to as it was, and says what was wrong.
func TestErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`[1,]`, "not a JSON document"},
		{`{"a":1,"a":2}`, `duplicate member "a"`},
		{`[1e400]`, `number "1e400" does not fit binary64`},
		{"\"\xff\"", "the document is not UTF-8"},
		{`"\ud800"`, "unpaired surrogate"},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "the document is nested too deeply"},
	} {
		got, err := Append([]byte("keep"), []byte(tc.doc))
		if err == nil || err.Error() != tc.want || string(got) != "keep" {
			t.Errorf("Append(keep, %.40s) = %q, %v; want keep, %s", tc.doc, got, err, tc.want)
		}
	}
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Transform([]byte(deep)); err != nil {
		t.Errorf("a document %d deep: %v", MaxDepth, err)
	}
}

// TestCanonicalizerReuse: one Canonicalizer gives each document the bytes
// a fresh one gives, whatever came before it.
func TestCanonicalizerReuse(t *testing.T) {
	var c Canonicalizer
	r := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		d := []byte(randomJSON(r, 0))
		want, werr := Transform(d)
		got, gerr := c.Append(nil, d)
		if string(got) != string(want) || (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: reused %s, %v; fresh %s, %v", d, got, gerr, want, werr)
		}
	}
}

// FuzzTransform: for any bytes, Transform and jcs.Transform agree on
// whether they are a document (invalid UTF-8 included: both refuse it)
// and, where they are, on its canonical form (beyond MaxDepth only
// Transform refuses), and the canonical form is its own canonical form.
func FuzzTransform(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null]}`, `[1e21,1e-7,-0,0.5]`, `{"\ue000":1,"\ud83d\ude00":2}`, `"\u00e9"`, `[01]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := Transform(doc)
		if err != nil && strings.Contains(err.Error(), "nested too deeply") {
			return
		}
		want, werr := jcs.Transform(doc)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: Transform error %v, jcs error %v", doc, err, werr)
		}
		if err != nil {
			return
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", doc, got, want)
		}
		again, err := Transform(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("%q: canonical form %s is not its own canonical form: %s, %v", doc, got, again, err)
		}
	})
}
