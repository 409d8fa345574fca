package projection

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// TestBuildExamplesGolden pins the projection of the example releases.
// Run with -update to rewrite testdata/*.golden.
func TestBuildExamplesGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		naming Naming
		expose []string
	}{
		{"examples_full", Full, []string{"acme.deploy/status", "acme.greet/*"}},
		{"examples_compact", Compact, []string{"acme.deploy/status", "acme.greet/*"}},
		{"examples_greet_only", "", []string{"acme.greet/*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustBuild(t, Input{Namespace: "team", Revision: 7, Naming: tc.naming, Expose: tc.expose, Packages: examples(t)})
			got, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./projection/ -run TestBuildExamplesGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("projection differs from %s (rerun with -update if intended):\n%s", path, got)
			}
		})
	}
}

func TestBuildExamples(t *testing.T) {
	p := mustBuild(t, Input{Namespace: "team", Revision: 7, Expose: []string{"acme.deploy/status", "acme.greet/*"}, Packages: examples(t)})
	var ids []string
	for _, tl := range p.Tools {
		ids = append(ids, tl.Identity)
		if got := p.Tool(tl.Name); got == nil || got.Identity != tl.Identity {
			t.Errorf("Tool(%q) = %v", tl.Name, got)
		}
	}
	slices.Sort(ids)
	// rollback (not eligible), the v1 legacy command and the aliases ds
	// and hi add no tools.
	if want := []string{"acme.deploy/status", "acme.greet/hello"}; !slices.Equal(ids, want) {
		t.Errorf("tools %v, want %v", ids, want)
	}
	if len(p.NotExposed) != 0 {
		t.Errorf("NotExposed = %v, want none", p.NotExposed)
	}
	if len(p.Routes) != 6 {
		t.Errorf("%d routes, want 6 (3 paths of v2, 2 aliases, 1 v1 passthrough path)", len(p.Routes))
	}
	if !slices.IsSortedFunc(p.Routes, func(a, b Route) int { return slices.Compare(a.Words, b.Words) }) {
		t.Error("routes are not sorted by words")
	}
	if !slices.IsSortedFunc(p.Tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("tools are not sorted by name")
	}
	st := p.Tools[slices.IndexFunc(p.Tools, func(tl Tool) bool { return tl.Identity == "acme.deploy/status" })]
	if st.Title != "Show deployment status" || st.Description != "Shows the deployments of one environment, newest first." {
		t.Errorf("title %q, description %q", st.Title, st.Description)
	}
	gr := p.Tools[slices.IndexFunc(p.Tools, func(tl Tool) bool { return tl.Identity == "acme.greet/hello" })]
	if gr.Description != "Greet someone" {
		t.Errorf("without a description the summary describes the tool, got %q", gr.Description)
	}
}

func TestPackageSetExposesOnlyEligible(t *testing.T) {
	p := mustBuild(t, Input{Namespace: "team", Revision: 1, Expose: []string{"acme.deploy/*", "acme.legacy/*"}, Packages: examples(t)})
	if len(p.Tools) != 1 || p.Tools[0].Identity != "acme.deploy/status" {
		t.Errorf("tools %+v, want acme.deploy/status only", p.Tools)
	}
	want := []NotExposed{{Identity: "acme.greet/hello", Reason: NotInExpose}}
	if !reflect.DeepEqual(p.NotExposed, want) {
		t.Errorf("NotExposed = %v, want %v", p.NotExposed, want)
	}
	none := mustBuild(t, Input{Namespace: "team", Revision: 1, Packages: examples(t)})
	if len(none.Tools) != 0 || len(none.NotExposed) != 2 {
		t.Errorf("without mcp.expose: %d tools, NotExposed %v", len(none.Tools), none.NotExposed)
	}
}

func TestBuildErrors(t *testing.T) {
	a := func(t *testing.T) *descriptor.Descriptor {
		return decl(t, "acme.a", cmd{id: "x", path: []string{"alpha", "x"}, eligible: true},
			cmd{id: "off", path: []string{"alpha", "off"}})
	}
	pkgs := func(ds ...*descriptor.Descriptor) []Package {
		var ps []Package
		for i, d := range ds {
			ps = append(ps, Package{Digest: digest(i + 1), Descriptor: d})
		}
		return ps
	}
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) Input
		want []Error
	}{
		{"equal routes across packages", func(t *testing.T) Input {
			return Input{Packages: pkgs(
				decl(t, "acme.b", cmd{id: "y", path: []string{"deploy", "status"}}),
				decl(t, "acme.a", cmd{id: "x", path: []string{"deploy", "status"}}))}
		}, []Error{{CodeRouteCollision, "acme.b/y", `route "deploy status" of acme.b/y is also a route of acme.a/x; deactivate one of the packages or publish a release with another route`}}},
		{"alias equals a path", func(t *testing.T) Input {
			return Input{Packages: pkgs(
				decl(t, "acme.a", cmd{id: "x", path: []string{"x"}, aliases: [][]string{{"ds"}}}),
				decl(t, "acme.b", cmd{id: "y", path: []string{"ds"}}))}
		}, []Error{{CodeRouteCollision, "acme.b/y", `route "ds" of acme.b/y is also a route of acme.a/x; deactivate one of the packages or publish a release with another route`}}},
		{"group and command", func(t *testing.T) Input {
			return Input{Packages: pkgs(
				decl(t, "acme.a", cmd{id: "x", path: []string{"deploy"}}),
				decl(t, "acme.b", cmd{id: "y", path: []string{"deploy", "status"}}, cmd{id: "z", path: []string{"deploy", "logs", "tail"}}))}
		}, []Error{
			{CodeGroupCollision, "acme.b/z", `route "deploy logs tail" of acme.b/z is inside route "deploy" of acme.a/x: a group cannot also be a command; deactivate one of the packages or publish a release with another route`},
			{CodeGroupCollision, "acme.b/y", `route "deploy status" of acme.b/y is inside route "deploy" of acme.a/x: a group cannot also be a command; deactivate one of the packages or publish a release with another route`},
		}},
		{"embedder built-in", func(t *testing.T) Input {
			return Input{Builtins: []string{"alpha"}, Packages: pkgs(a(t))}
		}, []Error{
			{CodeRouteCollision, "acme.a/off", `route "alpha off" of acme.a/off starts with the built-in command "alpha"; publish a release with another first word`},
			{CodeRouteCollision, "acme.a/x", `route "alpha x" of acme.a/x starts with the built-in command "alpha"; publish a release with another first word`},
		}},
		{"default built-ins", func(t *testing.T) Input {
			d := a(t)
			d.Commands[0].Aliases = [][]string{{"mcp", "x"}}
			return Input{Packages: pkgs(d)}
		}, []Error{{CodeRouteCollision, "acme.a/x", `route "mcp x" of acme.a/x starts with the built-in command "mcp"; publish a release with another first word`}}},
		{"expose syntax", func(t *testing.T) Input {
			return Input{Packages: pkgs(a(t)), Expose: []string{"acme.*/*", "nope", "acme.a/X", "acme.a/x/y", "/x", "acme.a/", "", "acme.a/*", "nope"}}
		}, []Error{
			{CodeExposeInvalid, "acme.*/*", `"acme.*/*" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
			{CodeExposeInvalid, "nope", `"nope" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
			{CodeExposeInvalid, "acme.a/X", `"acme.a/X" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
			{CodeExposeInvalid, "acme.a/x/y", `"acme.a/x/y" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
			{CodeExposeInvalid, "/x", `"/x" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
			{CodeExposeInvalid, "acme.a/", `"acme.a/" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
			{CodeExposeInvalid, "", `"" is not a command identity like "acme.deploy/status" or a package set like "acme.tools/*"; fix mcp.expose in the profile`},
		}},
		{"expose unknown", func(t *testing.T) Input {
			return Input{Packages: pkgs(a(t)), Expose: []string{"acme.nope/*", "acme.nope/x", "acme.a/missing", "acme.a/x"}}
		}, []Error{
			{CodeExposeUnknown, "acme.nope/*", `package "acme.nope" is not active in this revision; activate a release of it or remove "acme.nope/*" from mcp.expose`},
			{CodeExposeUnknown, "acme.nope/x", `package "acme.nope" is not active in this revision; activate a release of it or remove "acme.nope/x" from mcp.expose`},
			{CodeExposeUnknown, "acme.a/missing", `the active release of acme.a has no command "missing"; remove "acme.a/missing" from mcp.expose`},
		}},
		{"expose unknown, something near", func(t *testing.T) Input {
			deploy := decl(t, "acme.deploy", cmd{id: "status", path: []string{"deploy", "status"}, eligible: true},
				cmd{id: "rollback", path: []string{"deploy", "rollback"}})
			return Input{Packages: pkgs(a(t), deploy), Expose: []string{"acme.deploy/statsu", "acme.deplyo/status", "acme.deplyo/*", "acme.a/of", "acme.deploy/roll"}}
		}, []Error{
			{CodeExposeUnknown, "acme.deploy/statsu", `the active release of acme.deploy has no command "statsu"; remove "acme.deploy/statsu" from mcp.expose; did you mean "acme.deploy/status"?`},
			{CodeExposeUnknown, "acme.deplyo/status", `package "acme.deplyo" is not active in this revision; activate a release of it or remove "acme.deplyo/status" from mcp.expose; did you mean "acme.deploy/status"?`},
			{CodeExposeUnknown, "acme.deplyo/*", `package "acme.deplyo" is not active in this revision; activate a release of it or remove "acme.deplyo/*" from mcp.expose; did you mean "acme.deploy/*"?`},
			{CodeExposeUnknown, "acme.a/of", `the active release of acme.a has no command "of"; remove "acme.a/of" from mcp.expose; did you mean "acme.a/off"?`},
			{CodeExposeUnknown, "acme.deploy/roll", `the active release of acme.deploy has no command "roll"; remove "acme.deploy/roll" from mcp.expose`},
		}},
		{"expose not eligible", func(t *testing.T) Input {
			return Input{Packages: pkgs(a(t), v1decl(t, "acme.legacy", "run", "legacy", "run")), Expose: []string{"acme.a/off", "acme.legacy/run", "acme.legacy/*"}}
		}, []Error{
			{CodeExposeNotEligible, "acme.a/off", `acme.a/off cannot be a tool: machine.eligible is not true (not_requested); machine.requiredFeatures does not include command-result/1 (missing_feature); remove it from mcp.expose or activate a release that declares a machine contract`},
			{CodeExposeNotEligible, "acme.legacy/run", `acme.legacy/run cannot be a tool: rukh.extension/1 commands are CLI-only; publish a rukh.extension/2 release (format_v1); remove it from mcp.expose or activate a release that declares a machine contract`},
		}},
		{"name collision", func(t *testing.T) Input {
			d := decl(t, "acme.a", cmd{id: "x", path: []string{"alpha", "x"}, eligible: true}, cmd{id: "y", path: []string{"alpha", "y"}, eligible: true})
			d.Commands[1].ID, d.Commands[1].Identity = "x", "acme.a/x" // an inconsistent identity mapping
			return Input{Packages: pkgs(d), Expose: []string{"acme.a/*"}}
		}, []Error{{CodeNameCollision, "acme.a/x", `tool name "acme_a_x__` + Fingerprint("team", 7, "acme.a/x") + `" is computed for two commands (acme.a/x, command #0, and acme.a/x, command #1); a revision cannot publish two tools under one name`}}},
		{"namespace empty", func(t *testing.T) Input {
			return Input{Namespace: "-", Packages: pkgs(a(t))} // "-" is replaced by "" below
		}, []Error{{CodeNamespaceInvalid, "", `endpoint namespace "" must be non-empty UTF-8; set endpointNamespace in the profile`}}},
		{"namespace not UTF-8", func(t *testing.T) Input {
			return Input{Namespace: "te\xffam", Packages: pkgs(a(t))}
		}, []Error{{CodeNamespaceInvalid, "", `endpoint namespace "te\xffam" must be non-empty UTF-8; set endpointNamespace in the profile`}}},
		{"revision too large", func(t *testing.T) Input {
			return Input{Revision: MaxRevision + 1, Packages: pkgs(a(t))}
		}, []Error{{CodeRevisionInvalid, "", `revision 9007199254740992 is larger than 9007199254740991, the largest a fingerprint can hold exactly`}}},
		{"naming", func(t *testing.T) Input {
			return Input{Naming: "short", Packages: pkgs(a(t))}
		}, []Error{{CodeNamingInvalid, "", `naming "short" is not "full" or "compact"`}}},
		{"packages", func(t *testing.T) Input {
			bad := decl(t, "acme.c", cmd{id: "x", path: []string{"gamma"}}, cmd{id: "y", path: []string{"delta"}}, cmd{id: "z", path: []string{"epsilon"}})
			bad.Commands[0].Identity = "acme.other/x"
			bad.Commands[1].Path = nil
			bad.Commands[2] = nil
			return Input{Packages: []Package{
				{Digest: digest(1), Descriptor: a(t)},
				{Digest: digest(9), Descriptor: nil},
				{Digest: "sha256:ABC", Descriptor: decl(t, "acme.b", cmd{id: "y", path: []string{"beta"}})},
				{Digest: digest(2), Descriptor: a(t)},
				{Digest: digest(3), Descriptor: bad},
			}}
		}, []Error{
			{CodePackageInvalid, "", `active release #1 (sha256:0000000000000000000000000000000000000000000000000000000000000009) has no descriptor`},
			{CodePackageInvalid, "acme.a", `releases sha256:0000000000000000000000000000000000000000000000000000000000000001 and sha256:0000000000000000000000000000000000000000000000000000000000000002 are both active; a revision activates at most one release of a package`},
			{CodePackageInvalid, "acme.b", `release digest "sha256:ABC" is not "sha256:" and 64 lowercase hex digits`},
			{CodePackageInvalid, "acme.c", `command #0 has identity "acme.other/x", not "acme.c/x"`},
			{CodePackageInvalid, "acme.c/y", `a path or alias has no words`},
			{CodePackageInvalid, "acme.c", `command #2 is missing`},
		}},
		{"every phase at once", func(t *testing.T) Input {
			return Input{Naming: "x", Expose: []string{"acme.a/off", "acme.zz/*"}, Packages: pkgs(a(t),
				decl(t, "acme.b", cmd{id: "y", path: []string{"alpha", "x"}}))}
		}, []Error{
			{CodeNamingInvalid, "", `naming "x" is not "full" or "compact"`},
			{CodeRouteCollision, "acme.b/y", `route "alpha x" of acme.b/y is also a route of acme.a/x; deactivate one of the packages or publish a release with another route`},
			{CodeExposeNotEligible, "acme.a/off", `acme.a/off cannot be a tool: machine.eligible is not true (not_requested); machine.requiredFeatures does not include command-result/1 (missing_feature); remove it from mcp.expose or activate a release that declares a machine contract`},
			{CodeExposeUnknown, "acme.zz/*", `package "acme.zz" is not active in this revision; activate a release of it or remove "acme.zz/*" from mcp.expose`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			switch in.Namespace {
			case "":
				in.Namespace = "team"
			case "-":
				in.Namespace = ""
			}
			if in.Revision == 0 {
				in.Revision = 7
			}
			p, errs := Build(in)
			if p != nil {
				t.Errorf("Build returned a projection along with %d errors", len(errs))
			}
			var got []Error
			for _, e := range errs {
				got = append(got, *e)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", show(got), show(tc.want))
			}
		})
	}
}

func show(es []Error) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("\t" + e.Error() + "\n")
	}
	return b.String()
}

func TestErrorString(t *testing.T) {
	e := &Error{Code: CodeExposeUnknown, Identity: "acme.x/*", Message: "package is gone"}
	if got, want := e.Error(), "expose_unknown: acme.x/*: package is gone"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{Code: CodeNamingInvalid, Message: "bad naming"}
	if got, want := e.Error(), "naming_invalid: bad naming"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestBuiltinsEmpty: a non-nil empty Builtins means the embedder has no
// built-in words, so even "mcp" may start a route.
func TestBuiltinsEmpty(t *testing.T) {
	d := decl(t, "acme.a", cmd{id: "x", path: []string{"alpha", "x"}})
	d.Commands[0].Path = []string{"mcp", "x"}
	mustBuild(t, Input{Namespace: "team", Revision: 1, Builtins: []string{}, Packages: []Package{{Digest: digest(1), Descriptor: d}}})
}

// TestDeterminism: the same revision gives byte-identical projections,
// whatever the order of packages and mcp.expose entries.
func TestDeterminism(t *testing.T) {
	orders := [][]string{
		{"deploy", "greet", "legacy"}, {"deploy", "legacy", "greet"}, {"greet", "deploy", "legacy"},
		{"greet", "legacy", "deploy"}, {"legacy", "deploy", "greet"}, {"legacy", "greet", "deploy"},
	}
	var first []byte
	var hash string
	for _, naming := range []Naming{Full, Compact} {
		first, hash = nil, ""
		for i, order := range orders {
			expose := []string{"acme.deploy/status", "acme.greet/*"}
			if i%2 == 1 {
				slices.Reverse(expose)
			}
			for range 2 {
				p := mustBuild(t, Input{Namespace: "team", Revision: 7, Naming: naming, Expose: expose, Packages: examples(t, order...)})
				b, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first, hash = b, p.CatalogHash
					continue
				}
				if p.CatalogHash != hash {
					t.Errorf("%s, order %v: catalog hash %s, want %s", naming, order, p.CatalogHash, hash)
				}
				if !bytes.Equal(b, first) {
					t.Errorf("%s, order %v: projection differs", naming, order)
				}
			}
		}
	}
}

// TestStaleNamesNeverMatch: a name listed in one revision is unknown in
// the next, even when nothing but the revision changed (invariant I7,
// docs/invariants.md).
func TestStaleNamesNeverMatch(t *testing.T) {
	for _, naming := range []Naming{Full, Compact} {
		in := Input{Namespace: "team", Revision: 7, Naming: naming, Expose: []string{"acme.deploy/status", "acme.greet/*"}, Packages: examples(t)}
		p7 := mustBuild(t, in)
		in.Revision = 8
		p8 := mustBuild(t, in)
		if p7.CatalogHash == p8.CatalogHash {
			t.Errorf("%s: the catalog hash did not change with the revision", naming)
		}
		for _, tl := range p7.Tools {
			if p7.Tool(tl.Name) == nil {
				t.Errorf("%s: %s not found in its own revision", naming, tl.Name)
			}
			if got := p8.Tool(tl.Name); got != nil {
				t.Errorf("%s: revision 7 name %s resolves to %s in revision 8", naming, tl.Name, got.Identity)
			}
		}
	}
}

func TestToolLookup(t *testing.T) {
	p := mustBuild(t, Input{Namespace: "team", Revision: 7, Expose: []string{"acme.greet/*"}, Packages: examples(t)})
	name := p.Tools[0].Name
	for _, n := range []string{"", "acme_greet_hello", name[:len(name)-1], name + "0", strings.ToUpper(name), "zzz"} {
		if got := p.Tool(n); got != nil {
			t.Errorf("Tool(%q) = %s, want nil", n, got.Name)
		}
	}
	if got := p.Tool(name); got == nil || got.Identity != "acme.greet/hello" {
		t.Errorf("Tool(%q) = %v", name, got)
	}
}

func TestResolve(t *testing.T) {
	p := mustBuild(t, Input{Namespace: "team", Revision: 7, Packages: examples(t)})
	for _, tc := range []struct {
		words    []string
		identity string
		alias    bool
		n        int
	}{
		{[]string{"deploy", "status", "--env", "stage"}, "acme.deploy/status", false, 2},
		{[]string{"deploy", "status"}, "acme.deploy/status", false, 2},
		{[]string{"ds", "web"}, "acme.deploy/status", true, 1},
		{[]string{"greet", "deploy", "status"}, "acme.greet/hello", false, 1},
		{[]string{"legacy", "run", "--anything"}, "acme.legacy/run", false, 2},
		{[]string{"deploy"}, "", false, 0}, // a group
		{[]string{"deploy", "nope"}, "", false, 0},
		{[]string{"deploy status"}, "", false, 0},
		{[]string{"version"}, "", false, 0},
		{nil, "", false, 0},
	} {
		r, n := p.Resolve(tc.words)
		switch {
		case tc.identity == "" && (r != nil || n != 0):
			t.Errorf("Resolve(%q) = %v, %d; want nil, 0", tc.words, r, n)
		case tc.identity != "" && (r == nil || r.Identity != tc.identity || r.Alias != tc.alias || n != tc.n):
			t.Errorf("Resolve(%q) = %+v, %d; want %s (alias %v), %d", tc.words, r, n, tc.identity, tc.alias, tc.n)
		}
	}
}

// TestCatalogHashFieldList recomputes the catalog hash from the documented
// field list with encoding/json and checks which changes move it.
func TestCatalogHashFieldList(t *testing.T) {
	in := Input{Namespace: "team", Revision: 7, Expose: []string{"acme.deploy/status", "acme.greet/*"}, Packages: examples(t, "deploy", "greet")}
	p := mustBuild(t, in)
	var tools []any
	for _, tl := range p.Tools {
		tools = append(tools, []any{tl.Name, tl.Identity, tl.Digest, tl.Title, tl.Description, tl.InputSchema, tl.OutputSchema, tl.Annotations})
	}
	raw, err := json.Marshal([]any{"rukh.catalog/1", "team", 7, "full", tools})
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256JCS(t, raw); p.CatalogHash != want {
		t.Fatalf("CatalogHash = %s, recomputed %s", p.CatalogHash, want)
	}

	same := func(what string, in Input) {
		t.Helper()
		if q := mustBuild(t, in); q.CatalogHash != p.CatalogHash {
			t.Errorf("%s changed the catalog hash", what)
		}
	}
	differs := func(what string, in Input) {
		t.Helper()
		if q := mustBuild(t, in); q.CatalogHash == p.CatalogHash {
			t.Errorf("%s did not change the catalog hash", what)
		}
	}
	// CLI-only packages, routes and aliases are not part of the catalog.
	in2 := in
	in2.Packages = examples(t, "deploy", "greet", "legacy")
	same("a CLI-only package", in2)
	in2 = in
	in2.Packages = examples(t, "deploy", "greet")
	in2.Packages[1].Descriptor.Commands[0].Aliases = nil
	same("removing an alias", in2)

	in2 = in
	in2.Expose = []string{"acme.greet/*"}
	differs("a smaller mcp.expose", in2)
	in2 = in
	in2.Naming = Compact
	differs("compact naming", in2)
	in2 = in
	in2.Namespace = "other"
	differs("the namespace", in2)
	in2 = in
	in2.Packages = examples(t, "deploy", "greet")
	in2.Packages[0].Digest = digest(42)
	differs("the release digest", in2)
	in2 = in
	in2.Packages = examples(t, "deploy", "greet")
	in2.Packages[1].Descriptor.Commands[0].Summary = "Say hello"
	differs("a title", in2)
	in2 = in
	in2.Packages = examples(t, "deploy", "greet")
	yes := true
	in2.Packages[1].Descriptor.Commands[0].Effects.Idempotent = &yes
	differs("an annotation", in2)
}
