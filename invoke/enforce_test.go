package invoke_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/invoke"
)

// A restricted call that never starts its command (cancelled before it
// started, or the helper could not be started) leaves no descriptor
// behind: the helper's report pipe is closed with the rest.
func TestReportPipeClosedWhenNothingStarts(t *testing.T) {
	home := t.TempDir()
	rel := filepath.Join(home, "src")
	write(t, filepath.Join(rel, "bin", "ok"), "#!/bin/sh\n"+complete+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.enf","version":"1.0.0","publisher":"test","commands":[
		{"id":"ok","path":["ok"],"summary":"ok","execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":8,"enforcement":"restricted"}}}`)); err != nil {
		t.Fatal(err)
	}
	core := invoke.New(filepath.Join(home, "data"))
	target, _, err := core.Resolve([]string{"ok"})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name            string
		ctx             context.Context
		helper          string
		outcome, reason string
	}{
		{"cancelled before start", cancelled, "/bin/true", invoke.Cancelled, invoke.ReasonInterrupted},
		{"helper cannot start", context.Background(), filepath.Join(home, "no-such-helper"), invoke.ExecutionFailed, invoke.ReasonSpawnFailed},
	} {
		core.Sandbox = tc.helper
		before := pipes(t)
		for range 4 {
			out, err := core.Invoke(tc.ctx, target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != tc.outcome || out.Reason != tc.reason {
				t.Fatalf("%s: outcome %s/%s (%s), want %s/%s", tc.name, out.Outcome, out.Reason, out.Message, tc.outcome, tc.reason)
			}
		}
		if after := pipes(t); after > before {
			t.Errorf("%s: %d pipe descriptors open before, %d after", tc.name, before, after)
		}
	}
}

// pipes counts this process's open pipe descriptors.
func pipes(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n
}
