package profile

import (
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	p, err := Parse([]byte(`{"endpointNamespace": "t", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "agent"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"},
	            "agent": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "restricted", "requireApproval": ["destructive", "external"]},
	            "safe": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "strict", "requireApproval": ["destructive"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Warnings()
	if len(w) != 1 || !strings.HasPrefix(w[0], `task "agent" keeps destructive, external calls for your approval but runs its commands under "restricted" enforcement, where a command acts with your authority`) {
		t.Errorf("Warnings = %q", w)
	}
}

// A profile that leaves out the namespace or a task says what is missing,
// not that "" is a bad value.
func TestMissingMembers(t *testing.T) {
	_, err := Parse([]byte(`{"mcp": {"expose": ["acme.deploy/status"]}}`))
	if err == nil {
		t.Fatal("a profile of only mcp.expose was accepted")
	}
	for _, want := range []string{
		`/endpointNamespace: missing: every profile names its endpoint namespace`,
		`/cli/task: missing: name the task preset`,
		`/mcp/task: missing: name the task preset`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `"" is not a namespace`) {
		t.Errorf("still calls the missing namespace an invalid one: %v", err)
	}
}
