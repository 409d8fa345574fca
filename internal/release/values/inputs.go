package values

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Entry is one input of an invocation: its typed value and whether the
// caller supplied it (true) or it came from the declared default (false).
type Entry struct {
	Value    Value
	Explicit bool
}

// Map holds the inputs of one invocation by input ID. An input that was
// neither supplied nor defaulted is absent.
type Map map[string]Entry

// Equal reports whether m and o hold the same IDs with Equal values and
// the same Explicit flags.
func (m Map) Equal(o Map) bool {
	if len(m) != len(o) {
		return false
	}
	for id, e := range m {
		f, ok := o[id]
		if !ok || e.Explicit != f.Explicit || !e.Value.Equal(f.Value) {
			return false
		}
	}
	return true
}

// AppendJSON appends m as the inputs member of the invoke frame
// (docs/reference.md §2): {"<id>":{"value":…,"explicit":true|false},…}
// with IDs in byte order.
func (m Map) AppendJSON(buf []byte) []byte {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	buf = append(buf, '{')
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		e := m[id]
		buf = strictjson.AppendString(buf, id)
		buf = append(buf, `:{"value":`...)
		buf = e.Value.AppendJSON(buf)
		buf = append(buf, `,"explicit":`...)
		buf = strconv.AppendBool(buf, e.Explicit)
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// Limits on the MCP arguments object that FromArguments accepts.
const (
	// MaxArgumentBytes is the most bytes the arguments may have.
	MaxArgumentBytes = 128 << 10
	// MaxArgumentDepth is the deepest nesting: the object, a list, and
	// one level more, so that a container inside a list is reported as
	// wrong_type rather than as a parse error.
	MaxArgumentDepth = 3
	// MaxArgumentMembers is the most object members and array elements
	// the arguments may have in all.
	MaxArgumentMembers = 4096
)

var argumentLimits = strictjson.Limits{MaxBytes: MaxArgumentBytes, MaxDepth: MaxArgumentDepth, MaxMembers: MaxArgumentMembers}

// FromCLI types the strings the CLI received, by input ID, in order: a
// boolean flag given without a value arrives as "true", a repeated list
// flag or a positional list as several strings. An ID with no strings
// counts as not supplied.
//
// The first problem is returned, in this order: an unknown ID (the least in
// byte order), then the supplied inputs in declaration order, then the
// first missing required input in declaration order. Defaults fill the
// rest with Explicit false. specs should have passed Check and have unique
// IDs.
func FromCLI(specs []Spec, given map[string][]string) (Map, *Error) {
	unknown, found := "", false
	for name, strs := range given {
		if len(strs) > 0 && specIndex(specs, name) < 0 && (!found || name < unknown) {
			unknown, found = name, true
		}
	}
	if found {
		return nil, unknownError(specs, unknown)
	}
	m := make(Map, len(specs))
	for i := range specs {
		s := &specs[i]
		strs := given[s.ID]
		if len(strs) == 0 {
			continue
		}
		ptr := pointer(s.ID)
		var v Value
		var e *Error
		if s.Type == List {
			v, e = typeList(s, s.Item, len(strs), func(i int) source { return source{text: strs[i]} }, ptr)
		} else if len(strs) > 1 {
			e = &Error{Code: CodeRepeatedValue,
				Message: "was given " + strconv.Itoa(len(strs)) + " times; give it once (only list inputs repeat)"}
		} else {
			v, e = typeScalar(s.Type, source{text: strs[0]})
			if e == nil {
				e = checkConstraints(s, v)
			}
		}
		if e != nil {
			return nil, located(e, s.ID, ptr)
		}
		m[s.ID] = Entry{Value: v, Explicit: true}
	}
	return finish(specs, m)
}

// FromArguments types the MCP arguments object raw (empty or nil means
// {}), parsed by internal/strictjson within MaxArgumentBytes,
// MaxArgumentDepth and MaxArgumentMembers. A parse failure
// is returned with the strictjson code (json_syntax, json_duplicate_key,
// json_too_large, …) and pointer; otherwise it is FromObject.
func FromArguments(specs []Spec, raw []byte) (Map, *Error) {
	if len(raw) == 0 {
		return FromObject(specs, nil)
	}
	obj, err := strictjson.Parse(raw, argumentLimits)
	if err != nil {
		var je *strictjson.Error
		if !errors.As(err, &je) {
			return nil, &Error{Code: Code(strictjson.CodeSyntax), Message: err.Error()}
		}
		return nil, &Error{Code: Code(je.Code), Input: firstToken(je.Pointer), Path: je.Pointer,
			Message: je.Message + " (byte " + strconv.Itoa(je.Offset) + "); send one JSON object of at most 128 KiB with unique member names"}
	}
	return FromObject(specs, obj)
}

// FromObject is FromArguments for an object already parsed; nil means {}.
// The order of problems is FromCLI's: the least unknown member name, then
// the supplied inputs in declaration order, then the first missing
// required input. A root that is not an object is wrong_type at path "".
func FromObject(specs []Spec, obj *strictjson.Value) (Map, *Error) {
	if obj != nil && obj.Kind != strictjson.Object {
		return nil, &Error{Code: CodeWrongType,
			Message: "expected the arguments as a JSON object, got a JSON " + obj.Kind.String()}
	}
	var members []strictjson.Member
	if obj != nil {
		members = obj.Members
	}
	unknown, found := "", false
	for _, mb := range members {
		if specIndex(specs, mb.Name) < 0 && (!found || mb.Name < unknown) {
			unknown, found = mb.Name, true
		}
	}
	if found {
		return nil, unknownError(specs, unknown)
	}
	m := make(Map, len(specs))
	for i := range specs {
		s := &specs[i]
		j := obj.Get(s.ID)
		if j == nil {
			continue
		}
		ptr := pointer(s.ID)
		var v Value
		var e *Error
		switch {
		case s.Type != List:
			v, e = typeScalar(s.Type, source{j: j})
			if e == nil {
				e = checkConstraints(s, v)
			}
		case j.Kind == strictjson.Null:
			e = nullError(List)
		case j.Kind != strictjson.Array:
			e = wrongType(List, j.Kind)
		default:
			v, e = typeList(s, s.Item, len(j.Items), func(i int) source { return source{j: j.Items[i]} }, ptr)
		}
		if e != nil {
			return nil, located(e, s.ID, ptr)
		}
		m[s.ID] = Entry{Value: v, Explicit: true}
	}
	return finish(specs, m)
}

// located sets the input and, unless an item path is already set, the
// path of e.
func located(e *Error, id, ptr string) *Error {
	e.Input = id
	if e.Path == "" {
		e.Path = ptr
	}
	return e
}

// finish reports the first missing required input and applies defaults.
func finish(specs []Spec, m Map) (Map, *Error) {
	for i := range specs {
		s := &specs[i]
		if _, ok := m[s.ID]; !ok && s.Required {
			return nil, &Error{Code: CodeMissingRequired, Input: s.ID, Path: pointer(s.ID),
				Message: "is required; give " + describe(s.Type)}
		}
	}
	for i := range specs {
		s := &specs[i]
		if _, ok := m[s.ID]; !ok && s.Default != nil {
			m[s.ID] = Entry{Value: *s.Default}
		}
	}
	return m, nil
}

func specIndex(specs []Spec, id string) int {
	for i := range specs {
		if specs[i].ID == id {
			return i
		}
	}
	return -1
}

func unknownError(specs []Spec, name string) *Error {
	msg := "there is no input " + quoteShort(name)
	if len(specs) == 0 {
		msg += "; this command takes no inputs"
	} else {
		var ids []string
		for i := range specs {
			if i == 20 {
				ids = append(ids, "…")
				break
			}
			ids = append(ids, specs[i].ID)
		}
		msg += "; the inputs are " + strings.Join(ids, ", ")
	}
	return &Error{Code: CodeUnknownInput, Input: name, Path: pointer(name), Message: msg}
}
