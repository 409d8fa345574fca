package profile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Change is one difference between two profiles: the member at Path was
// added (Old empty), removed (New empty) or changed.
type Change struct {
	Path string          `json:"path"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// String renders a change as one line: "+ path: new", "- path: old" or
// "~ path: old → new".
func (c Change) String() string {
	switch {
	case c.Old == nil:
		return fmt.Sprintf("+ %s: %s", c.Path, c.New)
	case c.New == nil:
		return fmt.Sprintf("- %s: %s", c.Path, c.Old)
	}
	return fmt.Sprintf("~ %s: %s → %s", c.Path, c.Old, c.New)
}

// Diff lists what changes from old to new, object members compared one by
// one and arrays and scalars as wholes, in path order.
func Diff(old, new *Profile) []Change {
	var a, b any
	if err := json.Unmarshal(old.Canonical(), &a); err != nil {
		panic(err)
	}
	if err := json.Unmarshal(new.Canonical(), &b); err != nil {
		panic(err)
	}
	var out []Change
	diff("", a, b, &out)
	return out
}

func diff(at string, a, b any, out *[]Change) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			av, ain := am[k]
			bv, bin := bm[k]
			child := strictjson.AppendPointer(at, k)
			switch {
			case !ain:
				*out = append(*out, Change{Path: child, New: raw(bv)})
			case !bin:
				*out = append(*out, Change{Path: child, Old: raw(av)})
			default:
				diff(child, av, bv, out)
			}
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, Change{Path: at, Old: raw(a), New: raw(b)})
	}
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
