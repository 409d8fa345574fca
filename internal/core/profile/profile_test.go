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
		{"duplicate key", `"cli": {"task": "owner"},`, `"cli": {"task": "owner"}, "cli": {"task": "owner"},`, "json_duplicate_key"},
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
		{"wrong type", `"maxConcurrent": 4`, `"maxConcurrent": "4"`, "cannot unmarshal string"},
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
