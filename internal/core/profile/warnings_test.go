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
	if len(w) != 1 || !strings.HasPrefix(w[0], `task "agent" keeps destructive, external calls for your approval and runs its commands under "restricted": they cannot reach the store or the daemon, approve, or change the profile, but they can change your other files`) {
		t.Errorf("Warnings = %q", w)
	}
}

// A task agents use that runs host commands can approve what any task
// keeps (issue 25: a host command approved its own call from an orphan):
// the owner is told so.
func TestWarningsHostAgentTask(t *testing.T) {
	p, err := Parse([]byte(`{"endpointNamespace": "t", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "agent"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"},
	            "agent": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"},
	            "safe": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "strict", "requireApproval": ["destructive"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Warnings()
	want := `task "agent", which agents use, runs its commands under "host", where a command acts as you: it can approve the calls that task "safe" keeps for you, or change the profile; use "restricted" or "strict" there`
	if len(w) != 1 || w[0] != want {
		t.Errorf("Warnings = %q\nwant [%q]", w, want)
	}
}

// Approval under host is refused when applied, not warned about: a host
// command acts as the owner and could approve its own call. A stored
// revision with such a task still reads (admission refuses its calls
// that need approval).
func TestApprovalUnderHostRefused(t *testing.T) {
	p, err := Parse([]byte(`{"endpointNamespace": "t", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "agent"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"},
	            "agent": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host", "requireApproval": ["destructive"]}}}`))
	if err != nil {
		t.Fatalf("a stored revision with such a task must still read: %v", err)
	}
	err = p.CheckApply()
	want := `/tasks/agent/requireApproval: a task whose calls wait for your approval cannot run them under "host": a host command acts as you, and could approve its own call; use "restricted" or "strict"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse = %v\nwant it to say %q", err, want)
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
