package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/profile"
)

const designExample = `{"endpointNamespace": "team",
 "cli": {"task": "owner"},
 "mcp": {"expose": ["acme.deploy/status", "acme.tools/*"], "task": "agent"},
 "tasks": {"agent": {"commands": ["acme.*/*"], "deadlineMs": 30000,
                     "maxConcurrent": 4, "enforcement": "restricted",
                     "allow": [{"action": "deploy.read", "resource": "env:stage"}]},
           "owner": {"commands": ["*/*"], "deadlineMs": 3600000, "maxConcurrent": 8, "enforcement": "host"}}}`

func TestParseValid(t *testing.T) {
	p, err := profile.Parse([]byte(designExample))
	if err != nil {
		t.Fatal(err)
	}
	if p.EndpointNamespace != "team" || p.MCP.Task != "agent" || len(p.MCP.Expose) != 2 || p.Naming() != "full" {
		t.Errorf("parsed %+v", p)
	}
	if err := profile.Default().Validate(); err != nil {
		t.Errorf("the default profile is invalid: %v", err)
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"duplicate key", `"cli": {"task": "owner"},`, `"cli": {"task": "owner"}, "cli": {"task": "owner"},`, `2:28: member "cli" appears more than once`},
		{"unknown member", `"cli": {"task": "owner"}`, `"cli": {"task": "owner", "colour": 1}`, `/cli/colour: unknown member "colour"`},
		{"member in another case", `"endpointNamespace": "team"`, `"ENDPOINTNAMESPACE": "x", "endpointNamespace": "team"`, `/ENDPOINTNAMESPACE: unknown member`},
		{"null", `"cli": {"task": "owner"}`, `"cli": null`, `/cli: null is not allowed`},
		{"unknown task member", `"maxConcurrent": 4,`, `"maxConcurrent": 4, "memory": 1,`, `/tasks/agent/memory: unknown member`},
		{"bad namespace", `"team"`, `"Team!"`, "/endpointNamespace: "},
		{"undefined cli task", `"cli": {"task": "owner"}`, `"cli": {"task": "root"}`, `/cli/task: task "root" is not defined`},
		{"undefined mcp task", `"task": "agent"}`, `"task": "bot"}`, `/mcp/task: task "bot" is not defined`},
		{"bad exposure", `"acme.tools/*"`, `"acme.*/*"`, "/mcp/expose/1: "},
		{"repeated exposure", `"acme.tools/*"`, `"acme.deploy/status"`, `/mcp/expose/1: "acme.deploy/status" is listed twice`},
		{"bad naming", `"task": "agent"}`, `"task": "agent", "naming": "short"}`, "/mcp/naming: "},
		{"bad projection", `"task": "agent"}`, `"task": "agent", "projection": "single"}`, `/mcp/projection: projection "single" is not "tools" or "dispatch"`},
		{"no deadline", `"deadlineMs": 30000`, `"deadlineMs": 0`, "/tasks/agent/deadlineMs: "},
		{"deadline too long", `"deadlineMs": 30000`, `"deadlineMs": 86400001`, "/tasks/agent/deadlineMs: "},
		{"no concurrency", `"maxConcurrent": 4`, `"maxConcurrent": 0`, "/tasks/agent/maxConcurrent: "},
		{"bad enforcement", `"restricted"`, `"sandbox"`, `/tasks/agent/enforcement: enforcement "sandbox"`},
		{"bad command pattern", `["acme.*/*"]`, `["acme[/*"]`, "/tasks/agent/commands/0: "},
		{"rule without action", `"action": "deploy.read"`, `"action": ""`, "/tasks/agent/allow/0: "},
		{"wrong type", `"maxConcurrent": 4`, `"maxConcurrent": "4"`, "/tasks/agent/maxConcurrent: expected an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(designExample, tt.from, tt.to, 1)
			if doc == designExample {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := profile.Parse([]byte(doc))
			var errs profile.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want profile.Errors", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// Every error of a profile says where (a JSON pointer, or a line and
// column for what is not JSON) and what was expected, in words; a
// misspelt member gets the member meant.
func TestParseErrorText(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"string for milliseconds", `"deadlineMs": 30000`, `"deadlineMs": "30s"`,
			`invalid profile: /tasks/agent/deadlineMs: expected an integer number of milliseconds`},
		{"fraction for milliseconds", `"deadlineMs": 30000`, `"deadlineMs": 1.5`,
			`invalid profile: /tasks/agent/deadlineMs: expected an integer number of milliseconds`},
		{"exponent for an integer", `"maxConcurrent": 4`, `"maxConcurrent": 4e0`,
			`invalid profile: /tasks/agent/maxConcurrent: expected an integer`},
		{"out of range", `"deadlineMs": 30000`, `"deadlineMs": 9223372036854775808`,
			`invalid profile: /tasks/agent/deadlineMs: expected an integer number of milliseconds`},
		{"bytes", `"maxConcurrent": 4,`, `"maxConcurrent": 4, "memoryBytes": true,`,
			`invalid profile: /tasks/agent/memoryBytes: expected an integer number of bytes`},
		{"seconds", `"maxConcurrent": 4,`, `"maxConcurrent": 4, "cpuSeconds": "1",`,
			`invalid profile: /tasks/agent/cpuSeconds: expected an integer number of seconds`},
		{"object", `"cli": {"task": "owner"}`, `"cli": "owner"`, `invalid profile: /cli: expected an object`},
		{"array of strings", `"commands": ["acme.*/*"]`, `"commands": "acme.*/*"`,
			`invalid profile: /tasks/agent/commands: expected an array of strings`},
		{"array item", `"commands": ["acme.*/*"]`, `"commands": ["acme.*/*", 7]`,
			`invalid profile: /tasks/agent/commands/1: expected a string`},
		{"array of objects", `"allow": [{"action": "deploy.read", "resource": "env:stage"}]`, `"allow": {}`,
			`invalid profile: /tasks/agent/allow: expected an array of objects`},
		{"in a rule", `"action": "deploy.read"`, `"action": ["deploy.read"]`,
			`invalid profile: /tasks/agent/allow/0/action: expected a string`},
		{"every one", `"task": "agent"}`, `"task": 1, "naming": false}`,
			`invalid profile: /mcp/task: expected a string; /mcp/naming: expected a string`},
		{"misspelt member", `"deadlineMs": 30000`, `"deadlinMs": 30000`,
			`invalid profile: /tasks/agent/deadlinMs: unknown member; did you mean "deadlineMs"?`},
		{"swapped letters", `"endpointNamespace"`, `"endpointNamepsace"`,
			`invalid profile: /endpointNamepsace: unknown member; did you mean "endpointNamespace"?`},
		{"misspelt in a rule", `"resource": "env:stage"`, `"resourse": "env:stage"`,
			`invalid profile: /tasks/agent/allow/0/resourse: unknown member; did you mean "resource"?`},
		{"misspelt task", `"cli": {"task": "owner"}`, `"cli": {"task": "onwer"}`,
			`invalid profile: /cli/task: task "onwer" is not defined in tasks; did you mean "owner"?`},
		{"no task near", `"cli": {"task": "owner"}`, `"cli": {"task": "admin"}`,
			`invalid profile: /cli/task: task "admin" is not defined in tasks`},
		{"nothing near", `"cli": {"task": "owner"}`, `"cli": {"task": "owner", "colour": 1}`,
			`invalid profile: /cli/colour: unknown member "colour"; see docs/owner.md`},
		{"syntax", `"enforcement": "host"}}}`, `"enforcement": "host",}}}`,
			`invalid profile: 7:108: unexpected character '}'; expected a member name in double quotes`},
		{"syntax after a multibyte character", `"endpointNamespace": "team",`, `"endpointNamespace": "tëam" "x",`,
			`invalid profile: 1:30: unexpected character '"'; expected ',' or '}' in object`},
		{"end of input", `"enforcement": "host"}}}`, `"enforcement": "host"}}`,
			`invalid profile: 7:109: unexpected end of input in object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(designExample, tt.from, tt.to, 1)
			if doc == designExample {
				t.Fatalf("replacement %q not found", tt.from)
			}
			_, err := profile.Parse([]byte(doc))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// A syntax error is placed in the file the owner named.
func TestParseErrorInFile(t *testing.T) {
	_, err := profile.Parse([]byte("{\"endpointNamespace\": \"t\",\n \"cli\": {\"task\": \"owner\"},\n \"tasks\": {}}}\n"))
	var errs profile.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse = %v, want profile.Errors", err)
	}
	const want = "invalid profile: profile.json:3:14: unexpected data after the JSON value"
	if got := errs.In("profile.json").Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := errs.Error(); got != "invalid profile: 3:14: unexpected data after the JSON value" {
		t.Errorf("In changed the errors it was given: %s", got)
	}
}

func TestDiff(t *testing.T) {
	old := profile.Default()
	p, err := profile.Parse([]byte(designExample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range profile.Diff(old, p) {
		got = append(got, c.String())
	}
	want := []string{
		`~ /endpointNamespace: "local" → "team"`,
		`~ /mcp/expose: [] → ["acme.deploy/status","acme.tools/*"]`,
		`+ /tasks/agent/allow: [{"action":"deploy.read","resource":"env:stage"}]`,
		`~ /tasks/agent/commands: ["*/*"] → ["acme.*/*"]`,
		`~ /tasks/agent/enforcement: "host" → "restricted"`,
		`- /tasks/owner/allow: [{"action":"*","resource":"*"}]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := profile.Diff(p, p); len(d) != 0 {
		t.Errorf("diff of a profile with itself: %v", d)
	}
}

func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		pattern, id string
		want        bool
	}{
		{"acme.*/*", "acme.deploy/status", true},
		{"acme.*/*", "acme/status", false},
		{"*/*", "x/y", true},
		{"acme.deploy/status", "acme.deploy/status", true},
		{"acme.deploy/s*", "acme.deploy/rollback", false},
	} {
		if got := profile.Matches(tt.pattern, tt.id); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v", tt.pattern, tt.id, got)
		}
	}
}
