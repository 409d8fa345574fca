package descriptor

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Limits of the descriptor format. A result schema inside a descriptor
// has its own, smaller limits (resultschema.DefaultLimits).
const (
	MaxBytes       = 1 << 20 // the whole file
	MaxDepth       = 48      // JSON nesting; deep enough for a result schema of depth 16
	MaxMembers     = 1 << 16 // members and elements, summed over the document
	MaxCommands    = 512
	MaxPathWords   = 8
	MaxAliases     = 8
	MaxInputs      = 64
	MaxArgs        = 64
	MaxAccess      = 32
	MaxNameLength  = 64   // package, publisher, ids, flags, path words
	MaxSummary     = 120  // code points, one line
	MaxDescription = 8192 // code points
	MaxProgram     = 256  // bytes
	MaxArgLength   = 4096 // bytes
	MaxResource    = 256  // bytes
	MaxCount       = 1 << 20
)

// Decode parses and validates a descriptor. On failure the error is an
// Errors value holding every problem found.
func Decode(data []byte) (*Descriptor, error) {
	root, err := strictjson.Parse(data, strictjson.Limits{MaxBytes: MaxBytes, MaxDepth: MaxDepth, MaxMembers: MaxMembers})
	if err != nil {
		var je *strictjson.Error
		switch {
		case errors.As(err, &je) && je.Line > 0:
			// Where an editor shows it: the descriptor is always FileName.
			return nil, Errors{{Code: Code(je.Code), Path: je.Pointer,
				Message: fmt.Sprintf("%s:%d:%d: %s", FileName, je.Line, je.Column, je.Message)}}
		case errors.As(err, &je):
			return nil, Errors{{Code: Code(je.Code), Path: je.Pointer, Message: je.Message}}
		}
		return nil, Errors{{Code: CodeInvalidValue, Message: err.Error()}}
	}
	p := &problems{}
	d := decodeRoot(p, root)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return d, nil
}

func decodeRoot(p *problems, root *strictjson.Value) *Descriptor {
	o := p.asObject(root, "", "the descriptor")
	if o == nil {
		return nil
	}
	// The format decides how everything else is read, so an unknown one
	// stops here: an old validator must not guess at a newer format.
	schema, ok := o.str("schema", true)
	if !ok {
		return nil
	}
	if schema != FormatV1 && schema != FormatV2 {
		p.add(CodeUnsupportedSchema, "/schema", "%q is not a descriptor format this build supports (%s, %s); upgrade "+cliname.Name()+" or republish the release", schema, FormatV1, FormatV2)
		return nil
	}
	d := &Descriptor{Schema: schema}
	d.Package = name(o, "package", isPackage, CodeInvalidPackage, `lowercase words of [a-z0-9-] joined by dots, like "acme.deploy"`)
	if v, ok := o.str("version", true); ok {
		if len(v) > MaxNameLength || !isSemver(v) {
			p.add(CodeInvalidVersion, "/version", "%q is not a semantic version like 1.4.0", v)
		}
		d.Version = v
	}
	d.Publisher = name(o, "publisher", isPublisher, CodeInvalidPublisher, `lowercase letters and digits joined by "-" or ".", like "acme"`)
	d.Description, _ = text(o, "description", MaxDescription, true, false)
	if cmds := o.array("commands", true); cmds != nil {
		switch {
		case len(cmds.Items) == 0:
			p.add(CodeEmpty, "/commands", "declare at least one command")
		case len(cmds.Items) > MaxCommands:
			p.add(CodeTooMany, "/commands", "%d commands; at most %d are allowed", len(cmds.Items), MaxCommands)
		default:
			ids := make(map[string]bool)
			for i, cv := range cmds.Items {
				c := decodeCommand(p, d, cv, strictjson.Pointer("commands", strconv.Itoa(i)))
				if c == nil {
					continue
				}
				if ids[c.ID] {
					p.add(CodeDuplicateCommand, strictjson.Pointer("commands", strconv.Itoa(i), "id"), "command id %q is declared twice", c.ID)
				}
				ids[c.ID] = true
				d.Commands = append(d.Commands, c)
			}
			checkRoutes(p, d)
		}
	}
	o.finish()
	return d
}

// name reads a required identifier member checked against re.
func name(o *object, member string, valid func(string) bool, code Code, grammar string) string {
	s, ok := o.str(member, true)
	if !ok {
		return ""
	}
	if len(s) > MaxNameLength || !valid(s) {
		o.p.add(code, o.at(member), "%q is not a valid %s: use %s, at most %d characters", s, member, grammar, MaxNameLength)
	}
	return s
}

// text reads a human-readable string member: valid, no control characters
// (newlines and tabs allowed when multiline), at most max code points.
func text(o *object, member string, max int, multiline, required bool) (string, bool) {
	s, ok := o.str(member, required)
	if !ok {
		return "", false
	}
	if n := utf8.RuneCountInString(s); n > max {
		o.p.add(CodeInvalidText, o.at(member), "%q is %d characters; at most %d are allowed", member, n, max)
		return s, false
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			o.p.add(CodeInvalidText, o.at(member), "%q contains the control character %U", member, r)
			return s, false
		}
	}
	return s, true
}

func decodeCommand(p *problems, d *Descriptor, v *strictjson.Value, at string) *Command {
	o := p.asObject(v, at, "a command")
	if o == nil {
		return nil
	}
	c := &Command{}
	c.ID = name(o, "id", isCommandID, CodeInvalidCommandID, `lowercase letters and digits joined by "-", starting with a letter`)
	c.Identity = d.Package + "/" + c.ID
	c.Path = routeWords(o, "path", true)
	if al := o.array("aliases", false); al != nil {
		if len(al.Items) > MaxAliases {
			p.add(CodeTooMany, o.at("aliases"), "%d aliases; at most %d are allowed", len(al.Items), MaxAliases)
		} else {
			for i, a := range al.Items {
				c.Aliases = append(c.Aliases, words(p, a, strictjson.AppendPointer(o.at("aliases"), strconv.Itoa(i))))
			}
		}
	}
	if s, ok := text(o, "summary", MaxSummary, false, true); ok && s == "" {
		p.add(CodeInvalidText, o.at("summary"), "the summary must not be empty")
	} else {
		c.Summary = s
	}
	c.Description, _ = text(o, "description", MaxDescription, true, false)
	c.Inputs = decodeInputs(p, o)
	format := d.Format()
	if ex := o.get("execute", true); ex != nil {
		c.Execute = decodeExecute(p, ex, o.at("execute"), format)
	}
	if format == 1 {
		o.forbid("machine", FormatV1)
	} else if m := o.get("machine", false); m != nil {
		c.Machine = decodeMachine(p, m, o.at("machine"))
	}
	c.Access = decodeAccess(p, o, c.Inputs)
	// Version 2 commands say what they do to the world (effects.class):
	// approval and the dispatch projection's fingerprints depend on it.
	if e := o.get("effects", format >= 2); e != nil {
		c.Effects = decodeEffects(p, e, o.at("effects"))
	}
	o.finish()

	if c.Execute.Mapping == Passthrough {
		// Judge by the declaration, not by the inputs that decoded cleanly.
		if iv := o.v.Get("inputs"); iv != nil && len(iv.Items) > 0 {
			p.add(CodePassthroughInputs, o.at("inputs"), "a passthrough command receives raw arguments; remove its inputs or use the managed mapping")
		}
		if c.Execute.Result != nil {
			p.add(CodePassthroughResult, strictjson.AppendPointer(o.at("execute"), "result"), "a passthrough command has no channel to report a result; remove execute.result or use the managed mapping")
		}
	}
	c.Eligibility = eligibility(format, c)
	if c.Machine.Eligible {
		rs := obstacles(c)
		// A result that is declared but invalid has its own problem
		// above: it is not also "not declared".
		if ex := o.v.Get("execute"); ex != nil && ex.Get("result") != nil {
			rs = slices.DeleteFunc(rs, func(r Reason) bool { return r == ReasonNoResult })
		}
		if len(rs) > 0 {
			msgs := make([]string, len(rs))
			for i, r := range rs {
				msgs[i] = r.Message
			}
			p.add(CodeNotEligible, strictjson.AppendPointer(o.at("machine"), "eligible"),
				"the command asks to be machine-eligible but cannot be: %s", strings.Join(msgs, "; "))
		}
	}
	return c
}

func routeWords(o *object, member string, required bool) []string {
	v := o.get(member, required)
	if v == nil {
		return nil
	}
	return words(o.p, v, o.at(member))
}

// words reads a route: a non-empty array of route words.
func words(p *problems, v *strictjson.Value, at string) []string {
	if v.Kind != strictjson.Array {
		p.add(CodeWrongType, at, "a route must be an array of words, like [\"deploy\", \"status\"], not %s", v.Kind)
		return nil
	}
	if len(v.Items) == 0 {
		p.add(CodeEmpty, at, "a route needs at least one word")
		return nil
	}
	if len(v.Items) > MaxPathWords {
		p.add(CodeTooMany, at, "%d words; a route has at most %d", len(v.Items), MaxPathWords)
		return nil
	}
	ws := make([]string, 0, len(v.Items))
	for i, w := range v.Items {
		wat := strictjson.AppendPointer(at, strconv.Itoa(i))
		if w.Kind != strictjson.String {
			p.add(CodeWrongType, wat, "a route word must be a string, not %s", w.Kind)
			return nil
		}
		if len(w.Text) > MaxNameLength || !Words(w.Text) {
			p.add(CodeInvalidPathWord, wat, "%q is not a valid route word: use lowercase letters and digits joined by \"-\"", w.Text)
			return nil
		}
		ws = append(ws, w.Text)
	}
	return ws
}

func decodeExecute(p *problems, v *strictjson.Value, at string, format int) Execute {
	ex := Execute{Lifetime: Foreground}
	o := p.asObject(v, at, "execute")
	if o == nil {
		return ex
	}
	if m, ok := o.str("mapping", true); ok {
		switch Mapping(m) {
		case Managed, Passthrough:
			ex.Mapping = Mapping(m)
		default:
			p.add(CodeInvalidMapping, o.at("mapping"), "mapping %q is not %q or %q", m, Managed, Passthrough)
		}
	}
	if prog, ok := o.str("program", true); ok {
		if why := badProgram(prog); why != "" {
			p.add(CodeInvalidProgram, o.at("program"), "program %q %s; give a slash-separated path inside the release, like \"bin/tool\"", prog, why)
		} else {
			ex.Program = prog
		}
	}
	if args := o.array("args", false); args != nil {
		if len(args.Items) > MaxArgs {
			p.add(CodeTooMany, o.at("args"), "%d args; at most %d are allowed", len(args.Items), MaxArgs)
		}
		for i, a := range args.Items {
			aat := strictjson.AppendPointer(o.at("args"), strconv.Itoa(i))
			switch {
			case a.Kind != strictjson.String:
				p.add(CodeWrongType, aat, "an argument must be a string, not %s", a.Kind)
			case len(a.Text) > MaxArgLength || strings.ContainsRune(a.Text, 0):
				p.add(CodeInvalidArgs, aat, "an argument must be at most %d bytes and contain no NUL", MaxArgLength)
			default:
				ex.Args = append(ex.Args, a.Text)
			}
		}
	}
	if l, ok := o.str("lifetime", false); ok {
		switch Lifetime(l) {
		case Foreground, Background:
			ex.Lifetime = Lifetime(l)
		default:
			p.add(CodeInvalidLifetime, o.at("lifetime"), "lifetime %q is not %q or %q", l, Foreground, Background)
		}
	}
	if format == 1 {
		o.forbid("result", FormatV1)
	} else if r := o.get("result", false); r != nil {
		ex.Result = decodeResult(p, r, o.at("result"))
	}
	o.finish()
	return ex
}

// badProgram says why prog cannot name a file inside the release, or "".
func badProgram(prog string) string {
	switch {
	case prog == "":
		return "is empty"
	case len(prog) > MaxProgram:
		return fmt.Sprintf("is longer than %d bytes", MaxProgram)
	case strings.HasPrefix(prog, "/"):
		return "is absolute"
	case strings.ContainsAny(prog, "\\\x00"):
		return "contains a backslash or NUL"
	case slices.Contains(strings.Split(prog, "/"), ".."):
		return "contains \"..\""
	case path.Clean(prog) != prog || prog == ".":
		return "is not a clean path"
	}
	return ""
}

func decodeResult(p *problems, v *strictjson.Value, at string) *resultschema.Result {
	o := p.asObject(v, at, "execute.result")
	if o == nil {
		return nil
	}
	defer o.finish()
	kind, ok := o.str("kind", true)
	if !ok {
		return nil
	}
	switch resultschema.Kind(kind) {
	case resultschema.Text:
		if o.v.Get("schema") != nil {
			o.get("schema", false)
			p.add(CodeNotApplicable, o.at("schema"), "a text result has no schema; use kind \"structured\" to declare one")
			return nil
		}
		return &resultschema.Result{Kind: resultschema.Text}
	case resultschema.Structured:
		sv := o.get("schema", true)
		if sv == nil {
			return nil
		}
		s, errs := resultschema.Check(sv, resultschema.DefaultLimits())
		for _, e := range errs {
			p.errs = append(p.errs, &Error{Code: Code(e.Code), Path: o.at("schema") + e.Path, Message: e.Message})
		}
		if s == nil {
			return nil
		}
		return &resultschema.Result{Kind: resultschema.Structured, Schema: s}
	default:
		p.add(CodeInvalidResultKind, o.at("kind"), "result kind %q is not %q or %q", kind, resultschema.Text, resultschema.Structured)
		return nil
	}
}

func decodeMachine(p *problems, v *strictjson.Value, at string) Machine {
	m := Machine{Interaction: InteractionNone}
	o := p.asObject(v, at, "machine")
	if o == nil {
		return m
	}
	m.Eligible, _ = o.boolean("eligible")
	if s, ok := o.str("interaction", false); ok {
		switch Interaction(s) {
		case InteractionNone, InteractionOptional, InteractionRequired:
			m.Interaction = Interaction(s)
		default:
			p.add(CodeInvalidValue, o.at("interaction"), "interaction %q is not %q, %q or %q", s, InteractionNone, InteractionOptional, InteractionRequired)
		}
	}
	if fs := o.array("requiredFeatures", false); fs != nil {
		for i, f := range fs.Items {
			fat := strictjson.AppendPointer(o.at("requiredFeatures"), strconv.Itoa(i))
			switch {
			case f.Kind != strictjson.String:
				p.add(CodeWrongType, fat, "a feature must be a string, not %s", f.Kind)
			case !slices.Contains(KnownFeatures, f.Text):
				p.add(CodeInvalidFeature, fat, "feature %q is not supported by this build (known: %s)", f.Text, strings.Join(KnownFeatures, ", "))
			case slices.Contains(m.RequiredFeatures, f.Text):
				p.add(CodeInvalidFeature, fat, "feature %q is listed twice", f.Text)
			default:
				m.RequiredFeatures = append(m.RequiredFeatures, f.Text)
			}
		}
	}
	o.finish()
	return m
}

func decodeAccess(p *problems, o *object, inputs []Input) []Access {
	av := o.array("access", false)
	if av == nil {
		return nil
	}
	if len(av.Items) > MaxAccess {
		p.add(CodeTooMany, o.at("access"), "%d access requests; at most %d are allowed", len(av.Items), MaxAccess)
		return nil
	}
	var out []Access
	for i, v := range av.Items {
		ao := p.asObject(v, strictjson.AppendPointer(o.at("access"), strconv.Itoa(i)), "an access request")
		if ao == nil {
			continue
		}
		var a Access
		if s, ok := ao.str("action", true); ok {
			if len(s) > MaxNameLength || !isAction(s) {
				p.add(CodeInvalidAccess, ao.at("action"), "action %q is not lowercase words joined by dots, like \"deploy.read\"", s)
			}
			a.Action = s
		}
		if s, ok := ao.str("resource", false); ok {
			if len(s) > MaxResource {
				p.add(CodeInvalidAccess, ao.at("resource"), "resource is longer than %d bytes", MaxResource)
			}
			for _, ph := range placeholders(s) {
				if !slices.ContainsFunc(inputs, func(in Input) bool { return in.ID == ph }) {
					p.add(CodeInvalidAccess, ao.at("resource"), "placeholder {%s} names no declared input", ph)
				}
			}
			a.Resource = s
		}
		ao.finish()
		out = append(out, a)
	}
	return out
}

func decodeEffects(p *problems, v *strictjson.Value, at string) Effects {
	var e Effects
	o := p.asObject(v, at, "effects")
	if o == nil {
		return e
	}
	if s, ok := o.str("class", true); ok {
		switch EffectClass(s) {
		case EffectNone, EffectRead, EffectWrite, EffectExternal, EffectDestructive:
			e.Class = EffectClass(s)
		default:
			p.add(CodeInvalidValue, o.at("class"), "effect class %q is not %q, %q, %q, %q or %q", s, EffectNone, EffectRead, EffectWrite, EffectExternal, EffectDestructive)
		}
	}
	if b, ok := o.boolean("idempotent"); ok {
		e.Idempotent = &b
	}
	if b, ok := o.boolean("openWorld"); ok {
		e.OpenWorld = &b
	}
	o.finish()
	return e
}

// checkRoutes rejects routes that collide within the descriptor: equal
// routes, a route that is a prefix of another (it would be a group and a
// command at once), and routes that start with a built-in word. Routes
// across packages are checked when a profile revision is built.
func checkRoutes(p *problems, d *Descriptor) {
	type route struct {
		words []string
		at    string
	}
	var routes []route
	for i, c := range d.Commands {
		ci := strconv.Itoa(i)
		if c.Path != nil {
			routes = append(routes, route{c.Path, strictjson.Pointer("commands", ci, "path")})
		}
		for j, a := range c.Aliases {
			if a != nil {
				routes = append(routes, route{a, strictjson.Pointer("commands", ci, "aliases", strconv.Itoa(j))})
			}
		}
	}
	for i, r := range routes {
		if slices.Contains(ReservedWords, r.words[0]) {
			p.add(CodeReservedWord, r.at+"/0", "%q is a built-in command; choose another first word", r.words[0])
		}
		for _, q := range routes[:i] {
			switch {
			case slices.Equal(r.words, q.words):
				p.add(CodeRouteCollision, r.at, "route %q is already declared at %s", strings.Join(r.words, " "), q.at)
			case isPrefix(r.words, q.words), isPrefix(q.words, r.words):
				p.add(CodeGroupCollision, r.at, "route %q and route %q at %s nest: a group (a route prefix) cannot also be a command",
					strings.Join(r.words, " "), strings.Join(q.words, " "), q.at)
			}
		}
	}
}

// isPrefix reports whether a is a proper prefix of b.
func isPrefix(a, b []string) bool {
	return len(a) < len(b) && slices.Equal(a, b[:len(a)])
}
