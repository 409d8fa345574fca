package projection

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestCanonicalMatchesJCS compares appendCanonical with jcs.Transform on
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
		got, gerr := appendCanonical(nil, []byte(d))
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%s: jcs error %v, appendCanonical error %v", d, werr, gerr)
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

// TestCanonicalOutputSchema: the spliced canonical envelope equals the
// canonical form of the whole output schema.
func TestCanonicalOutputSchema(t *testing.T) {
	p := mustBuild(t, Input{Namespace: "team", Revision: 7, Expose: []string{"acme.deploy/status", "acme.greet/*"}, Packages: examples(t)})
	var c canonicalizer
	for _, tl := range p.Tools {
		want, err := jcs.Transform(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.appendOutputSchema([]byte("x"), tl.OutputSchema)
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("%s: appendOutputSchema = %s, %v\nwant x%s", tl.Identity, got, err, want)
		}
	}
	env := structuredEnvelope()
	if env.err != nil || !strings.Contains(string(env.head), `"data":`) || len(env.tail) == 0 {
		t.Errorf("structured envelope head %s, tail %s, %v", env.head, env.tail, env.err)
	}
}
