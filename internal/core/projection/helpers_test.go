package projection

import (
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// examples loads the example releases in ../examples, in the order given.
func examples(t testing.TB, names ...string) []Package {
	t.Helper()
	if names == nil {
		names = []string{"deploy", "greet", "legacy"}
	}
	digests := map[string]int{"deploy": 1, "greet": 2, "legacy": 3}
	var pkgs []Package
	for _, n := range names {
		d, err := descriptor.Load(filepath.Join("..", "..", "..", "examples", n))
		if err != nil {
			t.Fatalf("load example %s: %v", n, err)
		}
		pkgs = append(pkgs, Package{Digest: digest(digests[n]), Descriptor: d})
	}
	return pkgs
}

// cmd is a small command declaration for fixtures.
type cmd struct {
	id       string
	path     []string
	aliases  [][]string
	eligible bool
	effects  map[string]any // nil: {"class":"read"}
}

// decl decodes (from memory: the programs do not exist, and Build must
// not care) a rukh.extension/2 descriptor of pkg with cmds.
func decl(t testing.TB, pkg string, cmds ...cmd) *descriptor.Descriptor {
	t.Helper()
	var cs []map[string]any
	for _, c := range cmds {
		m := map[string]any{
			"id": c.id, "path": c.path, "summary": "Do " + c.id,
			"inputs": []map[string]any{{"id": "n", "type": "integer", "minimum": 1, "description": "How many"}},
			"execute": map[string]any{"mapping": "managed", "program": "bin/" + c.id,
				"result": map[string]any{"kind": "structured", "schema": map[string]any{
					"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
					"required": []string{"ok"}, "additionalProperties": false}}},
		}
		if c.aliases != nil {
			m["aliases"] = c.aliases
		}
		if c.eligible {
			m["machine"] = map[string]any{"eligible": true, "interaction": "none", "requiredFeatures": []string{"command-result/1"}}
		} else {
			m["machine"] = map[string]any{"eligible": false}
		}
		if c.effects != nil {
			m["effects"] = c.effects
		} else {
			m["effects"] = map[string]any{"class": "read"}
		}
		cs = append(cs, m)
	}
	doc, err := json.Marshal(map[string]any{"schema": descriptor.FormatV2, "package": pkg, "version": "1.0.0",
		"publisher": "acme", "commands": cs})
	if err != nil {
		t.Fatal(err)
	}
	d, err := descriptor.Decode(doc)
	if err != nil {
		t.Fatalf("fixture %s: %v", pkg, err)
	}
	return d
}

func v1decl(t testing.TB, pkg, id string, path ...string) *descriptor.Descriptor {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"schema": descriptor.FormatV1, "package": pkg, "version": "1.0.0",
		"publisher": "acme", "commands": []map[string]any{{"id": id, "path": path, "summary": "Run " + id,
			"execute": map[string]any{"mapping": "passthrough", "program": "bin/" + id}}}})
	d, err := descriptor.Decode(doc)
	if err != nil {
		t.Fatalf("fixture %s: %v", pkg, err)
	}
	return d
}

func mustBuild(t testing.TB, in Input) *Projection {
	t.Helper()
	p, errs := Build(in)
	if errs != nil {
		for _, e := range errs {
			t.Error(e)
		}
		t.FailNow()
	}
	if p == nil {
		t.Fatal("Build returned neither a projection nor errors")
	}
	return p
}
