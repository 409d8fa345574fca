package descriptor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// problems collects errors in document order.
type problems struct {
	errs Errors
}

func (p *problems) add(code Code, path, format string, args ...any) {
	p.errs = append(p.errs, &Error{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

// object reads the members of one JSON object, remembering which were
// read so that finish can report the rest as unknown.
type object struct {
	p    *problems
	v    *strictjson.Value
	path string
	read map[string]bool
}

// asObject returns a reader for v, or nil (and an error) when v is not an
// object.
func (p *problems) asObject(v *strictjson.Value, path, what string) *object {
	if v.Kind != strictjson.Object {
		p.add(CodeWrongType, path, "%s must be an object, not %s", what, v.Kind)
		return nil
	}
	return &object{p: p, v: v, path: path, read: make(map[string]bool)}
}

func (o *object) at(name string) string { return strictjson.AppendPointer(o.path, name) }

// get returns member name (or nil) and marks it read. A required member
// that is missing is reported.
func (o *object) get(name string, required bool) *strictjson.Value {
	o.read[name] = true
	v := o.v.Get(name)
	if v == nil && required {
		o.p.add(CodeMissingField, o.at(name), "%q is required", name)
	}
	return v
}

// typed returns member name when it has JSON kind k; a member of another
// kind is reported and nil returned.
func (o *object) typed(name string, k strictjson.Kind, required bool) *strictjson.Value {
	v := o.get(name, required)
	if v == nil {
		return nil
	}
	if v.Kind != k {
		o.p.add(CodeWrongType, o.at(name), "%q must be %s %s, not %s", name, article(k), k, v.Kind)
		return nil
	}
	return v
}

func (o *object) str(name string, required bool) (string, bool) {
	v := o.typed(name, strictjson.String, required)
	if v == nil {
		return "", false
	}
	return v.Text, true
}

func (o *object) boolean(name string) (value, ok bool) {
	v := o.typed(name, strictjson.Bool, false)
	if v == nil {
		return false, false
	}
	return v.Bool, true
}

func (o *object) array(name string, required bool) *strictjson.Value {
	return o.typed(name, strictjson.Array, required)
}

// count reads a non-negative integer written as a plain JSON integer.
func (o *object) count(name string, max int) (*int, bool) {
	v := o.get(name, false)
	if v == nil {
		return nil, true
	}
	n, ok := plainCount(v, max)
	if !ok {
		o.p.add(CodeInvalidBound, o.at(name), "%q must be an integer from 0 to %d", name, max)
		return nil, false
	}
	return &n, true
}

// plainCount parses a JSON integer literal without fraction or exponent.
func plainCount(v *strictjson.Value, max int) (int, bool) {
	if v.Kind != strictjson.Number {
		return 0, false
	}
	n, err := strconv.Atoi(v.Text)
	if err != nil || n < 0 || n > max {
		return 0, false
	}
	return n, true
}

// forbid reports member name as not part of this format version.
func (o *object) forbid(name, format string) {
	if o.v.Get(name) != nil {
		o.read[name] = true
		o.p.add(CodeNotInVersion, o.at(name), "%q is not part of %s; declare %q to use it", name, format, FormatV2)
	}
}

// finish reports every member that was never read.
func (o *object) finish() {
	for _, m := range o.v.Members {
		if o.read[m.Name] {
			continue
		}
		// The members this object may have are those its decoder read.
		if near, ok := strictjson.Closest(m.Name, slices.Collect(maps.Keys(o.read))); ok {
			o.p.add(CodeUnknownField, o.at(m.Name), "unknown member; did you mean %q?", near)
		} else {
			o.p.add(CodeUnknownField, o.at(m.Name), "unknown member %q; check its spelling against docs/descriptor.md", m.Name)
		}
	}
}

func article(k strictjson.Kind) string {
	if k == strictjson.Array || k == strictjson.Object {
		return "an"
	}
	return "a"
}
