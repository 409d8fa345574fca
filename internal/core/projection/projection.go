// Package projection derives, from one profile revision, the CLI route
// table and the MCP tool projection: tool names, titles, input and output
// schemas, and the catalog hash.
//
// Build is pure: it reads the descriptors it is given, runs no extension
// code and touches no disk, so the same Input always gives the same
// Projection. It checks what a revision must satisfy before it is
// published (invariant I6, docs/invariants.md) and reports every
// problem at once. A Projection
// is immutable once built; callers share it and must not modify it.
// docs/projection.md describes naming, exposure, the output envelope and
// the catalog hash.
package projection

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/values"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Naming selects how tool names are spelled; see ToolName.
type Naming string

// The namings.
const (
	Full    Naming = "full"    // slug ≤ 48 + "__" + 64 hex: invariant I7 exactly
	Compact Naming = "compact" // slug ≤ 18 + "__" + 32 hex: fits clients that allow 64 characters
)

// NotInExpose is the NotExposed reason of an eligible command that
// mcp.expose does not select.
const NotInExpose = "not in mcp.expose"

// Package is one active release of a revision.
type Package struct {
	Digest     string // "sha256:<64 lowercase hex>", the release digest
	Descriptor *descriptor.Descriptor
}

// Input is what a projection is derived from: one profile revision.
type Input struct {
	Namespace string    // the profile's endpointNamespace
	Revision  uint64    // the activeProfileRevision number, at most MaxRevision
	Naming    Naming    // "" means Full
	Expose    []string  // mcp.expose: identities "acme.deploy/status" or package sets "acme.tools/*"
	Packages  []Package // the active releases, at most one per package, in any order
	Builtins  []string  // built-in top-level words; descriptor.ReservedWords when nil
}

// Projection is the CLI route table and the MCP tools of one revision.
type Projection struct {
	Revision    uint64       `json:"revision"`
	Namespace   string       `json:"namespace"`
	Naming      Naming       `json:"naming"`
	Routes      []Route      `json:"routes"`     // sorted by Words
	Tools       []Tool       `json:"tools"`      // sorted by Name, byte order
	NotExposed  []NotExposed `json:"notExposed"` // sorted by Identity
	CatalogHash string       `json:"catalogHash"`

	routes   map[string]int // strings.Join(Words, " ") → index in Routes
	maxWords int
}

// Route is one CLI route: a command's path or one of its aliases.
type Route struct {
	Words    []string `json:"words"`
	Identity string   `json:"identity"`
	Digest   string   `json:"digest"`  // the release
	Command  int      `json:"command"` // index into the descriptor's Commands
	Alias    bool     `json:"alias"`
	Summary  string   `json:"summary"`
}

// Tool is one MCP tool.
type Tool struct {
	Name         string          `json:"name"`
	Identity     string          `json:"identity"`
	Title        string          `json:"title"`       // the command's summary
	Description  string          `json:"description"` // its description, or its summary
	Digest       string          `json:"digest"`
	Command      int             `json:"command"`
	InputSchema  json.RawMessage `json:"inputSchema"`  // values.InputSchema of the command's inputs
	OutputSchema json.RawMessage `json:"outputSchema"` // OutputSchema of its declared result
	Annotations  Annotations     `json:"annotations"`
	// Effects is the declared effects class ("" when none is declared);
	// the dispatch projection asks a schema fingerprint of every class
	// but none and read (FingerprintRequired).
	Effects string `json:"effects,omitempty"`
}

// NotExposed is a machine-eligible command that is not a tool, and why.
type NotExposed struct {
	Identity string `json:"identity"`
	Reason   string `json:"reason"`
}

// Build derives the projection of in. It returns every problem found, in
// a fixed order (input, packages, routes, exposure, names), and a nil
// Projection if there is any.
func Build(in Input) (*Projection, []*Error) {
	b := &builder{in: in}
	b.checkInput()
	b.collectPackages()
	b.checkRoutes()
	b.selectTools()
	if len(b.errs) > 0 {
		return nil, b.errs
	}
	p := b.p
	hash, err := catalogHash(p)
	if err != nil {
		return nil, []*Error{errorf(CodeCatalogHash, "", "cannot canonicalize the catalog: %v", err)}
	}
	p.CatalogHash = hash
	p.routes = make(map[string]int, len(p.Routes))
	for i, r := range p.Routes {
		p.routes[strings.Join(r.Words, " ")] = i
		p.maxWords = max(p.maxWords, len(r.Words))
	}
	return p, nil
}

type builder struct {
	in   Input
	p    *Projection
	pkgs []Package // valid, one per package, sorted by package name
	errs []*Error
}

func (b *builder) add(code Code, identity, format string, args ...any) {
	b.errs = append(b.errs, errorf(code, identity, format, args...))
}

func (b *builder) checkInput() {
	in := b.in
	naming := in.Naming
	switch naming {
	case "":
		naming = Full
	case Full, Compact:
	default:
		b.add(CodeNamingInvalid, "", "naming %q is not %q or %q", in.Naming, Full, Compact)
	}
	if in.Namespace == "" || !utf8.ValidString(in.Namespace) {
		b.add(CodeNamespaceInvalid, "", "endpoint namespace %q must be non-empty UTF-8; set endpointNamespace in the profile", in.Namespace)
	}
	if in.Revision > MaxRevision {
		b.add(CodeRevisionInvalid, "", "revision %d is larger than %d, the largest a fingerprint can hold exactly", in.Revision, uint64(MaxRevision))
	}
	b.p = &Projection{Revision: in.Revision, Namespace: in.Namespace, Naming: naming,
		Routes: []Route{}, Tools: []Tool{}, NotExposed: []NotExposed{}}
}

// collectPackages keeps the packages that can be projected, sorted by
// name, so that the order of Input.Packages never matters.
func (b *builder) collectPackages() {
	pkgs := make([]Package, 0, len(b.in.Packages))
	for i, pk := range b.in.Packages {
		if pk.Descriptor == nil {
			b.add(CodePackageInvalid, "", "active release #%d (%s) has no descriptor", i, pk.Digest)
			continue
		}
		pkgs = append(pkgs, pk)
	}
	slices.SortStableFunc(pkgs, func(x, y Package) int {
		return cmp.Or(strings.Compare(x.Descriptor.Package, y.Descriptor.Package), strings.Compare(x.Digest, y.Digest))
	})
	for i, pk := range pkgs {
		d := pk.Descriptor
		if i > 0 && pkgs[i-1].Descriptor.Package == d.Package {
			b.add(CodePackageInvalid, d.Package, "releases %s and %s are both active; a revision activates at most one release of a package",
				pkgs[i-1].Digest, pk.Digest)
			continue
		}
		ok := true
		if !descriptor.ValidDigest(pk.Digest) {
			b.add(CodePackageInvalid, d.Package, "release digest %q is not \"sha256:\" and 64 lowercase hex digits", pk.Digest)
			ok = false
		}
		for j, c := range d.Commands {
			switch {
			case c == nil:
				b.add(CodePackageInvalid, d.Package, "command #%d is missing", j)
				ok = false
			case c.Identity != d.Package+"/"+c.ID:
				b.add(CodePackageInvalid, d.Package, "command #%d has identity %q, not %q", j, c.Identity, d.Package+"/"+c.ID)
				ok = false
			case len(c.Path) == 0 || slices.ContainsFunc(c.Aliases, func(a []string) bool { return len(a) == 0 }):
				b.add(CodePackageInvalid, c.Identity, "a path or alias has no words")
				ok = false
			}
		}
		if ok {
			b.pkgs = append(b.pkgs, pk)
		}
	}
}

// checkRoutes builds the route table and rejects routes that start with a
// built-in word, equal routes, and routes that nest.
func (b *builder) checkRoutes() {
	var routes []Route
	for _, pk := range b.pkgs {
		for j, c := range pk.Descriptor.Commands {
			routes = append(routes, Route{Words: slices.Clone(c.Path), Identity: c.Identity, Digest: pk.Digest, Command: j, Summary: c.Summary})
			for _, a := range c.Aliases {
				routes = append(routes, Route{Words: slices.Clone(a), Identity: c.Identity, Digest: pk.Digest, Command: j, Alias: true, Summary: c.Summary})
			}
		}
	}
	slices.SortFunc(routes, func(x, y Route) int {
		return cmp.Or(slices.Compare(x.Words, y.Words), strings.Compare(x.Identity, y.Identity),
			cmp.Compare(x.Command, y.Command), boolCompare(x.Alias, y.Alias))
	})
	builtins := b.in.Builtins
	if builtins == nil {
		builtins = descriptor.ReservedWords
	}
	for _, r := range routes {
		if slices.Contains(builtins, r.Words[0]) {
			b.add(CodeRouteCollision, r.Identity, "route %q of %s starts with the built-in command %q; publish a release with another first word",
				spell(r.Words), r.Identity, r.Words[0])
		}
	}
	// Sorted, every route that equals or extends routes[i] follows it
	// directly, so each colliding pair is found once.
	for i, r := range routes {
		for _, q := range routes[i+1:] {
			if len(q.Words) < len(r.Words) || !slices.Equal(r.Words, q.Words[:len(r.Words)]) {
				break
			}
			if len(q.Words) == len(r.Words) {
				b.add(CodeRouteCollision, q.Identity, "route %q of %s is also a route of %s; deactivate one of the packages or publish a release with another route",
					spell(r.Words), q.Identity, r.Identity)
			} else {
				b.add(CodeGroupCollision, q.Identity, "route %q of %s is inside route %q of %s: a group cannot also be a command; deactivate one of the packages or publish a release with another route",
					spell(q.Words), q.Identity, spell(r.Words), r.Identity)
			}
		}
	}
	b.p.Routes = append(b.p.Routes, routes...)
}

func boolCompare(x, y bool) int {
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}

func spell(words []string) string { return strings.Join(words, " ") }

// selectTools applies mcp.expose to the eligible commands and names the
// tools.
func (b *builder) selectTools() {
	byPackage := make(map[string]*descriptor.Descriptor, len(b.pkgs))
	for _, pk := range b.pkgs {
		byPackage[pk.Descriptor.Package] = pk.Descriptor
	}
	sets := make(map[string]bool)  // package → exposed as a set
	exact := make(map[string]bool) // identity → exposed by name
	seen := make(map[string]bool)
	// meant is a "did you mean" for an entry that names nothing active:
	// the nearest installed command identity (or package set, for a set).
	meant := func(e string) string {
		var names []string
		for pkg, d := range byPackage {
			if strings.HasSuffix(e, "/*") {
				names = append(names, pkg+"/*")
				continue
			}
			for _, c := range d.Commands {
				if c != nil {
					names = append(names, c.Identity)
				}
			}
		}
		if near, ok := strictjson.Closest(e, names); ok {
			return fmt.Sprintf("; did you mean %q?", near)
		}
		return ""
	}
	for _, e := range b.in.Expose {
		if seen[e] {
			continue
		}
		seen[e] = true
		pkg, id, ok := profile.ParseExposure(e)
		if !ok {
			b.add(CodeExposeInvalid, e, "%q is not a command identity like \"acme.deploy/status\" or a package set like \"acme.tools/*\"; fix mcp.expose in the profile", e)
			continue
		}
		d := byPackage[pkg]
		if d == nil {
			b.add(CodeExposeUnknown, e, "package %q is not active in this revision; activate a release of it or remove %q from mcp.expose%s", pkg, e, meant(e))
			continue
		}
		if id == "*" {
			sets[pkg] = true
			continue
		}
		found := false
		for _, c := range d.Commands {
			if c.ID != id {
				continue
			}
			found = true
			if !c.Eligibility.Eligible {
				b.add(CodeExposeNotEligible, e, "%s cannot be a tool: %s; remove it from mcp.expose or activate a release that declares a machine contract",
					e, reasons(c.Eligibility))
			}
		}
		if !found {
			b.add(CodeExposeUnknown, e, "the active release of %s has no command %q; remove %q from mcp.expose%s", pkg, id, e, meant(e))
			continue
		}
		exact[e] = true
	}

	p := b.p
	for _, pk := range b.pkgs {
		d := pk.Descriptor
		for j, c := range d.Commands {
			if !c.Eligibility.Eligible {
				continue
			}
			if !sets[d.Package] && !exact[c.Identity] {
				p.NotExposed = append(p.NotExposed, NotExposed{Identity: c.Identity, Reason: NotInExpose})
				continue
			}
			desc := c.Description
			if desc == "" {
				desc = c.Summary
			}
			p.Tools = append(p.Tools, Tool{
				Name:         ToolName(p.Namespace, p.Revision, c.Identity, p.Naming),
				Identity:     c.Identity,
				Title:        c.Summary,
				Description:  desc,
				Digest:       pk.Digest,
				Command:      j,
				InputSchema:  values.InputSchema(c.Specs()),
				OutputSchema: OutputSchema(c.Execute.Result),
				Annotations:  annotations(c.Effects),
				Effects:      string(c.Effects.Class),
			})
		}
	}
	slices.SortFunc(p.Tools, func(x, y Tool) int {
		return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Identity, y.Identity), cmp.Compare(x.Command, y.Command))
	})
	for i := 1; i < len(p.Tools); i++ {
		if x, y := &p.Tools[i-1], &p.Tools[i]; x.Name == y.Name {
			b.add(CodeNameCollision, y.Identity, "tool name %q is computed for two commands (%s, command #%d, and %s, command #%d); a revision cannot publish two tools under one name",
				y.Name, x.Identity, x.Command, y.Identity, y.Command)
		}
	}
	slices.SortStableFunc(p.NotExposed, func(x, y NotExposed) int { return strings.Compare(x.Identity, y.Identity) })
}

func reasons(e descriptor.Eligibility) string {
	if len(e.Reasons) == 0 {
		return "it is not machine-eligible"
	}
	msgs := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		msgs[i] = r.Message + " (" + r.Code + ")"
	}
	return strings.Join(msgs, "; ")
}

// Tool returns the tool named name exactly, or nil.
func (p *Projection) Tool(name string) *Tool {
	i := sort.Search(len(p.Tools), func(i int) bool { return p.Tools[i].Name >= name })
	if i < len(p.Tools) && p.Tools[i].Name == name {
		return &p.Tools[i]
	}
	return nil
}

// Resolve returns the route that is the longest prefix of words and how
// many words it consumed, or nil and 0. A group (a proper prefix of
// routes, such as "deploy" for "deploy status") is not a route.
func (p *Projection) Resolve(words []string) (*Route, int) {
	for n := min(len(words), p.maxWords); n > 0; n-- {
		// The comparison guards against a word that holds a space.
		if i, ok := p.routes[spell(words[:n])]; ok && slices.Equal(p.Routes[i].Words, words[:n]) {
			return &p.Routes[i], n
		}
	}
	return nil, 0
}
