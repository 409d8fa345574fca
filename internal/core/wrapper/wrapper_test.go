package wrapper

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// values is a Values from a map, as the SDK's getters read them.
type values map[string]any

func (v values) Has(id string) bool         { _, ok := v[id]; return ok }
func (v values) String(id string) string    { return v[id].(string) }
func (v values) Decimal(id string) string   { return v[id].(string) }
func (v values) Int(id string) int64        { return v[id].(int64) }
func (v values) Float(id string) float64    { return v[id].(float64) }
func (v values) Bool(id string) bool        { return v[id].(bool) }
func (v values) Strings(id string) []string { return v[id].([]string) }
func (v values) Ints(id string) []int64     { return v[id].([]int64) }
func (v values) Floats(id string) []float64 { return v[id].([]float64) }

// Each template element is zero or more whole arguments: a value with
// spaces, quotes or shell syntax is one argument, never split or run.
func TestBuildArgv(t *testing.T) {
	types := map[string]string{"env": "string", "force": "boolean", "n": "integer", "x": "number", "tags": "list:string", "note": "string"}
	var argv []Arg
	if err := json.Unmarshal([]byte(`["deploy", "--env", {"input": "env"}, {"input": "force", "ifTrue": "--force"}, {"input": "n"}, {"input": "x"}, {"input": "tags"}, {"input": "note"}]`), &argv); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   values
		want []string
	}{
		{"all", values{"env": "prod", "force": true, "n": int64(3), "x": 0.5, "tags": []string{"a b", "c"}, "note": "; rm -rf ~ $(id)"},
			[]string{"deploy", "--env", "prod", "--force", "3", "0.5", "a b", "c", "; rm -rf ~ $(id)"}},
		{"absent and false", values{"env": "stage", "force": false}, []string{"deploy", "--env", "stage"}},
		{"empty string is an argument", values{"env": ""}, []string{"deploy", "--env", ""}},
	} {
		if got := BuildArgv(argv, types, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	types := map[string]string{"env": "string", "force": "boolean", "flags": "list:boolean"}
	for _, tc := range []struct{ argv, want string }{
		{`["a", {"input": "env"}, {"input": "force", "ifTrue": "-f"}]`, ""},
		{`[{"input": "nosuch"}]`, `argv/0 names input "nosuch", which the wrapper does not declare`},
		{`[{"input": "env", "ifTrue": "-e"}]`, "ifTrue applies to a boolean input"},
		{`["x", {"input": "force"}]`, `argv/1: boolean input "force" needs "ifTrue"`},
		{`[{"input": "flags"}]`, "a list of booleans"},
	} {
		var argv []Arg
		if err := json.Unmarshal([]byte(tc.argv), &argv); err != nil {
			t.Fatal(err)
		}
		err := Check(argv, types)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%s) = %v, want %q", tc.argv, err, tc.want)
		}
	}
}

func TestArgDecoding(t *testing.T) {
	for _, bad := range []string{`[1]`, `[{"input": ""}]`, `[{"input": "a", "shell": "x"}]`, `[null]`} {
		var argv []Arg
		if err := json.Unmarshal([]byte(bad), &argv); err == nil {
			t.Errorf("%s decoded as %+v", bad, argv)
		}
	}
}

// Output past the bound is noted, not kept, and never a short write.
func TestLimitedBuffer(t *testing.T) {
	b := &limitedBuffer{max: 4}
	if n, err := b.Write([]byte("abcdef")); n != 6 || err != nil || b.String() != "abcd" || !b.over {
		t.Errorf("Write: %d %v %q over=%v", n, err, b.String(), b.over)
	}
}
