package descriptor_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// doc wraps commands in a valid rukh.extension/2 document.
func doc(cmds ...string) string {
	return docv("rukh.extension/2", cmds...)
}

// docv wraps commands in a document of the given format; a version 1
// document leaves out the effects cmdx adds by default.
func docv(schema string, cmds ...string) string {
	body := strings.Join(cmds, ",")
	if schema == "rukh.extension/1" {
		body = strings.ReplaceAll(body, ","+effects, "")
	}
	return `{"schema":"` + schema + `","package":"acme.t","version":"1.0.0","publisher":"acme","commands":[` +
		body + `]}`
}

// effects is the effects member cmdx adds when extra declares none.
const effects = `"effects":{"class":"none"}`

// cmd is a valid managed command named id at route [id]; extra members
// are spliced in (and may replace the defaults when given first in JSON
// order is not needed: later duplicates would be a parse error, so extra
// must only add members).
func cmd(id, extra string) string {
	return cmdx(id, `"path":["`+id+`"]`, `"execute":{"mapping":"managed","program":"bin/t"}`, extra)
}

// cmdx builds a command from an explicit path and execute member, with
// effects unless extra declares them.
func cmdx(id, path, execute, extra string) string {
	s := `{"id":"` + id + `",` + path + `,"summary":"s",` + execute
	if extra != "" {
		s += "," + extra
	}
	if !strings.Contains(extra, `"effects"`) {
		s += "," + effects
	}
	return s + "}"
}

// in builds a command "c" with the given inputs.
func in(inputs ...string) string {
	return doc(cmd("c", `"inputs":[`+strings.Join(inputs, ",")+`]`))
}

// eligible is the machine member and result of a tool-ready command.
const eligible = `"machine":{"eligible":true,"requiredFeatures":["command-result/1"]}`

func exec(extra string) string {
	return `"execute":{"mapping":"managed","program":"bin/t"` + extra + `}`
}

type wantErr struct {
	code descriptor.Code
	path string
}

func TestDecodeInvalid(t *testing.T) {
	deep := strings.Repeat("[", 49) + strings.Repeat("]", 49)
	many := make([]string, descriptor.MaxCommands+1)
	for i := range many {
		many[i] = cmd(fmt.Sprintf("c%d", i), "")
	}
	tests := []struct {
		name string
		doc  string
		want []wantErr
	}{
		// The document.
		{"not an object", `[1,2]`, []wantErr{{"wrong_type", ""}}},
		{"no schema", `{}`, []wantErr{{"missing_field", "/schema"}}},
		{"unknown schema version", `{"schema":"rukh.extension/3","anything":1}`, []wantErr{{"unsupported_schema", "/schema"}}},
		{"schema not a string", `{"schema":2}`, []wantErr{{"wrong_type", "/schema"}}},
		{"duplicate key", `{"schema":"rukh.extension/2","package":"a","package":"b"}`, []wantErr{{"json_duplicate_key", "/package"}}},
		{"trailing data", doc(cmd("c", "")) + `{}`, []wantErr{{"json_trailing_data", ""}}},
		{"invalid utf-8", `{"schema":"rukh.extension/2","package":"a` + "\xff" + `"}`, []wantErr{{"json_invalid_utf8", ""}}},
		{"unpaired surrogate", `{"schema":"rukh.extension/2","description":"\ud800"}`, []wantErr{{"json_invalid_unicode", "/description"}}},
		{"too deep", `{"schema":"rukh.extension/2","x":` + deep + `}`, []wantErr{{"json_too_deep", "/x" + strings.Repeat("/0", 47)}}},
		{"too large", `{"schema":"rukh.extension/2","description":"` + strings.Repeat("a", descriptor.MaxBytes) + `"}`, []wantErr{{"json_too_large", ""}}},
		{"syntax", `{"schema":"rukh.extension/2",}`, []wantErr{{"json_syntax", ""}}},
		{"unknown top-level member", strings.Replace(doc(cmd("c", "")), `{"schema"`, `{"colour":"red","schema"`, 1), []wantErr{{"unknown_field", "/colour"}}},
		{"bad package", strings.Replace(doc(cmd("c", "")), `"acme.t"`, `"Acme.T"`, 1), []wantErr{{"invalid_package", "/package"}}},
		{"package with empty word", strings.Replace(doc(cmd("c", "")), `"acme.t"`, `"acme..t"`, 1), []wantErr{{"invalid_package", "/package"}}},
		{"bad version", strings.Replace(doc(cmd("c", "")), `"1.0.0"`, `"1.0"`, 1), []wantErr{{"invalid_version", "/version"}}},
		{"bad publisher", strings.Replace(doc(cmd("c", "")), `"publisher":"acme"`, `"publisher":"ac me"`, 1), []wantErr{{"invalid_publisher", "/publisher"}}},
		{"no commands", doc(), []wantErr{{"empty", "/commands"}}},
		{"too many commands", doc(many...), []wantErr{{"too_many", "/commands"}}},
		{"commands not an array", strings.Replace(doc(cmd("c", "")), `"commands":[`, `"commands":{"x":[`, 1) + "}", []wantErr{{"wrong_type", "/commands"}}},

		// Commands and routes.
		{"bad command id", doc(cmd("Status", "")), []wantErr{{"invalid_command_id", "/commands/0/id"}, {"invalid_path_word", "/commands/0/path/0"}}},
		{"duplicate command id", doc(cmd("c", ""), cmdx("c", `"path":["d"]`, exec(""), "")), []wantErr{{"duplicate_command", "/commands/1/id"}}},
		{"bad path word", doc(cmdx("c", `"path":["deploy","Status"]`, exec(""), "")), []wantErr{{"invalid_path_word", "/commands/0/path/1"}}},
		{"empty path", doc(cmdx("c", `"path":[]`, exec(""), "")), []wantErr{{"empty", "/commands/0/path"}}},
		{"reserved first word", doc(cmdx("c", `"path":["ext","c"]`, exec(""), "")), []wantErr{{"reserved_word", "/commands/0/path/0"}}},
		{"reserved alias", doc(cmd("c", `"aliases":[["mcp"]]`)), []wantErr{{"reserved_word", "/commands/0/aliases/0/0"}}},
		{"same path twice", doc(cmd("c", ""), cmdx("d", `"path":["c"]`, exec(""), "")), []wantErr{{"route_collision", "/commands/1/path"}}},
		{"alias equals another path", doc(cmd("c", ""), cmd("d", `"aliases":[["c"]]`)), []wantErr{{"route_collision", "/commands/1/aliases/0"}}},
		{"group is a command", doc(cmdx("c", `"path":["deploy"]`, exec(""), ""), cmdx("d", `"path":["deploy","status"]`, exec(""), "")), []wantErr{{"group_collision", "/commands/1/path"}}},
		{"alias is a group", doc(cmdx("c", `"path":["deploy","status"]`, exec(""), `"aliases":[["deploy"]]`)), []wantErr{{"group_collision", "/commands/0/aliases/0"}}},
		{"summary missing", doc(`{"id":"c","path":["c"],"execute":{"mapping":"managed","program":"bin/t"},` + effects + `}`), []wantErr{{"missing_field", "/commands/0/summary"}}},
		{"summary with newline", doc(strings.Replace(cmd("c", ""), `"summary":"s"`, `"summary":"two\nlines"`, 1)), []wantErr{{"invalid_text", "/commands/0/summary"}}},
		{"summary too long", doc(strings.Replace(cmd("c", ""), `"summary":"s"`, `"summary":"`+strings.Repeat("é", 121)+`"`, 1)), []wantErr{{"invalid_text", "/commands/0/summary"}}},
		{"execute missing", doc(`{"id":"c","path":["c"],"summary":"s",` + effects + `}`), []wantErr{{"missing_field", "/commands/0/execute"}}},
		{"unknown command member", doc(cmd("c", `"hidden":true`)), []wantErr{{"unknown_field", "/commands/0/hidden"}}},

		// Inputs.
		{"bad input id", in(`{"id":"Env","type":"string"}`), []wantErr{{"invalid_input_id", "/commands/0/inputs/0/id"}}},
		{"duplicate input id", in(`{"id":"a","type":"string"}`, `{"id":"a","flag":"b","type":"string"}`), []wantErr{{"duplicate_input", "/commands/0/inputs/1/id"}}},
		{"duplicate flag", in(`{"id":"a","type":"string"}`, `{"id":"b","flag":"a","type":"string"}`), []wantErr{{"duplicate_flag", "/commands/0/inputs/1/flag"}}},
		{"duplicate short", in(`{"id":"a","short":"x","type":"string"}`, `{"id":"b","short":"x","type":"string"}`), []wantErr{{"duplicate_flag", "/commands/0/inputs/1/short"}}},
		{"reserved flag", in(`{"id":"json","type":"boolean"}`), []wantErr{{"invalid_flag", "/commands/0/inputs/0/flag"}}},
		{"reserved short", in(`{"id":"a","short":"h","type":"boolean"}`), []wantErr{{"invalid_flag", "/commands/0/inputs/0/short"}}},
		{"bad flag", in(`{"id":"a","flag":"--a","type":"string"}`), []wantErr{{"invalid_flag", "/commands/0/inputs/0/flag"}}},
		{"flag and positional", in(`{"id":"a","flag":"a","positional":0,"type":"string"}`), []wantErr{{"flag_and_positional", "/commands/0/inputs/0/flag"}}},
		{"positional gap", in(`{"id":"a","positional":1,"type":"string"}`), []wantErr{{"invalid_positional", "/commands/0/inputs/0/positional"}}},
		{"positional twice", in(`{"id":"a","positional":0,"type":"string"}`, `{"id":"b","positional":0,"type":"string"}`), []wantErr{{"invalid_positional", "/commands/0/inputs/1/positional"}}},
		{"positional not an index", in(`{"id":"a","positional":0.5,"type":"string"}`), []wantErr{{"invalid_positional", "/commands/0/inputs/0/positional"}}},
		{"list positional not last", in(`{"id":"a","positional":0,"type":"list","items":{"type":"string"},"maxItems":3}`, `{"id":"b","positional":1,"type":"string"}`), []wantErr{{"invalid_positional", "/commands/0/inputs/0/positional"}}},
		{"required after optional positional", in(`{"id":"a","positional":0,"type":"string"}`, `{"id":"b","positional":1,"type":"string","required":true}`), []wantErr{{"invalid_positional", "/commands/0/inputs/1/positional"}}},
		{"unknown input type", in(`{"id":"a","type":"float","minimum":1}`), []wantErr{{"invalid_input_type", "/commands/0/inputs/0/type"}}},
		{"type missing", in(`{"id":"a"}`), []wantErr{{"missing_field", "/commands/0/inputs/0/type"}}},
		{"minLength on integer", in(`{"id":"a","type":"integer","minLength":1}`), []wantErr{{"not_applicable", "/commands/0/inputs/0/minLength"}}},
		{"items on string", in(`{"id":"a","type":"string","items":{"type":"string"}}`), []wantErr{{"not_applicable", "/commands/0/inputs/0/items"}}},
		{"negative maxLength", in(`{"id":"a","type":"string","maxLength":-1}`), []wantErr{{"invalid_bound", "/commands/0/inputs/0/maxLength"}}},
		{"integer bound not integral", in(`{"id":"a","type":"integer","minimum":1.5}`), []wantErr{{"not_integer", "/commands/0/inputs/0/minimum"}}},
		{"minimum above maximum", in(`{"id":"a","type":"integer","minimum":5,"maximum":1}`), []wantErr{{"bounds_inverted", "/commands/0/inputs/0/maximum"}}},
		{"required and default", in(`{"id":"a","type":"integer","required":true,"default":1}`), []wantErr{{"required_with_default", "/commands/0/inputs/0/default"}}},
		{"null default", in(`{"id":"a","type":"string","default":null}`), []wantErr{{"null_value", "/commands/0/inputs/0/default"}}},
		{"default wrong type", in(`{"id":"a","type":"integer","default":"10"}`), []wantErr{{"wrong_type", "/commands/0/inputs/0/default"}}},
		{"default above maximum", in(`{"id":"a","type":"integer","maximum":5,"default":6}`), []wantErr{{"default_invalid", "/commands/0/inputs/0/default"}}},
		{"default not in enum", in(`{"id":"a","type":"string","enum":["x","y"],"default":"z"}`), []wantErr{{"default_invalid", "/commands/0/inputs/0/default"}}},
		{"empty enum", in(`{"id":"a","type":"string","enum":[]}`), []wantErr{{"empty_enum", "/commands/0/inputs/0/enum"}}},
		{"duplicate enum", in(`{"id":"a","type":"number","enum":[1,1.0]}`), []wantErr{{"duplicate_enum", "/commands/0/inputs/0/enum/1"}}},
		{"list without items", in(`{"id":"a","type":"list","maxItems":3}`), []wantErr{{"missing_field", "/commands/0/inputs/0/items"}}},
		{"nested list", in(`{"id":"a","type":"list","items":{"type":"list"}}`), []wantErr{{"invalid_input_type", "/commands/0/inputs/0/items/type"}}},
		{"unknown item member", in(`{"id":"a","type":"list","items":{"type":"string","default":"x"}}`), []wantErr{{"unknown_field", "/commands/0/inputs/0/items/default"}}},
		{"unknown input member", in(`{"id":"a","type":"string","colour":"red"}`), []wantErr{{"unknown_field", "/commands/0/inputs/0/colour"}}},

		// Execute and result.
		{"bad mapping", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"shell","program":"bin/t"}`, "")), []wantErr{{"invalid_mapping", "/commands/0/execute/mapping"}}},
		{"program escapes", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"managed","program":"bin/../../t"}`, "")), []wantErr{{"invalid_program", "/commands/0/execute/program"}}},
		{"absolute program", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"managed","program":"/bin/sh"}`, "")), []wantErr{{"invalid_program", "/commands/0/execute/program"}}},
		{"unclean program", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"managed","program":"./bin/t"}`, "")), []wantErr{{"invalid_program", "/commands/0/execute/program"}}},
		{"bad lifetime", doc(cmdx("c", `"path":["c"]`, exec(`,"lifetime":"daemon"`), "")), []wantErr{{"invalid_lifetime", "/commands/0/execute/lifetime"}}},
		{"arg with NUL", doc(cmdx("c", `"path":["c"]`, exec(`,"args":["a\u0000b"]`), "")), []wantErr{{"invalid_args", "/commands/0/execute/args/0"}}},
		{"bad result kind", doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"json"}`), "")), []wantErr{{"invalid_result_kind", "/commands/0/execute/result/kind"}}},
		{"structured without schema", doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"structured"}`), "")), []wantErr{{"missing_field", "/commands/0/execute/result/schema"}}},
		{"text with schema", doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"text","schema":{"type":"string"}}`), "")), []wantErr{{"not_applicable", "/commands/0/execute/result/schema"}}},
		{"result schema with $ref", doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"structured","schema":{"type":"object","properties":{"a":{"type":"string","$ref":"#"}},"additionalProperties":false}}`), "")), []wantErr{{"schema_forbidden_keyword", "/commands/0/execute/result/schema/properties/a/$ref"}}},
		{"result schema open object", doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"structured","schema":{"type":"object","properties":{}}}`), "")), []wantErr{{"schema_additional_properties", "/commands/0/execute/result/schema"}}},
		{"passthrough with inputs", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"passthrough","program":"bin/t"}`, `"inputs":[{"id":"a","type":"string"}]`)), []wantErr{{"passthrough_inputs", "/commands/0/inputs"}}},
		{"passthrough with result", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"passthrough","program":"bin/t","result":{"kind":"text"}}`, "")), []wantErr{{"passthrough_result", "/commands/0/execute/result"}}},

		// Machine contract and version 1.
		{"v1 with machine", docv("rukh.extension/1", cmd("c", eligible)), []wantErr{{"not_in_version", "/commands/0/machine"}}},
		{"v1 with result", docv("rukh.extension/1", cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"text"}`), "")), []wantErr{{"not_in_version", "/commands/0/execute/result"}}},
		{"eligible passthrough", doc(cmdx("c", `"path":["c"]`, `"execute":{"mapping":"passthrough","program":"bin/t"}`, eligible)), []wantErr{{"not_eligible", "/commands/0/machine/eligible"}}},
		{"eligible background", doc(cmdx("c", `"path":["c"]`, exec(`,"lifetime":"background","result":{"kind":"text"}`), eligible)), []wantErr{{"not_eligible", "/commands/0/machine/eligible"}}},
		{"eligible without result", doc(cmd("c", eligible)), []wantErr{{"not_eligible", "/commands/0/machine/eligible"}}},
		{"eligible without feature", doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"text"}`), `"machine":{"eligible":true}`)), []wantErr{{"not_eligible", "/commands/0/machine/eligible"}}},
		{"unknown feature", doc(cmd("c", `"machine":{"requiredFeatures":["streaming/1"]}`)), []wantErr{{"invalid_feature", "/commands/0/machine/requiredFeatures/0"}}},
		{"repeated feature", doc(cmd("c", `"machine":{"requiredFeatures":["command-result/1","command-result/1"]}`)), []wantErr{{"invalid_feature", "/commands/0/machine/requiredFeatures/1"}}},
		{"bad interaction", doc(cmd("c", `"machine":{"interaction":"sometimes"}`)), []wantErr{{"invalid_value", "/commands/0/machine/interaction"}}},
		{"eligible not a boolean", doc(cmd("c", `"machine":{"eligible":"yes"}`)), []wantErr{{"wrong_type", "/commands/0/machine/eligible"}}},

		// Access and effects.
		{"unknown placeholder", doc(cmd("c", `"access":[{"action":"deploy.read","resource":"env:{env}"}]`)), []wantErr{{"invalid_access", "/commands/0/access/0/resource"}}},
		{"bad action", doc(cmd("c", `"access":[{"action":"Deploy Read"}]`)), []wantErr{{"invalid_access", "/commands/0/access/0/action"}}},
		{"bad effect class", doc(cmd("c", `"effects":{"class":"maybe"}`)), []wantErr{{"invalid_value", "/commands/0/effects/class"}}},
		{"v2 effects missing", doc(`{"id":"c","path":["c"],"summary":"s",` + exec("") + `}`), []wantErr{{"missing_field", "/commands/0/effects"}}},
		{"v2 effects without class", doc(cmd("c", `"effects":{}`)), []wantErr{{"missing_field", "/commands/0/effects/class"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := descriptor.Decode([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Decode succeeded (%d commands); want %v", len(d.Commands), tt.want)
			}
			var errs descriptor.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want descriptor.Errors: %v", err, err)
			}
			var got []wantErr
			for _, e := range errs {
				got = append(got, wantErr{e.Code, e.Path})
				if e.Message == "" {
					t.Errorf("error %s at %s has no message", e.Code, e.Path)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %v\nwant %v\nfull: %v", got, tt.want, err)
			}
		})
	}
	if len(tests) < 40 {
		t.Fatalf("the table has %d invalid descriptors; keep at least 40", len(tests))
	}
}

// A descriptor that is not JSON is placed at the line and column of
// rukh-extension.json where an editor shows it, and a misspelt member
// gets the member meant, when one is near.
func TestDecodeErrorText(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"syntax", "{\"schema\": \"rukh.extension/2\",\n \"package\": \"acme.t\", }",
			`/: json_syntax: rukh-extension.json:2:23: unexpected character '}'; expected a member name in double quotes`},
		{"syntax after a tab and a multibyte character", "{\"schema\": \"rukh.extension/2\",\n\t\"description\": \"é\" \"x\"}",
			`/: json_syntax: rukh-extension.json:2:21: unexpected character '"'; expected ',' or '}' in object`},
		{"duplicate", "{\"schema\": \"rukh.extension/2\",\n\n  \"schema\": \"rukh.extension/2\"}",
			`/schema: json_duplicate_key: rukh-extension.json:3:3: member "schema" appears more than once`},
		{"misspelt top-level member", strings.Replace(doc(cmd("c", "")), `"publisher"`, `"publsher"`, 1),
			"2 problems in the descriptor:\n\t/publisher: missing_field: \"publisher\" is required\n\t/publsher: unknown_field: unknown member; did you mean \"publisher\"?"},
		{"misspelt command member", doc(cmd("c", `"descripton":"d"`)),
			`/commands/0/descripton: unknown_field: unknown member; did you mean "description"?`},
		{"misspelt input member", in(`{"id":"a","type":"string","maxLenght":3}`),
			`/commands/0/inputs/0/maxLenght: unknown_field: unknown member; did you mean "maxLength"?`},
		{"nothing near", doc(cmd("c", `"colour":"red"`)),
			`/commands/0/colour: unknown_field: unknown member "colour"; check its spelling against docs/descriptor.md`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := descriptor.Decode([]byte(tt.doc))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Decode:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestDecodeExamples(t *testing.T) {
	type cmdWant struct {
		identity string
		route    string
		eligible bool
		reasons  []string
	}
	tests := []struct {
		dir  string
		want []cmdWant
	}{
		{"deploy", []cmdWant{
			{"acme.deploy/status", "deploy status", true, nil},
			{"acme.deploy/rollback", "deploy rollback", false, []string{"not_requested", "missing_feature"}},
		}},
		{"greet", []cmdWant{{"acme.greet/hello", "greet", true, nil}}},
		{"legacy", []cmdWant{{"acme.legacy/run", "legacy run", false, []string{"format_v1"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			d, err := descriptor.Load(filepath.Join("..", "..", "..", "examples", tt.dir))
			if err != nil {
				t.Fatal(err)
			}
			var got []cmdWant
			for _, c := range d.Commands {
				var rs []string
				for _, r := range c.Eligibility.Reasons {
					rs = append(rs, r.Code)
				}
				got = append(got, cmdWant{c.Identity, c.Route(), c.Eligibility.Eligible, rs})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("commands:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestDecodeInputs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "deploy", descriptor.FileName))
	if err != nil {
		t.Fatal(err)
	}
	d, err := descriptor.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range d.Commands[0].Inputs {
		def := "-"
		if in.Default != nil {
			def = in.Default.String()
		}
		got = append(got, fmt.Sprintf("%s:%s flag=%q short=%q pos=%d required=%v default=%s",
			in.ID, in.Type, in.Flag, in.Short, in.Positional, in.Required, def))
	}
	want := []string{
		`env:string flag="env" short="e" pos=-1 required=true default=-`,
		`limit:integer flag="limit" short="" pos=-1 required=false default=10`,
		`min_cost:decimal flag="min-cost" short="" pos=-1 required=false default=-`,
		`tags:list flag="tag" short="" pos=-1 required=false default=-`,
		`verbose:boolean flag="verbose" short="v" pos=-1 required=false default=false`,
		`service:string flag="" short="" pos=0 required=false default=-`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("inputs:\n got %q\nwant %q", got, want)
	}
	if got := d.Commands[0].Inputs[0].Description; got != "Target environment" {
		t.Errorf("input description = %q", got)
	}
	e := d.Commands[0].Effects
	if e.Class != descriptor.EffectRead || e.Idempotent == nil || !*e.Idempotent || e.OpenWorld != nil {
		t.Errorf("effects = %+v", e)
	}
}

func TestLoadFiles(t *testing.T) {
	const desc = `{"schema":"rukh.extension/1","package":"acme.t","version":"1.0.0","publisher":"acme",
		"commands":[{"id":"c","path":["c"],"summary":"s","execute":{"mapping":"passthrough","program":"bin/t"}}]}`
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  wantErr
	}{
		{"no descriptor", func(t *testing.T, dir string) {}, wantErr{"descriptor_missing", ""}},
		{"program missing", func(t *testing.T, dir string) { write(t, dir, descriptor.FileName, desc, 0o644) }, wantErr{"program_missing", "/commands/0/execute/program"}},
		{"program not executable", func(t *testing.T, dir string) {
			write(t, dir, descriptor.FileName, desc, 0o644)
			write(t, dir, "bin/t", "#!/bin/sh\n", 0o644)
		}, wantErr{"program_invalid", "/commands/0/execute/program"}},
		{"program is a directory", func(t *testing.T, dir string) {
			write(t, dir, descriptor.FileName, desc, 0o644)
			if err := os.MkdirAll(filepath.Join(dir, "bin", "t"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, wantErr{"program_invalid", "/commands/0/execute/program"}},
		{"program is a symlink out of the release", func(t *testing.T, dir string) {
			write(t, dir, descriptor.FileName, desc, 0o644)
			if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/bin/sh", filepath.Join(dir, "bin", "t")); err != nil {
				t.Fatal(err)
			}
		}, wantErr{"program_invalid", "/commands/0/execute/program"}},
		{"program's directory links out of the release", func(t *testing.T, dir string) {
			write(t, dir, descriptor.FileName, desc, 0o644)
			if err := os.Symlink("/usr", filepath.Join(dir, "bin")); err != nil {
				t.Fatal(err)
			}
		}, wantErr{"program_invalid", "/commands/0/execute/program"}},
		{"descriptor is a FIFO", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, descriptor.FileName), 0o644); err != nil {
				t.Fatal(err)
			}
		}, wantErr{"descriptor_missing", ""}},
		{"descriptor too large", func(t *testing.T, dir string) {
			write(t, dir, descriptor.FileName, strings.Repeat(" ", descriptor.MaxBytes+10), 0o644)
		}, wantErr{"json_too_large", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			_, err := descriptor.Load(dir)
			var errs descriptor.Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("Load: %v; want exactly one %v", err, tt.want)
			}
			if got := (wantErr{errs[0].Code, errs[0].Path}); got != tt.want {
				t.Errorf("got %v, want %v (%v)", got, tt.want, errs[0])
			}
		})
	}
}

func write(t *testing.T, dir, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
