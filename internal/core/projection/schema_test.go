package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
)

func sha256JCS(t *testing.T, raw []byte) string {
	t.Helper()
	c, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func compileSchema(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
	if err != nil {
		t.Fatalf("output schema is not JSON: %v\n%s", err, schema)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://out.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://out.json")
	if err != nil {
		t.Fatalf("output schema does not compile: %v", err)
	}
	return s
}

func TestOutputSchemaValidates(t *testing.T) {
	d, err := descriptor.Load("../../../examples/deploy")
	if err != nil {
		t.Fatal(err)
	}
	textResult := &resultschema.Result{Kind: resultschema.Text}
	for _, tc := range []struct {
		name   string
		result *resultschema.Result
		valid  []string
		bad    []string
	}{
		{"structured", d.Commands[0].Execute.Result, []string{
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"stage","deployments":[{"service":"web","version":"1.2","healthy":true}]}},"effects":[{"kind":"deploy","ref":"d-1"}]}`,
			`{"invocationId":"i1","outcome":"rejected","reason":"denied"}`,
			`{"invocationId":"i1","outcome":"command_failed","commandResult":{"kind":"structured","data":{"env":"prod","deployments":[]}}}`,
			`{"invocationId":"i1","outcome":"cancelled","reason":"deadline","effects":[]}`,
		}, []string{
			`{"invocationId":"i1","outcome":"succeeded","extra":1}`,                                                                   // closed envelope
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"dev","deployments":[]}}}`, // publisher enum
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"prod"}}}`,                 // publisher required
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"prod","deployments":[],"x":1}}}`,
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"text","text":"hi"}}`,
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured"}}`,
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"prod","deployments":[]},"more":1}}`,
			`{"invocationId":"i1","outcome":"ok"}`,
			`{"outcome":"succeeded"}`,
			`{"invocationId":1,"outcome":"succeeded"}`,
			`{"invocationId":"i1","outcome":"succeeded","effects":[{"kind":"k"}]}`,
			`{"invocationId":"i1","outcome":"succeeded","effects":[{"kind":"k","ref":"r","secret":"s"}]}`,
		}},
		{"text", textResult, []string{
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"text","text":"hello"}}`,
		}, []string{
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"text","text":1}}`,
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"structured","data":{}}}`,
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"text","text":"x","data":{}}}`,
		}},
		{"none", nil, []string{
			`{"invocationId":"i1","outcome":"rejected","reason":"unsupported"}`,
		}, []string{
			`{"invocationId":"i1","outcome":"succeeded","commandResult":{"kind":"text","text":"x"}}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := OutputSchema(tc.result)
			if !json.Valid(out) {
				t.Fatalf("not JSON: %s", out)
			}
			s := compileSchema(t, out)
			for _, v := range tc.valid {
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(v))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(inst); err != nil {
					t.Errorf("rejects %s: %v", v, err)
				}
			}
			for _, v := range tc.bad {
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(v))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(inst); err == nil {
					t.Errorf("accepts %s", v)
				}
			}
		})
	}
}

func TestOutputSchemaText(t *testing.T) {
	got := string(OutputSchema(&resultschema.Result{Kind: resultschema.Text}))
	want := `{"type":"object","properties":{"invocationId":{"type":"string"},"outcome":{"type":"string","enum":["succeeded","command_failed","execution_failed","rejected","cancelled"]},"reason":{"type":"string"},"approvalId":{"type":"string"},"commandResult":{"type":"object","properties":{"kind":{"type":"string","const":"text"},"text":{"type":"string"}},"required":["kind","text"],"additionalProperties":false},"effects":{"type":"array","items":{"type":"object","properties":{"kind":{"type":"string"},"ref":{"type":"string"}},"required":["kind","ref"],"additionalProperties":false}}},"required":["invocationId","outcome"],"additionalProperties":false}`
	if got != want {
		t.Errorf("OutputSchema(text) =\n%s\nwant\n%s", got, want)
	}
	for _, o := range Outcomes {
		if !strings.Contains(got, `"`+o+`"`) {
			t.Errorf("the envelope does not list outcome %s", o)
		}
	}
}

func TestAnnotations(t *testing.T) {
	// Undeclared effects (only a version 1 command has none) give no hints.
	if got, err := json.Marshal(annotations(descriptor.Effects{})); err != nil || string(got) != `{}` {
		t.Errorf("undeclared effects: annotations %s, %v; want {}", got, err)
	}
	for _, tc := range []struct {
		effects map[string]any
		want    string
	}{
		{map[string]any{"class": "none"}, `{"readOnlyHint":true,"destructiveHint":false}`},
		{map[string]any{"class": "read", "idempotent": true}, `{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true}`},
		{map[string]any{"class": "write", "openWorld": true}, `{"readOnlyHint":false,"destructiveHint":false,"openWorldHint":true}`},
		{map[string]any{"class": "destructive", "idempotent": true, "openWorld": true}, `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":true}`},
	} {
		d := decl(t, "acme.a", cmd{id: "x", path: []string{"x"}, eligible: true, effects: tc.effects})
		p := mustBuild(t, Input{Namespace: "team", Revision: 1, Expose: []string{"acme.a/x"}, Packages: []Package{{Digest: digest(1), Descriptor: d}}})
		got, err := json.Marshal(p.Tools[0].Annotations)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("effects %v: annotations %s, want %s", tc.effects, got, tc.want)
		}
		want, err := jcs.Transform(got)
		if err != nil {
			t.Fatal(err)
		}
		if hashed := p.Tools[0].Annotations.appendCanonical(nil); string(hashed) != string(want) {
			t.Errorf("effects %v: hashed annotations %s, want %s", tc.effects, hashed, want)
		}
	}
}
