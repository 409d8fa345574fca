package projection

import (
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/rukh-cli/rukh/internal/jsoncanon"
)

// TestCanonicalOutputSchema: the spliced canonical envelope equals the
// canonical form of the whole output schema.
func TestCanonicalOutputSchema(t *testing.T) {
	p := mustBuild(t, Input{Namespace: "team", Revision: 7, Expose: []string{"acme.deploy/status", "acme.greet/*"}, Packages: examples(t)})
	var c jsoncanon.Canonicalizer
	for _, tl := range p.Tools {
		want, err := jcs.Transform(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendOutputSchema(&c, []byte("x"), tl.OutputSchema)
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("%s: appendOutputSchema = %s, %v\nwant x%s", tl.Identity, got, err, want)
		}
	}
	env := structuredEnvelope()
	if env.err != nil || !strings.Contains(string(env.head), `"data":`) || len(env.tail) == 0 {
		t.Errorf("structured envelope head %s, tail %s, %v", env.head, env.tail, env.err)
	}
}
