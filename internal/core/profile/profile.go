// Package profile is the owner's configuration of a Rukh CLI: the endpoint
// namespace, which commands agents may see, and the task presets that
// bound every invocation. A profile is validated on its own here; whether
// its exposures name real, eligible commands is checked when a revision is
// built from it.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/internal/jsoncanon"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Profile is one owner configuration. The JSON names are pinned by
// docs/reference.md §3.
type Profile struct {
	EndpointNamespace string          `json:"endpointNamespace"`
	CLI               CLI             `json:"cli"`
	MCP               MCP             `json:"mcp"`
	Tasks             map[string]Task `json:"tasks"`
	// Wrappers are the owner's wrappers of version 1 commands, each a
	// command of package "owner" with its own typed contract (package
	// admin checks and builds them: docs/owner.md, "Wrappers").
	Wrappers []json.RawMessage `json:"wrappers,omitempty"`
}

// CLI binds the command line to a task preset.
type CLI struct {
	Task string `json:"task"`
}

// MCP says what `rukh mcp` exposes and under which task preset.
type MCP struct {
	// Expose lists exact command identities ("acme.deploy/status") or
	// package sets ("acme.tools/*").
	Expose []string `json:"expose"`
	Task   string   `json:"task"`
	// Naming is "full" (the default: slug + full SHA-256 fingerprint) or
	// "compact" (names that fit 64 characters; see docs/projection.md).
	Naming string `json:"naming,omitempty"`
	// Projection is "tools" (the default: one MCP tool per exposed
	// command) or "dispatch" (one tool whose ops name the commands, with
	// their schemas on demand; docs/adr/0006-dispatch-projection.md).
	Projection string `json:"projection,omitempty"`
	// HTTP configures `rukh mcp --http`, which refuses to start without it
	// (docs/mcp.md, "Over HTTP").
	HTTP *HTTP `json:"http,omitempty"`
}

// HTTP is the optional HTTP adapter: an OAuth 2.1 resource server that
// binds each verified caller to a task.
type HTTP struct {
	// Resource is this server's canonical URI (RFC 8707): every token's
	// aud must contain it, and the protected resource metadata names it.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuers whose tokens are accepted,
	// each with the JSON Web Key Set that signs them.
	AuthorizationServers []AuthorizationServer `json:"authorizationServers"`
	// RequiredScopes must all be granted to every token.
	RequiredScopes []string `json:"requiredScopes,omitempty"`
	// Bindings pick the task of a verified caller: the first that
	// matches. A caller no binding matches is refused.
	Bindings []Binding `json:"bindings"`
	// AllowedOrigins are the browser origins whose requests are served;
	// a request without Origin (not a browser) is served too.
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
}

// AuthorizationServer is an issuer of tokens and its signing keys.
type AuthorizationServer struct {
	Issuer  string `json:"issuer"`  // compared exactly with a token's iss
	JWKSURI string `json:"jwksUri"` // https://…, or file:///… for an air-gapped owner
}

// Binding binds callers of Issuer to Task: the one whose sub is Subject,
// or every one whose claim Claim is Value (or a list holding Value).
type Binding struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject,omitempty"`
	Claim   string `json:"claim,omitempty"`
	Value   string `json:"value,omitempty"`
	Task    string `json:"task"`
}

// Limits of the HTTP section.
const (
	MaxAuthorizationServers = 16
	MaxBindings             = 256
)

// Task is a preset that bounds invocations: which commands, how long,
// how many at once, under which enforcement, with which access.
type Task struct {
	Commands      []string `json:"commands"` // identity patterns, e.g. "acme.*/*"
	DeadlineMs    int64    `json:"deadlineMs"`
	MaxConcurrent int      `json:"maxConcurrent"`
	Enforcement   string   `json:"enforcement"` // host | restricted | strict
	Allow         []Rule   `json:"allow,omitempty"`
	// Resource limits of each command (restricted and strict only; 0 is
	// no limit): CPU seconds, address space, open files, processes.
	CPUSeconds  int64 `json:"cpuSeconds,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	OpenFiles   int64 `json:"openFiles,omitempty"`
	Processes   int64 `json:"processes,omitempty"`
	// RequireApproval lists the effect classes ("destructive",
	// "external", ...) whose calls under this task wait for the owner's
	// approval (`rukh approve ID`), given once per exact call.
	RequireApproval []string `json:"requireApproval,omitempty"`
	// ApprovalTTLMs is how long a request for approval stays open, and an
	// approval usable (0: DefaultApprovalTTLMs).
	ApprovalTTLMs int64 `json:"approvalTtlMs,omitempty"`
}

// Approval bounds.
const (
	DefaultApprovalTTLMs = 15 * 60 * 1000
	MinApprovalTTLMs     = 1000
	MaxApprovalTTLMs     = 24 * 60 * 60 * 1000
)

// NeedsApproval reports whether calls of a command of this effect class
// need the owner's approval under t.
func (t Task) NeedsApproval(class descriptor.EffectClass) bool {
	return slices.Contains(t.RequireApproval, string(class))
}

// Warnings says what a valid profile allows that its owner may not mean
// (docs/owner.md, "Effects and approval"):
//
//   - a task that keeps calls for the owner's approval and runs its
//     commands under restricted: such a command cannot reach Rukh's store
//     or daemon, approve, or broaden its task, but it writes the owner's
//     other files, and can leave there what acts later (a shell's
//     start-up file);
//   - approvals anywhere while a task that agents use runs its commands
//     under host: a host command acts as the owner, and can approve what
//     any task keeps, or change the profile.
func (p *Profile) Warnings() []string {
	var out []string
	var approving []string
	for _, name := range slices.Sorted(maps.Keys(p.Tasks)) {
		t := p.Tasks[name]
		if len(t.RequireApproval) > 0 {
			approving = append(approving, strconv.Quote(name))
		}
		if len(t.RequireApproval) > 0 && t.Enforcement == EnforceRestricted {
			out = append(out, fmt.Sprintf("task %q keeps %s calls for your approval and runs its commands under %q: they cannot reach the store or the daemon, approve, or change the profile, but they can change your other files (your shell's start-up files too) and leave there what runs later as you; use \"strict\" for commands you do not trust",
				name, strings.Join(t.RequireApproval, ", "), t.Enforcement))
		}
	}
	if len(approving) == 0 {
		return out
	}
	agents := []string{p.MCP.Task}
	if p.MCP.HTTP != nil {
		for _, b := range p.MCP.HTTP.Bindings {
			agents = append(agents, b.Task)
		}
	}
	slices.Sort(agents)
	for _, name := range slices.Compact(agents) {
		if t, ok := p.Tasks[name]; ok && t.Enforcement == EnforceHost {
			out = append(out, fmt.Sprintf("task %q, which agents use, runs its commands under %q, where a command acts as you: it can approve the calls that task %s keeps for you, or change the profile; use \"restricted\" or \"strict\" there",
				name, EnforceHost, strings.Join(approving, ", ")))
		}
	}
	return out
}

// CheckApply is what a profile the owner applies must hold beyond
// Validate, which every stored revision is read with too: a task that
// keeps calls for approval does not run them under host, where a
// command acts as the owner and could approve its own call. A revision
// published before this rule is still read (admission refuses those
// calls instead).
func (p *Profile) CheckApply() error {
	var errs Errors
	for _, name := range slices.Sorted(maps.Keys(p.Tasks)) {
		if t := p.Tasks[name]; len(t.RequireApproval) > 0 && t.Enforcement == EnforceHost {
			errs = append(errs, &Error{Path: strictjson.Pointer("tasks", name) + "/requireApproval",
				Message: fmt.Sprintf("a task whose calls wait for your approval cannot run them under %q: a host command acts as you, and could approve its own call; use %q or %q",
					EnforceHost, EnforceRestricted, EnforceStrict)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// ApprovalTTL is how long t's approvals last.
func (t Task) ApprovalTTL() time.Duration {
	if t.ApprovalTTLMs == 0 {
		return DefaultApprovalTTLMs * time.Millisecond
	}
	return time.Duration(t.ApprovalTTLMs) * time.Millisecond
}

// HasLimits reports whether the task sets any resource limit.
func (t Task) HasLimits() bool {
	return t.CPUSeconds != 0 || t.MemoryBytes != 0 || t.OpenFiles != 0 || t.Processes != 0
}

// Rule allows one action on one resource; both may hold "*" wildcards.
type Rule struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
}

// Limits of a profile.
const (
	MaxBytes         = 256 << 10
	MaxDeadlineMs    = 24 * 60 * 60 * 1000
	MaxConcurrent    = 256
	MaxTasks         = 64
	MaxWrappers      = 64
	MaxPatterns      = 256
	MaxNamespaceSize = 32
)

// Enforcement profiles.
const (
	EnforceHost       = "host"
	EnforceRestricted = "restricted"
	EnforceStrict     = "strict"
)

// Default is the profile of a store no owner has configured: the CLI may
// run every installed command, and agents see nothing until the owner
// exposes commands.
func Default() *Profile {
	return &Profile{
		EndpointNamespace: "local",
		CLI:               CLI{Task: "owner"},
		MCP:               MCP{Expose: []string{}, Task: "agent"},
		Tasks: map[string]Task{
			"owner": {Commands: []string{"*/*"}, DeadlineMs: 60 * 60 * 1000, MaxConcurrent: 8,
				Enforcement: EnforceHost, Allow: []Rule{{Action: "*", Resource: "*"}}},
			"agent": {Commands: []string{"*/*"}, DeadlineMs: 30 * 1000, MaxConcurrent: 4,
				Enforcement: EnforceHost},
		},
	}
}

// Error is one problem in a profile, at a JSON pointer; a document that
// is not JSON at all is one Error at a line and column instead.
type Error struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	// Line and Column (1-based, in characters) place a JSON syntax error;
	// File, when the caller set it (Errors.In), names the file.
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	File   string `json:"file,omitempty"`
}

func (e *Error) Error() string {
	if e.Line > 0 {
		pos := fmt.Sprintf("%d:%d", e.Line, e.Column)
		if e.File != "" {
			pos = e.File + ":" + pos
		}
		return pos + ": " + e.Message
	}
	p := e.Path
	if p == "" {
		p = "/"
	}
	return p + ": " + e.Message
}

// Errors is every problem found in one profile.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return "invalid profile: " + strings.Join(msgs, "; ")
}

// In returns es with the errors that have a line and column placed in
// file, as `profile apply -f FILE` says them (FILE:3:17: …).
func (es Errors) In(file string) Errors {
	out := make(Errors, len(es))
	for i, e := range es {
		c := *e
		if c.Line > 0 {
			c.File = file
		}
		out[i] = &c
	}
	return out
}

// Parse decodes a profile strictly (duplicate keys, unknown members and
// invalid UTF-8 are errors) and validates it.
func Parse(data []byte) (*Profile, error) {
	root, err := strictjson.Parse(data, strictjson.Limits{MaxBytes: MaxBytes, MaxDepth: 8, MaxMembers: 1 << 14})
	if err != nil {
		var je *strictjson.Error
		if errors.As(err, &je) && je.Line > 0 {
			return nil, Errors{{Path: je.Pointer, Line: je.Line, Column: je.Column, Message: je.Message}}
		}
		return nil, Errors{{Message: err.Error()}}
	}
	// encoding/json matches member names case-insensitively, reads null
	// as "absent" and names a type error in Go's terms, without the map
	// keys on its way: check the exact shape and every value's type first.
	if errs := checkShape(root, "", profileShape); len(errs) > 0 {
		return nil, errs
	}
	if errs := checkTypes(root, "", reflect.TypeFor[Profile](), ""); len(errs) > 0 {
		return nil, errs
	}
	var p Profile
	fill(root, data, reflect.ValueOf(&p).Elem())
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// shape is the closed set of member names of one object level; a nil
// shape accepts no object, "*" stands for any member name.
type shape map[string]shape

// opaque is the shape of what another validator checks.
var opaque = shape{"\x00opaque": nil}

var (
	ruleShape = shape{"action": nil, "resource": nil}
	taskShape = shape{"commands": nil, "deadlineMs": nil, "maxConcurrent": nil, "enforcement": nil, "allow": ruleShape,
		"cpuSeconds": nil, "memoryBytes": nil, "openFiles": nil, "processes": nil,
		"requireApproval": nil, "approvalTtlMs": nil}
	profileShape = shape{
		"endpointNamespace": nil,
		"cli":               {"task": nil},
		"mcp": {"expose": nil, "task": nil, "naming": nil, "projection": nil, "http": {
			"resource": nil, "authorizationServers": {"issuer": nil, "jwksUri": nil}, "requiredScopes": nil,
			"bindings": {"issuer": nil, "subject": nil, "claim": nil, "value": nil, "task": nil}, "allowedOrigins": nil,
		}},
		"tasks":    {"*": taskShape},
		"wrappers": opaque, // a command's declaration, checked by the descriptor's validator
	}
)

// checkShape reports members the profile format does not define (names
// are exact) and nulls, which the format never allows.
func checkShape(v *strictjson.Value, at string, sh shape) Errors {
	if _, ok := sh["\x00opaque"]; ok {
		if v.Kind == strictjson.Null {
			return Errors{{Path: at, Message: "null is not allowed; give a value or leave the member out"}}
		}
		return nil
	}
	var errs Errors
	switch v.Kind {
	case strictjson.Null:
		return Errors{{Path: at, Message: "null is not allowed; give a value or leave the member out"}}
	case strictjson.Array:
		for i, it := range v.Items {
			errs = append(errs, checkShape(it, fmt.Sprintf("%s/%d", at, i), sh)...)
		}
	case strictjson.Object:
		for _, m := range v.Members {
			child := strictjson.AppendPointer(at, m.Name)
			sub, ok := sh[m.Name]
			if !ok {
				sub, ok = sh["*"]
			}
			if !ok {
				msg := fmt.Sprintf("unknown member %q; see docs/owner.md", m.Name)
				if near, ok := strictjson.Closest(m.Name, memberNames(sh)); ok {
					msg = fmt.Sprintf("unknown member; did you mean %q?", near)
				}
				errs = append(errs, &Error{Path: child, Message: msg})
				continue
			}
			errs = append(errs, checkShape(m.Value, child, sub)...)
		}
	}
	return errs
}

// memberNames are the member names sh defines.
func memberNames(sh shape) []string {
	var names []string
	for n := range sh {
		if n != "*" && !strings.HasPrefix(n, "\x00") {
			names = append(names, n)
		}
	}
	return names
}

// isTaskName: ^[a-z][a-z0-9-]*$ (taskname_test.go fuzzes it against that
// expression).
func isTaskName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-') })
}

// Validate checks the profile on its own.
func (p *Profile) Validate() error {
	var errs Errors
	add := func(at, format string, args ...any) {
		errs = append(errs, &Error{Path: at, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case p.EndpointNamespace == "":
		add("/endpointNamespace", "missing: every profile names its endpoint namespace (e.g. \"team\"), part of every tool name; see docs/owner.md, \"Profile\"")
	case len(p.EndpointNamespace) > MaxNamespaceSize || !descriptor.Words(p.EndpointNamespace):
		add("/endpointNamespace", "%q is not a namespace: lowercase letters and digits joined by \"-\", at most %d characters", p.EndpointNamespace, MaxNamespaceSize)
	}
	if len(p.Tasks) > MaxTasks {
		add("/tasks", "%d tasks; at most %d are allowed", len(p.Tasks), MaxTasks)
	}
	if len(p.Wrappers) > MaxWrappers {
		add("/wrappers", "%d wrappers; at most %d are allowed", len(p.Wrappers), MaxWrappers)
	}
	taskRef := func(at, name string) {
		if name == "" {
			add(at, "missing: name the task preset (from tasks) these calls run under")
		} else if _, ok := p.Tasks[name]; !ok {
			msg := fmt.Sprintf("task %q is not defined in tasks", name)
			if near, ok := strictjson.Closest(name, slices.Collect(maps.Keys(p.Tasks))); ok {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			add(at, "%s", msg)
		}
	}
	taskRef("/cli/task", p.CLI.Task)
	taskRef("/mcp/task", p.MCP.Task)
	if len(p.MCP.Expose) > MaxPatterns {
		add("/mcp/expose", "%d entries; at most %d are allowed", len(p.MCP.Expose), MaxPatterns)
	}
	for i, e := range p.MCP.Expose {
		at := fmt.Sprintf("/mcp/expose/%d", i)
		switch {
		case !validExposureEntry(e):
			add(at, "%q is neither a command identity like \"acme.deploy/status\" nor a package set like \"acme.deploy/*\"", e)
		case slices.Index(p.MCP.Expose, e) != i:
			add(at, "%q is listed twice", e)
		}
	}
	switch p.MCP.Naming {
	case "", "full", "compact":
	default:
		add("/mcp/naming", "naming %q is not \"full\" or \"compact\"", p.MCP.Naming)
	}
	switch p.MCP.Projection {
	case "", ProjectionTools, ProjectionDispatch:
	default:
		add("/mcp/projection", "projection %q is not %q or %q", p.MCP.Projection, ProjectionTools, ProjectionDispatch)
	}
	if h := p.MCP.HTTP; h != nil {
		validateHTTP(h, add, taskRef)
	}
	for _, name := range sortedKeys(p.Tasks) {
		t := p.Tasks[name]
		at := strictjson.Pointer("tasks", name)
		if !isTaskName(name) {
			add(at, "task name %q: use lowercase letters, digits and \"-\", starting with a letter", name)
		}
		if len(t.Commands) > MaxPatterns {
			add(at+"/commands", "%d patterns; at most %d are allowed", len(t.Commands), MaxPatterns)
		}
		for i, c := range t.Commands {
			if !validPattern(c) || !strings.Contains(c, "/") {
				add(fmt.Sprintf("%s/commands/%d", at, i), "%q is not an identity pattern like \"acme.*/*\"", c)
			}
		}
		if t.DeadlineMs < 1 || t.DeadlineMs > MaxDeadlineMs {
			add(at+"/deadlineMs", "deadlineMs must be from 1 to %d (every call has a finite deadline)", MaxDeadlineMs)
		}
		if t.MaxConcurrent < 1 || t.MaxConcurrent > MaxConcurrent {
			add(at+"/maxConcurrent", "maxConcurrent must be from 1 to %d", MaxConcurrent)
		}
		switch t.Enforcement {
		case EnforceHost, EnforceRestricted, EnforceStrict:
		default:
			add(at+"/enforcement", "enforcement %q is not %q, %q or %q", t.Enforcement, EnforceHost, EnforceRestricted, EnforceStrict)
		}
		for _, l := range []struct {
			name string
			v    int64
		}{{"cpuSeconds", t.CPUSeconds}, {"memoryBytes", t.MemoryBytes}, {"openFiles", t.OpenFiles}, {"processes", t.Processes}} {
			if l.v < 0 {
				add(at+"/"+l.name, "%s must be 0 (no limit) or more", l.name)
			}
		}
		if t.HasLimits() && t.Enforcement == EnforceHost {
			// A declared protection that is not enforced is worse than none.
			add(at+"/enforcement", "resource limits are applied only under enforcement %q or %q; this task is %q", EnforceRestricted, EnforceStrict, EnforceHost)
		}
		seen := map[string]bool{}
		for i, c := range t.RequireApproval {
			switch descriptor.EffectClass(c) {
			case descriptor.EffectNone, descriptor.EffectRead, descriptor.EffectWrite, descriptor.EffectExternal, descriptor.EffectDestructive:
			default:
				add(fmt.Sprintf("%s/requireApproval/%d", at, i), "%q is not an effect class: none, read, write, external or destructive", c)
			}
			if seen[c] {
				add(fmt.Sprintf("%s/requireApproval/%d", at, i), "%q is listed twice", c)
			}
			seen[c] = true
		}
		switch {
		case t.ApprovalTTLMs != 0 && len(t.RequireApproval) == 0:
			add(at+"/approvalTtlMs", "approvalTtlMs applies only with requireApproval; remove it or name the effect classes that need approval")
		case t.ApprovalTTLMs != 0 && (t.ApprovalTTLMs < MinApprovalTTLMs || t.ApprovalTTLMs > MaxApprovalTTLMs):
			add(at+"/approvalTtlMs", "approvalTtlMs must be from %d to %d (0 for %d)", MinApprovalTTLMs, MaxApprovalTTLMs, DefaultApprovalTTLMs)
		}
		if len(t.Allow) > MaxPatterns {
			add(at+"/allow", "%d rules; at most %d are allowed", len(t.Allow), MaxPatterns)
		}
		for i, r := range t.Allow {
			if r.Action == "" || !validPattern(r.Action) || !validPattern(r.Resource) {
				add(fmt.Sprintf("%s/allow/%d", at, i), "an allow rule needs an action and a resource pattern (\"*\" matches anything)")
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// ParseExposure splits an mcp.expose entry — a command identity or a
// package set like "acme.tools/*" — into package and command id ("*" for
// a set), and reports whether it is valid.
func ParseExposure(e string) (pkg, id string, ok bool) {
	if pkg, ok := strings.CutSuffix(e, "/*"); ok {
		return pkg, "*", descriptor.ValidPackage(pkg)
	}
	return descriptor.SplitIdentity(e)
}

func validExposureEntry(e string) bool {
	_, _, ok := ParseExposure(e)
	return ok
}

func validPattern(p string) bool {
	if len(p) > 256 || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	_, err := path.Match(p, "")
	return err == nil
}

// Matches reports whether identity matches an identity pattern of a task
// ("*" matches within one part: "acme.*/*" matches "acme.deploy/status").
func Matches(pattern, identity string) bool {
	ok, _ := path.Match(pattern, identity)
	return ok
}

// Canonical returns the RFC 8785 encoding of the profile: the bytes a
// revision stores and hashes.
func (p *Profile) Canonical() []byte {
	c := *p
	if c.MCP.Expose == nil {
		c.MCP.Expose = []string{}
	}
	raw, err := json.Marshal(&c)
	if err != nil {
		panic("profile: marshal: " + err.Error())
	}
	out, err := jsoncanon.Transform(raw)
	if err != nil {
		panic("profile: canonicalize: " + err.Error())
	}
	return out
}

// The MCP projections (mcp.projection).
const (
	ProjectionTools    = "tools"    // one tool per exposed command (the default)
	ProjectionDispatch = "dispatch" // one tool; ops name the commands
)

// MCPProjection returns the MCP projection with the default applied.
func (p *Profile) MCPProjection() string {
	if p.MCP.Projection == "" {
		return ProjectionTools
	}
	return p.MCP.Projection
}

// Naming returns the MCP naming mode with the default applied.
func (p *Profile) Naming() string {
	if p.MCP.Naming == "" {
		return "full"
	}
	return p.MCP.Naming
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateHTTP checks the mcp.http section: URLs that are what they say,
// bindings that name a configured issuer, one way to match, and a task
// of this profile.
func validateHTTP(h *HTTP, add func(at, format string, args ...any), taskRef func(at, name string)) {
	const at = "/mcp/http"
	if !httpsURL(h.Resource, true) {
		add(at+"/resource", "%q is not this server's URL: an absolute https:// URL without a fragment (http:// only for localhost), e.g. \"https://tools.example.com/mcp\"", h.Resource)
	}
	switch n := len(h.AuthorizationServers); {
	case n == 0:
		add(at+"/authorizationServers", "missing: name at least one issuer and its jwksUri")
	case n > MaxAuthorizationServers:
		add(at+"/authorizationServers", "%d issuers; at most %d are allowed", n, MaxAuthorizationServers)
	}
	issuers := map[string]bool{}
	for i, as := range h.AuthorizationServers {
		ap := fmt.Sprintf("%s/authorizationServers/%d", at, i)
		if !httpsURL(as.Issuer, false) {
			add(ap+"/issuer", "%q is not an issuer: an https:// URL, written as the tokens' iss claim writes it", as.Issuer)
		}
		if issuers[as.Issuer] {
			add(ap+"/issuer", "%q is listed twice", as.Issuer)
		}
		issuers[as.Issuer] = true
		if u, err := url.Parse(as.JWKSURI); err != nil || !(u.Scheme == "https" && u.Host != "" || u.Scheme == "file" && u.Host == "" && path.IsAbs(u.Path)) {
			add(ap+"/jwksUri", "%q is not a key set's location: https://… or file:///absolute/path", as.JWKSURI)
		}
	}
	for i, s := range h.RequiredScopes {
		if s == "" || strings.ContainsAny(s, " \t\n\"\\") {
			add(fmt.Sprintf("%s/requiredScopes/%d", at, i), "%q is not a scope (no spaces, quotes or backslashes)", s)
		}
	}
	switch n := len(h.Bindings); {
	case n == 0:
		add(at+"/bindings", "missing: bind callers (an issuer and a subject, or a claim value) to tasks; a caller no binding matches is refused")
	case n > MaxBindings:
		add(at+"/bindings", "%d bindings; at most %d are allowed", n, MaxBindings)
	}
	for i, b := range h.Bindings {
		bp := fmt.Sprintf("%s/bindings/%d", at, i)
		if !issuers[b.Issuer] {
			add(bp+"/issuer", "issuer %q is not among authorizationServers", b.Issuer)
		}
		switch {
		case b.Subject != "" && (b.Claim != "" || b.Value != ""):
			add(bp, "give a subject, or a claim and a value, not both")
		case b.Subject == "" && (b.Claim == "" || b.Value == ""):
			add(bp, "missing: a subject, or a claim and a value (e.g. \"claim\": \"groups\", \"value\": \"ops\")")
		case b.Claim != "" && slices.Contains([]string{"iss", "aud", "exp", "nbf", "iat", "jti", "sub", "scope", "scp"}, b.Claim):
			add(bp+"/claim", "%q is checked by the token's verification; bind on subject, or on another claim", b.Claim)
		}
		taskRef(bp+"/task", b.Task)
	}
	for i, o := range h.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			add(fmt.Sprintf("%s/allowedOrigins/%d", at, i), "%q is not an origin: scheme://host[:port], e.g. \"https://app.example.com\"", o)
		}
	}
}

// httpsURL reports whether s is an absolute https URL without a fragment
// or credentials; loopback may be http when it is a resource.
func httpsURL(s string, loopbackHTTP bool) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		return loopbackHTTP && (h == "localhost" || h == "127.0.0.1" || h == "::1")
	}
	return false
}
