package descriptor

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rukh-cli/rukh/internal/release/values"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// applies says which input types a typed keyword fits.
var applies = map[string][]values.Type{
	"enum":      {values.String, values.Integer, values.Number, values.Decimal, values.Boolean},
	"minimum":   {values.Integer, values.Number, values.Decimal},
	"maximum":   {values.Integer, values.Number, values.Decimal},
	"minLength": {values.String},
	"maxLength": {values.String},
	"items":     {values.List},
	"minItems":  {values.List},
	"maxItems":  {values.List},
}

func decodeInputs(p *problems, o *object) []Input {
	iv := o.array("inputs", false)
	if iv == nil {
		return nil
	}
	at := o.at("inputs")
	if len(iv.Items) > MaxInputs {
		p.add(CodeTooMany, at, "%d inputs; at most %d are allowed", len(iv.Items), MaxInputs)
		return nil
	}
	var ins []Input
	var ats []string
	for i, v := range iv.Items {
		iat := strictjson.AppendPointer(at, strconv.Itoa(i))
		if in, ok := decodeInput(p, v, iat); ok {
			ins = append(ins, in)
			ats = append(ats, iat)
		}
	}
	checkInputSet(p, ins, ats)
	return ins
}

func decodeInput(p *problems, v *strictjson.Value, at string) (Input, bool) {
	in := Input{Positional: -1}
	o := p.asObject(v, at, "an input")
	if o == nil {
		return in, false
	}
	defer o.finish()
	n := len(p.errs)
	in.ID = name(o, "id", isInputID, CodeInvalidInputID, `lowercase letters, digits and "_", starting with a letter`)
	description, _ := text(o, "description", MaxDescription, true, false)

	flag, hasFlag := o.str("flag", false)
	if hasFlag && (len(flag) > MaxNameLength || !isCommandID(flag)) {
		p.add(CodeInvalidFlag, o.at("flag"), "flag %q is not lowercase letters and digits joined by \"-\"", flag)
	}
	if pv := o.get("positional", false); pv != nil {
		idx, ok := plainCount(pv, MaxInputs-1)
		if !ok {
			p.add(CodeInvalidPositional, o.at("positional"), "positional must be an index from 0 to %d", MaxInputs-1)
		}
		in.Positional = idx
		if hasFlag {
			p.add(CodeFlagAndPositional, o.at("flag"), "an input is either a flag or a positional; remove one")
		}
	} else if hasFlag {
		in.Flag = flag
	} else {
		// A flag defaults to the input's id, spelled the CLI way.
		in.Flag = strings.ReplaceAll(in.ID, "_", "-")
	}
	if slices.Contains(ReservedFlags, in.Flag) {
		p.add(CodeInvalidFlag, o.at("flag"), "--%s is reserved by the CLI; choose another flag", in.Flag)
	}
	if s, ok := o.str("short", false); ok {
		switch {
		case !isShort(s):
			p.add(CodeInvalidFlag, o.at("short"), "short flag %q must be one ASCII letter", s)
		case s == "h":
			p.add(CodeInvalidFlag, o.at("short"), "-h is reserved for help; choose another letter")
		case in.Flag == "":
			p.add(CodeInvalidFlag, o.at("short"), "a positional input has no short flag")
		}
		in.Short = s
	}

	in.Spec = decodeSpec(o, true)
	in.Description = description
	if req, ok := o.boolean("required"); ok {
		in.Required = req
	}
	if len(p.errs) > n {
		return in, false
	}
	for _, e := range in.Spec.Check() {
		p.errs = append(p.errs, &Error{Code: Code(e.Code), Path: at + e.Path, Message: e.Message})
	}
	return in, len(p.errs) == n
}

// decodeSpec reads the typed part of an input, or of a list's items when
// top is false.
func decodeSpec(o *object, top bool) values.Spec {
	p := o.p
	var s values.Spec
	if top {
		if id := o.v.Get("id"); id != nil {
			s.ID = id.Text
		}
	}
	t, ok := o.str("type", true)
	if ok {
		s.Type = values.Type(t)
		switch {
		case top && !s.Type.Valid():
			p.add(CodeInvalidInputType, o.at("type"), "%q is not an input type: use string, integer, number, decimal, boolean or list", t)
			ok = false
		case !top && !s.Type.Scalar():
			p.add(CodeInvalidInputType, o.at("type"), "%q is not a list item type: use string, integer, number, decimal or boolean (lists do not nest)", t)
			ok = false
		}
	}
	if !ok {
		// Without a type the typed keywords mean nothing; skip them
		// rather than report each as unknown.
		for k := range applies {
			o.read[k] = true
		}
		o.read["default"] = true
		return s
	}
	for _, m := range o.v.Members {
		if types, ok := applies[m.Name]; ok && !slices.Contains(types, s.Type) {
			o.read[m.Name] = true
			p.add(CodeNotApplicable, o.at(m.Name), "%q does not apply to type %s", m.Name, s.Type)
		}
	}
	if s.Type == values.List {
		if iv := o.get("items", true); iv != nil {
			if io := p.asObject(iv, o.at("items"), "items"); io != nil {
				item := decodeSpec(io, false)
				io.finish()
				s.Item = &item
			}
		}
		s.MinItems, _ = o.count("minItems", MaxCount)
		s.MaxItems, _ = o.count("maxItems", MaxCount)
	}
	if s.Type == values.String {
		s.MinLength, _ = o.count("minLength", MaxCount)
		s.MaxLength, _ = o.count("maxLength", MaxCount)
	}
	if slices.Contains(applies["minimum"], s.Type) {
		s.Minimum = literal(o, "minimum", s.Type, nil)
		s.Maximum = literal(o, "maximum", s.Type, nil)
	}
	if ev := o.typed("enum", strictjson.Array, false); ev != nil && slices.Contains(applies["enum"], s.Type) {
		s.Enum = []values.Value{}
		for i, m := range ev.Items {
			v, err := values.ParseLiteral(s.Type, nil, m)
			if err != nil {
				p.add(Code(err.Code), strictjson.AppendPointer(o.at("enum"), strconv.Itoa(i))+err.Path, "%s", err.Message)
				continue
			}
			s.Enum = append(s.Enum, v)
		}
	}
	if top {
		if s.Type != values.List || s.Item != nil {
			s.Default = literal(o, "default", s.Type, s.Item)
		} else {
			o.get("default", false)
		}
	}
	return s
}

// literal types member name as a declared literal of type t.
func literal(o *object, member string, t values.Type, item *values.Spec) *values.Value {
	lv := o.get(member, false)
	if lv == nil {
		return nil
	}
	v, err := values.ParseLiteral(t, item, lv)
	if err != nil {
		o.p.add(Code(err.Code), o.at(member)+err.Path, "%s", err.Message)
		return nil
	}
	return &v
}

// checkInputSet checks what no single input can: unique ids, flags and
// short flags, and positionals numbered 0…n-1 where a list may only come
// last and a required positional may not follow an optional one. ats holds
// each input's JSON pointer.
func checkInputSet(p *problems, ins []Input, ats []string) {
	ids := map[string]bool{}
	flags := map[string]bool{}
	shorts := map[string]bool{}
	var pos []int // indexes into ins of the positionals
	for i, in := range ins {
		if ids[in.ID] {
			p.add(CodeDuplicateInput, ats[i]+"/id", "input id %q is declared twice", in.ID)
		}
		ids[in.ID] = true
		if in.Flag != "" {
			if flags[in.Flag] {
				p.add(CodeDuplicateFlag, ats[i]+"/flag", "--%s is declared twice", in.Flag)
			}
			flags[in.Flag] = true
		}
		if in.Short != "" {
			if shorts[in.Short] {
				p.add(CodeDuplicateFlag, ats[i]+"/short", "-%s is declared twice", in.Short)
			}
			shorts[in.Short] = true
		}
		if in.Positional >= 0 {
			pos = append(pos, i)
		}
	}
	slices.SortStableFunc(pos, func(a, b int) int { return ins[a].Positional - ins[b].Positional })
	for n, i := range pos {
		in, at := ins[i], ats[i]+"/positional"
		switch {
		case n > 0 && ins[pos[n-1]].Positional == in.Positional:
			p.add(CodeInvalidPositional, at, "positional %d is declared twice", in.Positional)
			return
		case in.Positional != n:
			p.add(CodeInvalidPositional, at, "positional %d leaves a gap; number positionals 0, 1, 2, …", in.Positional)
			return
		case in.Type == values.List && n != len(pos)-1:
			p.add(CodeInvalidPositional, at, "a list positional takes the remaining arguments, so it must come last")
		case in.Required && n > 0 && !ins[pos[n-1]].Required:
			p.add(CodeInvalidPositional, at, "a required positional cannot follow an optional one")
		}
	}
}
