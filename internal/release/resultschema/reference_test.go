package resultschema

import (
	"fmt"

	"github.com/rukh-cli/rukh/internal/strictjson"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The reference implementation of JSON Schema 2020-12 is a test oracle:
// every checked schema must compile with it, and it must agree with
// Validate. It is not linked into Rukh itself: its init costs ~10 ms per
// process, it searches enums linearly (seconds on a large enum) and it
// panics on a literal like 1e9999999 against a minimum.

// reference compiles a checked schema with the reference implementation.
func reference(s *Schema) (*jsonschema.Schema, error) {
	tree, err := strictjson.Parse(s.json, strictjson.Limits{MaxBytes: len(s.json) + 1, MaxDepth: 64, MaxMembers: 1 << 20})
	if err != nil {
		return nil, err
	}
	return compile(tree)
}

// compile compiles the checked document with the reference JSON Schema
// implementation, with draft 2020-12, no loading of anything and no format
// assertions.
func compile(tree *strictjson.Value) (*jsonschema.Schema, error) {
	const url = "mem://rukh/result-schema.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(url, tree.Any()); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// noLoader refuses to load anything: a result schema is self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("resultschema loads no schema resources (%s)", url)
}
