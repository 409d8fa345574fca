package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

var testLimits = strictjson.Limits{MaxBytes: 1 << 10, MaxDepth: 4, MaxMembers: 16}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in      string
		code    strictjson.Code
		pointer string
		offset  int
	}{
		{``, strictjson.CodeSyntax, "", 0},
		{`   `, strictjson.CodeSyntax, "", 3},
		{`{"a":1,"a":2}`, strictjson.CodeDuplicateKey, "/a", 7},
		{`{"a":{"b~/":1,"b~/":2}}`, strictjson.CodeDuplicateKey, "/a/b~0~1", 14},
		{`[1,2] x`, strictjson.CodeTrailingData, "", 6},
		{`{} {}`, strictjson.CodeTrailingData, "", 3},
		{`[[[[[1]]]]]`, strictjson.CodeTooDeep, "/0/0/0/0", 4},
		{`{"a":[[[{}]]]}`, strictjson.CodeTooDeep, "/a/0/0/0", 8},
		{`"\ud800"`, strictjson.CodeInvalidUnicode, "", 7},
		{`"\udc00"`, strictjson.CodeInvalidUnicode, "", 7},
		{`"\ud800\u0041"`, strictjson.CodeInvalidUnicode, "", 13},
		{"\"\xff\"", strictjson.CodeInvalidUTF8, "", 1},
		{"[\"ok\", \"\xed\xa0\x80\"]", strictjson.CodeInvalidUTF8, "", 8},
		{"\"a\x01\"", strictjson.CodeSyntax, "", 2},
		{`01`, strictjson.CodeTrailingData, "", 1},
		{`-`, strictjson.CodeSyntax, "", 1},
		{`1.`, strictjson.CodeSyntax, "", 2},
		{`.5`, strictjson.CodeSyntax, "", 0},
		{`+1`, strictjson.CodeSyntax, "", 0},
		{`1e`, strictjson.CodeSyntax, "", 2},
		{`NaN`, strictjson.CodeSyntax, "", 0},
		{`Infinity`, strictjson.CodeSyntax, "", 0},
		{`tru`, strictjson.CodeSyntax, "", 0},
		{`{"a" 1}`, strictjson.CodeSyntax, "/a", 5},
		{`{"a":1,}`, strictjson.CodeSyntax, "", 7},
		{`[1,]`, strictjson.CodeSyntax, "/1", 3},
		{`{'a':1}`, strictjson.CodeSyntax, "", 1},
		{`"\x"`, strictjson.CodeSyntax, "", 3},
		{`"\u12"`, strictjson.CodeSyntax, "", 3},
		{`"abc`, strictjson.CodeSyntax, "", 4},
		{`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]`, strictjson.CodeTooManyMembers, "/16", 40},
		{`"` + strings.Repeat("a", 1<<10) + `"`, strictjson.CodeTooLarge, "", 1 << 10},
	}
	for _, tt := range tests {
		_, err := strictjson.Parse([]byte(tt.in), testLimits)
		var e *strictjson.Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %v, want %s", tt.in, err, tt.code)
			continue
		}
		if e.Code != tt.code || e.Pointer != tt.pointer || e.Offset != tt.offset {
			t.Errorf("Parse(%q) = %s at %q byte %d, want %s at %q byte %d (%v)", tt.in, e.Code, e.Pointer, e.Offset, tt.code, tt.pointer, tt.offset, e)
		}
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct{ in, compact string }{
		{` {"b": [1, -0.5e+3, true, false, null], "a": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"} `,
			`{"b":[1,-0.5e+3,true,false,null],"a":"x\"\\/\u0008\u000c\n\r\té😀"}`},
		{`12345678901234567890123`, `12345678901234567890123`},
		{`"<&>"`, `"<&>"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	}
	for _, tt := range tests {
		v, err := strictjson.Parse([]byte(tt.in), testLimits)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := string(v.AppendCompact(nil)); got != tt.compact {
			t.Errorf("Parse(%q) compact = %s, want %s", tt.in, got, tt.compact)
		}
	}
}

func TestOffsetsAndGet(t *testing.T) {
	in := `{"a": {"b": [10, "x"]}}`
	v, err := strictjson.Parse([]byte(in), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	b := v.Get("a").Get("b")
	if got := in[b.Start:b.End]; got != `[10, "x"]` {
		t.Errorf("offsets quote %q", got)
	}
	if v.Get("nope") != nil || b.Get("x") != nil {
		t.Error("Get of a missing member or on an array returned a value")
	}
	if b.Items[0].Kind != strictjson.Number || b.Items[0].Text != "10" {
		t.Errorf("number literal = %v %q", b.Items[0].Kind, b.Items[0].Text)
	}
}

func TestLimitEdges(t *testing.T) {
	lim := strictjson.Limits{MaxBytes: 10, MaxDepth: 2, MaxMembers: 3}
	ok := []string{`[[1,2]]`, `"12345678"`, `{"a":[1]}`}
	for _, in := range ok {
		if _, err := strictjson.Parse([]byte(in), lim); err != nil {
			t.Errorf("Parse(%q) at the limits: %v", in, err)
		}
	}
	bad := []string{`[[1,2,3]]`, `"123456789"`, `[[[1]]]`}
	for _, in := range bad {
		if _, err := strictjson.Parse([]byte(in), lim); err == nil {
			t.Errorf("Parse(%q) over a limit succeeded", in)
		}
	}
}

func TestPointer(t *testing.T) {
	if got := strictjson.Pointer("a/b", "c~d", "", "0"); got != "/a~1b/c~0d//0" {
		t.Errorf("Pointer = %q", got)
	}
}

// FuzzParse checks strictjson against encoding/json: what it accepts is
// valid JSON that round-trips; what it refuses while encoding/json
// accepts must be refused for a strict rule, never for syntax.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `{"a":1,"a":2}`, `"\ud800"`, `[[[[[1]]]]]`, `1e999`, `-0.0E-0`, "\"\xff\"", `{"":""}`} {
		f.Add([]byte(s))
	}
	lim := strictjson.Limits{MaxBytes: 1 << 12, MaxDepth: 8, MaxMembers: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := strictjson.Parse(data, lim)
		if err != nil {
			var e *strictjson.Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T", err)
			}
			if json.Valid(data) {
				switch e.Code {
				case strictjson.CodeSyntax, strictjson.CodeTrailingData:
					t.Fatalf("encoding/json accepts %q but strictjson says %v", data, err)
				}
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("strictjson accepts %q, encoding/json does not", data)
		}
		compact := v.AppendCompact(nil)
		v2, err := strictjson.Parse(compact, strictjson.Limits{MaxBytes: 1 << 14, MaxDepth: 8, MaxMembers: 64})
		if err != nil {
			t.Fatalf("re-parse of %q: %v", compact, err)
		}
		if again := v2.AppendCompact(nil); !bytes.Equal(again, compact) {
			t.Fatalf("not stable: %q then %q", compact, again)
		}
	})
}

// Every error carries the line and column (in characters) of its offset.
func TestErrorPosition(t *testing.T) {
	tests := []struct {
		in           string
		line, column int
	}{
		{``, 1, 1},
		{`{"a":1,}`, 1, 8},
		{"{\n  \"a\": 1,\n}", 3, 1},
		{"{\"a\":\n\t\"é\" \"b\"}", 2, 6},
		{"[1,\r\n2 3]", 2, 3},
		{"\"\xff\"", 1, 2},
	}
	for _, tt := range tests {
		_, err := strictjson.Parse([]byte(tt.in), testLimits)
		var e *strictjson.Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %v, want an *Error", tt.in, err)
			continue
		}
		if e.Line != tt.line || e.Column != tt.column {
			t.Errorf("Parse(%q): %d:%d, want %d:%d (%v)", tt.in, e.Line, e.Column, tt.line, tt.column, e)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"deadlineMs", "maxConcurrent", "commands", "allow", "acme.deploy/status", "acme.deploy/rollback"}
	tests := []struct {
		word, want string
	}{
		{"deadlinMs", "deadlineMs"},       // a deletion
		{"deadlineMS", "deadlineMs"},      // a substitution
		{"comamnds", "commands"},          // a swap counts one
		{"maxConcurent", "maxConcurrent"}, // an insertion
		{"acme.deploy/statsu", "acme.deploy/status"},
		{"acme.deplyo/statsu", "acme.deploy/status"}, // two edits in a long word
		{"alow", "allow"},
		{"ab", ""}, // short words are near nothing
		{"colour", ""},
		{"deadline", ""}, // two edits in a short word // two edits
		{"dedline", ""},  // three edits
		{"commands", ""}, // itself is no suggestion
	}
	for _, tt := range tests {
		got, ok := strictjson.Closest(tt.word, names)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Closest(%q) = %q, %v; want %q", tt.word, got, ok, tt.want)
		}
	}
}
