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
