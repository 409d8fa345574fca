package projection

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// catalogue returns 10 packages of 100 machine-eligible commands each,
// every one with four inputs and a structured result, all exposed.
func catalogue(b *testing.B) Input {
	in := Input{Namespace: "team", Revision: 42}
	for p := range 10 {
		pkg := fmt.Sprintf("acme.pkg%d", p)
		var cmds []map[string]any
		for c := range 100 {
			cmds = append(cmds, map[string]any{
				"id": fmt.Sprintf("cmd%d", c), "path": []string{fmt.Sprintf("p%d", p), fmt.Sprintf("c%d", c)},
				"aliases": [][]string{{fmt.Sprintf("p%dc%d", p, c)}},
				"summary": "Show something useful", "description": "A longer description of what this command does and when to use it.",
				"inputs": []map[string]any{
					{"id": "env", "type": "string", "enum": []string{"prod", "stage"}, "required": true, "description": "Target environment"},
					{"id": "limit", "type": "integer", "minimum": 1, "maximum": 100, "default": 10},
					{"id": "tags", "flag": "tag", "type": "list", "items": map[string]any{"type": "string", "maxLength": 32}, "maxItems": 16},
					{"id": "target", "positional": 0, "type": "string"},
				},
				"execute": map[string]any{"mapping": "managed", "program": "bin/x", "result": map[string]any{"kind": "structured", "schema": map[string]any{
					"type": "object", "additionalProperties": false, "required": []string{"items"},
					"properties": map[string]any{"items": map[string]any{"type": "array", "maxItems": 100, "items": map[string]any{
						"type": "object", "additionalProperties": false,
						"properties": map[string]any{"name": map[string]any{"type": "string"}, "ok": map[string]any{"type": "boolean"}, "n": map[string]any{"type": "number", "minimum": 0.5}},
					}}},
				}}},
				"machine": map[string]any{"eligible": true, "interaction": "none", "requiredFeatures": []string{"command-result/1"}},
				"effects": map[string]any{"class": "read", "idempotent": true},
			})
		}
		doc, _ := json.Marshal(map[string]any{"schema": descriptor.FormatV2, "package": pkg, "version": "1.0.0", "publisher": "acme", "commands": cmds})
		d, err := descriptor.Decode(doc)
		if err != nil {
			b.Fatal(err)
		}
		in.Packages = append(in.Packages, Package{Digest: digest(p + 1), Descriptor: d})
		in.Expose = append(in.Expose, pkg+"/*")
	}
	return in
}

// BenchmarkBuild projects a revision of 1,000 exposed commands.
func BenchmarkBuild(b *testing.B) {
	for _, naming := range []Naming{Full, Compact} {
		b.Run(string(naming), func(b *testing.B) {
			in := catalogue(b)
			in.Naming = naming
			b.ReportAllocs()
			for b.Loop() {
				p, errs := Build(in)
				if errs != nil || len(p.Tools) != 1000 || len(p.Routes) != 2000 {
					b.Fatalf("%d tools, %d routes, %v", len(p.Tools), len(p.Routes), errs)
				}
			}
		})
	}
}

// BenchmarkCacheHit is what a tools/list pays once the revision is built.
func BenchmarkCacheHit(b *testing.B) {
	in := catalogue(b)
	c := NewCache(0)
	build := func() (*Projection, []*Error) { return Build(in) }
	c.Get(in.Revision, build)
	b.ReportAllocs()
	for b.Loop() {
		c.Get(in.Revision, build)
	}
}
