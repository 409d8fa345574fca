package descriptor_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDocumentedCodes keeps docs/descriptor.md honest: every code the
// package defines is in its table.
func TestDocumentedCodes(t *testing.T) {
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "descriptor.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := regexp.MustCompile(`Code = "([a-z_]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(codes) < 30 {
		t.Fatalf("found only %d codes in errors.go", len(codes))
	}
	for _, m := range codes {
		if !strings.Contains(string(docs), "`"+m[1]+"`") {
			t.Errorf("code %s is not documented in docs/descriptor.md", m[1])
		}
	}
}

// TestDescriptorJSONSchema checks the published JSON Schema of the format
// against the examples and against descriptors Decode refuses for their
// shape.
func TestDescriptorJSONSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("..", "..", "..", "docs", "descriptor.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	validate := func(data []byte) error {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(inst)
	}
	for _, dir := range []string{"ask", "deploy", "greet", "legacy"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", dir, descriptor.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(data); err != nil {
			t.Errorf("examples/%s does not satisfy docs/descriptor.schema.json: %v", dir, err)
		}
	}
	for name, data := range map[string]string{
		"unknown member":       strings.Replace(doc(cmd("c", "")), `{"schema"`, `{"colour":"red","schema"`, 1),
		"v1 with machine":      docv("rukh.extension/1", cmd("c", eligible)),
		"required default":     in(`{"id":"a","type":"integer","required":true,"default":1}`),
		"flag and positional":  in(`{"id":"a","flag":"a","positional":0,"type":"string"}`),
		"program escapes":      doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"managed","program":"bin/../../t"}`, "")),
		"reserved flag":        in(`{"id":"a","flag":"json","type":"boolean"}`),
		"structured no schema": doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"structured"}`), "")),
		"unknown feature":      doc(cmd("c", `"machine":{"requiredFeatures":["streaming/1"]}`)),
		"v2 effects missing":   doc(`{"id":"c","path":["c"],"summary":"s",` + exec("") + `}`),
		"v2 effects no class":  doc(cmd("c", `"effects":{}`)),
	} {
		if _, err := descriptor.Decode([]byte(data)); err == nil {
			t.Errorf("%s: Decode accepts it; the case is wrong", name)
		}
		if err := validate([]byte(data)); err == nil {
			t.Errorf("%s: docs/descriptor.schema.json accepts a descriptor Decode refuses", name)
		}
	}
}

// docs/descriptor.md lists exactly the reserved words.
func TestReservedWordsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "descriptor.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	var quoted []string
	for _, w := range descriptor.ReservedWords {
		quoted = append(quoted, "`"+w+"`")
	}
	if want := "word: " + strings.Join(quoted, ", ") + " (`reserved_word`)"; !strings.Contains(text, want) {
		t.Errorf("docs/descriptor.md does not list the reserved words as %q", want)
	}
}
