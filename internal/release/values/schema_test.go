package values

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var schemaGoldens = []struct {
	file  string
	specs []Spec
}{
	{"schema_example.golden", exampleSpecs},
	{"schema_plain.golden", plainSpecs},
	{"schema_defaults.golden", defaultSpecs},
	{"schema_constrained.golden", constrainedSpecs},
	{"schema_empty.golden", nil},
}

// TestInputSchemaGolden compares InputSchema, indented for review, with
// testdata/*.golden. Run with -update to rewrite them.
func TestInputSchemaGolden(t *testing.T) {
	for _, g := range schemaGoldens {
		t.Run(g.file, func(t *testing.T) {
			got := InputSchema(g.specs)
			var compact bytes.Buffer
			if err := json.Compact(&compact, got); err != nil {
				t.Fatalf("InputSchema is not JSON: %v\n%s", err, got)
			}
			if !bytes.Equal(compact.Bytes(), got) {
				t.Errorf("InputSchema is not compact:\n%s", got)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", g.file)
			if *update {
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./values/ -run TestInputSchemaGolden -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("InputSchema differs from %s (rerun with -update if intended):\n%s", path, pretty.Bytes())
			}
			if !bytes.Equal(InputSchema(g.specs), got) {
				t.Error("InputSchema is not deterministic")
			}
		})
	}
}

func compileSchema(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("input.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("input.json")
	if err != nil {
		t.Fatalf("InputSchema is not a valid JSON Schema 2020-12: %v\n%s", err, schema)
	}
	return sch
}

// TestInputSchemaAgreesWithCore validates the MCP arguments of every parity
// case against the advertised schema with an independent JSON Schema
// 2020-12 validator: what the core accepts the schema accepts, and what the
// core rejects the schema rejects too, except for the documented gaps
// (hard limits, NUL, decimal bounds and digits, int64 and binary64 range).
func TestInputSchemaAgreesWithCore(t *testing.T) {
	for _, c := range parityCases {
		if c.schema == noSchema {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			sch := compileSchema(t, InputSchema(c.specs))
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(c.mcp))
			if err != nil {
				t.Fatal(err)
			}
			verr := sch.Validate(inst)
			switch {
			case c.code == "" && verr != nil:
				t.Errorf("core accepts, schema rejects: %v", verr)
			case c.code != "" && c.schema == agrees && verr == nil:
				t.Errorf("core rejects with %s, schema accepts", c.code)
			case c.code != "" && c.schema == schemaGap && verr != nil:
				t.Errorf("case is marked as a schema gap but the schema rejects it: %v", verr)
			}
		})
	}
}

// TestInputSchemaDefaultsValidate checks that every declared default is
// valid against its own projected schema.
func TestInputSchemaDefaultsValidate(t *testing.T) {
	for _, g := range schemaGoldens {
		var doc struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(InputSchema(g.specs), &doc); err != nil {
			t.Fatal(err)
		}
		for _, s := range g.specs {
			if s.Default == nil {
				continue
			}
			sch := compileSchema(t, doc.Properties[s.ID])
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Default.AppendJSON(nil)))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("%s: default %v fails its schema: %v", s.ID, *s.Default, err)
			}
		}
	}
}
