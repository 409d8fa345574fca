package values

import (
	"math"
	"strconv"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Spec is the typed contract of one declared input.
type Spec struct {
	ID          string
	Type        Type
	Item        *Spec   // List only: element type (scalar) and element constraints; Item.ID is ""
	Enum        []Value // allowed values, of Type (for List: on Item)
	Minimum     *Value  // Integer/Number/Decimal, same type as Type, inclusive (for List: on Item)
	Maximum     *Value  // inclusive
	MinLength   *int    // String, in code points
	MaxLength   *int    // String, in code points
	MinItems    *int    // List
	MaxItems    *int    // List
	Required    bool    // must be supplied; excludes Default
	Default     *Value  // applied with Explicit false when not supplied
	Description string  // for help and the MCP input schema
}

// ParseLiteral types a declared JSON literal (an enum member, a bound, a
// default) by the same rules as an MCP argument of type t (item = the list
// item spec when t == List). This is how a descriptor's "default": 10
// becomes a Value. Only the type and the hard limits are checked here;
// whether the literal satisfies the declared constraints is Check's job.
// The error's Path is relative to v ("" or "/2" for a list item) and its
// Input is "".
func ParseLiteral(t Type, item *Spec, v *strictjson.Value) (Value, *Error) {
	if v == nil {
		v = &strictjson.Value{Kind: strictjson.Null}
	}
	if t != List {
		return typeScalar(t, source{j: v})
	}
	if e := itemProblem(item); e != nil {
		return Value{}, e
	}
	switch v.Kind {
	case strictjson.Null:
		return Value{}, nullError(List)
	case strictjson.Array:
		return typeList(nil, item, len(v.Items), func(i int) source { return source{j: v.Items[i]} }, "")
	}
	return Value{}, wrongType(List, v.Kind)
}

// Check reports every inconsistency in the spec itself, in a fixed order:
// id, type, the item spec, enum, minimum, maximum, minLength, maxLength,
// minItems, maxItems, required with default, default, and last the enum
// members that violate the other constraints. Paths are relative
// to the input's declaration object, e.g. "/default", "/enum/2",
// "/maximum", "/items/maxLength". Whether enum members and the default
// satisfy the constraints is checked only when the constraints themselves
// are sound. Input is the spec's ID.
func (s *Spec) Check() []*Error {
	c := checker{id: s.ID}
	if s.ID == "" {
		c.add(CodeInvalidID, "/id", "the input has no id; give it one")
	}
	c.spec(s, "", true)
	return c.errs
}

type checker struct {
	id   string
	errs []*Error
}

func (c *checker) add(code Code, path, msg string) {
	c.errs = append(c.errs, &Error{Code: code, Input: c.id, Path: path, Message: msg})
}

func (c *checker) spec(s *Spec, at string, top bool) {
	if !s.Type.Valid() {
		c.add(CodeInvalidType, at+"/type", strconv.Quote(string(s.Type))+" is not an input type; use string, integer, number, decimal, boolean or list")
		return
	}
	before := len(c.errs)
	if !top {
		if s.ID != "" {
			c.add(CodeInvalidID, at+"/id", "an item spec takes no id; remove it")
		}
	}
	na := func(field, what string) {
		c.add(CodeNotApplicable, at+"/"+field, what+" does not apply to "+string(s.Type)+" inputs; remove it")
	}
	if s.Type == List {
		switch { // an item spec is never a list here: nested lists stop below
		case s.Item == nil:
			c.add(CodeItemsRequired, at+"/items", "a list needs an items declaration with a scalar type; add one")
		case s.Item.Type == List:
			c.add(CodeNestedList, at+"/items/type", "list items cannot be lists; use a scalar item type")
		default:
			c.spec(s.Item, at+"/items", false)
		}
	} else if s.Item != nil {
		na("items", "items")
	}
	numeric := s.Type == Integer || s.Type == Number || s.Type == Decimal
	if s.Type == List && s.Enum != nil {
		na("enum", "enum (declare it on items)")
	} else if s.Enum != nil {
		c.enum(s, at)
	}
	for _, b := range []struct {
		field string
		v     *Value
	}{{"minimum", s.Minimum}, {"maximum", s.Maximum}} {
		if b.v == nil {
			continue
		}
		if !numeric {
			na(b.field, b.field)
			continue
		}
		c.literal(*b.v, s, at+"/"+b.field, b.field)
	}
	if lo, hi := s.Minimum, s.Maximum; numeric && lo != nil && hi != nil && lo.t == s.Type && hi.t == s.Type {
		if x, _ := compare(*lo, *hi); x > 0 && validLiteral(*lo, s) == "" && validLiteral(*hi, s) == "" {
			c.add(CodeBoundsInverted, at+"/maximum", "maximum "+s.Maximum.String()+" is less than minimum "+s.Minimum.String()+"; swap or fix them")
		}
	}
	c.counts(s, at, "minLength", "maxLength", s.MinLength, s.MaxLength, s.Type == String, MaxStringLength)
	c.counts(s, at, "minItems", "maxItems", s.MinItems, s.MaxItems, s.Type == List && top, MaxListItems)
	if !top {
		if s.Required {
			na("required", "required (it belongs on the list)")
		}
		if s.Default != nil {
			na("default", "default (it belongs on the list)")
		}
	} else {
		if s.Required && s.Default != nil {
			c.add(CodeRequiredWithDefault, at+"/default", "a required input cannot have a default; drop one of them")
		}
		if s.Default != nil {
			c.dflt(s, at, len(c.errs) == before)
		}
	}
	// Enum members are checked against the constraints last, once we know
	// the constraints are sound.
	if len(c.errs) == before && s.Type != List {
		for i, m := range s.Enum {
			if e := checkConstraints(&Spec{Type: s.Type, Minimum: s.Minimum, Maximum: s.Maximum, MinLength: s.MinLength, MaxLength: s.MaxLength}, m); e != nil {
				c.add(CodeEnumMemberInvalid, at+"/enum/"+strconv.Itoa(i), "enum member "+e.Message+"; remove it or fix the constraints")
			}
		}
	}
}

// enum checks the members' types and uniqueness.
func (c *checker) enum(s *Spec, at string) {
	if len(s.Enum) == 0 {
		c.add(CodeEmptyEnum, at+"/enum", "an enum needs at least one member; add members or remove it")
		return
	}
	for i, m := range s.Enum {
		path := at + "/enum/" + strconv.Itoa(i)
		if !c.literal(m, s, path, "enum member") {
			continue
		}
		for j := range i {
			if sameValue(s.Enum[j], m) {
				c.add(CodeDuplicateEnum, path, "enum member "+m.String()+" repeats member "+strconv.Itoa(j)+"; remove it")
				break
			}
		}
	}
}

// literal checks that v is a usable value of s's type and reports false
// when it is not.
func (c *checker) literal(v Value, s *Spec, path, what string) bool {
	switch {
	case v.t == "":
		c.add(CodeNullLiteral, path, what+" is null; give "+describe(s.Type))
		return false
	case v.t != s.Type || (s.Type == List && s.Item != nil && v.item != s.Item.Type):
		c.add(CodeTypeMismatch, path, what+" is "+describeValue(v)+", but the input is "+describeSpec(s)+"; give "+describe(s.Type))
		return false
	}
	if msg := validLiteral(v, s); msg != "" {
		c.add(CodeInvalidLiteral, path, what+" "+msg)
		return false
	}
	return true
}

// validLiteral returns why v, of s's type, is not a value a front door
// could produce, or "".
func validLiteral(v Value, s *Spec) string {
	switch v.t {
	case Number:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			return "is not a finite number; give a finite one"
		}
	case Decimal:
		if e := checkDecimal(v.s); e != nil {
			return e.Message
		}
	case String:
		if e := checkString(v.s); e != nil {
			return e.Message
		}
	case List:
		if len(v.items) > MaxListItems {
			return "has more than " + strconv.Itoa(MaxListItems) + " items"
		}
		for i, it := range v.items {
			if it.t != v.item {
				return "has item " + strconv.Itoa(i) + " of type " + string(it.t) + " in a list of " + string(v.item)
			}
			if s.Item != nil {
				if msg := validLiteral(it, s.Item); msg != "" {
					return "item " + strconv.Itoa(i) + " " + msg
				}
			}
		}
	}
	return ""
}

// counts checks a pair of length or item counters.
func (c *checker) counts(s *Spec, at, minField, maxField string, lo, hi *int, applies bool, limit int) {
	ok := true
	for _, f := range []struct {
		field string
		n     *int
	}{{minField, lo}, {maxField, hi}} {
		switch {
		case f.n == nil:
		case !applies:
			ok = false
			c.add(CodeNotApplicable, at+"/"+f.field, f.field+" does not apply to "+string(s.Type)+" inputs; remove it")
		case *f.n < 0:
			ok = false
			c.add(CodeNegativeCount, at+"/"+f.field, f.field+" is "+strconv.Itoa(*f.n)+"; give 0 or more")
		case *f.n > limit:
			ok = false
			c.add(CodeBeyondLimit, at+"/"+f.field, f.field+" is "+strconv.Itoa(*f.n)+", above the hard limit of "+strconv.Itoa(limit)+"; give at most "+strconv.Itoa(limit))
		}
	}
	if ok && lo != nil && hi != nil && *lo > *hi {
		c.add(CodeBoundsInverted, at+"/"+maxField, maxField+" "+strconv.Itoa(*hi)+" is less than "+minField+" "+strconv.Itoa(*lo)+"; swap or fix them")
	}
}

// dflt checks the default's type and, when the constraints are sound, that
// it satisfies them.
func (c *checker) dflt(s *Spec, at string, sound bool) {
	if !c.literal(*s.Default, s, at+"/default", "default") || !sound {
		return
	}
	var e *Error
	if s.Type == List {
		items := s.Default.items
		if e = checkCount(s, len(items)); e == nil {
			for i, it := range items {
				if e = checkConstraints(s.Item, it); e != nil {
					e.Message = "item " + strconv.Itoa(i) + ": " + e.Message
					break
				}
			}
		}
	} else {
		e = checkConstraints(s, *s.Default)
	}
	if e != nil {
		c.add(CodeDefaultInvalid, at+"/default", "default "+e.Message+"; fix the default or the constraints")
	}
}

func describeValue(v Value) string {
	if v.t == List {
		return "a list of " + string(v.item)
	}
	return "a " + string(v.t)
}

func describeSpec(s *Spec) string {
	if s.Type == List && s.Item != nil {
		return "a list of " + string(s.Item.Type)
	}
	return "a " + string(s.Type)
}
