package profile_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/profile"
)

// Parse never panics, and a profile it accepts is exactly what
// encoding/json decodes from the same bytes: Parse fills the struct from
// its own checked parse tree rather than with encoding/json.
func FuzzParse(f *testing.F) {
	withWrapper := strings.Replace(designExample, `"tasks":`, `"wrappers": [{"id": "w", "x": [1, 2.5e3, "a\u00e9"]}, 7],
 "tasks":`, 1)
	withLimits := strings.Replace(designExample, `"enforcement": "host"`, `"enforcement": "host", "cpuSeconds": 5, "memoryBytes": 1048576,
  "openFiles": 64, "processes": 8, "requireApproval": true, "approvalTtlMs": 60000`, 1)
	for _, s := range []string{designExample, httpExample, withWrapper, withLimits,
		`{"endpointNamespace": "x", "cli": {"task": "a"}, "mcp": {"expose": [], "task": "a"}, "tasks": {"a": {"commands": [], "deadlineMs": 1, "maxConcurrent": 1, "enforcement": "host", "allow": []}}}`,
		`{"endpointNamespace": "x\u0041"}`, `[]`, `{"tasks": {"a": {"deadlineMs": 1e3}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.Parse(data)
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var want profile.Profile
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("Parse accepted %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(*p, want) {
			t.Fatalf("Parse(%q) = %+v; encoding/json decodes %+v", data, *p, want)
		}
	})
}
