package invoke_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// BenchmarkInvoke is one whole invocation of a trivial sh extension in
// process: resolve, admit, record, execute, finalize.
func BenchmarkInvoke(b *testing.B) {
	core, home := setupB(b)
	for b.Loop() {
		target, _, err := core.Resolve([]string{"h", "well-behaved"})
		if err != nil {
			b.Fatal(err)
		}
		out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home, Stdout: &bytes.Buffer{}})
		if err != nil || out.Outcome != invoke.Succeeded {
			b.Fatalf("%v %s", err, out.Message)
		}
	}
}

// BenchmarkEnforcement is the same invocation under each enforcement
// profile, each started by the rukh-sandbox helper, which supervises it:
// host (nothing else), restricted (rlimits, no_new_privs, private TMPDIR)
// and strict (+ Landlock, the seccomp filter, no capabilities, no
// terminal); and host-no-helper, a host without the helper (where none
// is on $PATH either), as before supervision. The differences are the
// spawn cost of each profile.
func BenchmarkEnforcement(b *testing.B) {
	helper := filepath.Join(testhome.TempDir(b), "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, enf, helper string }{
		{"host-no-helper", "host", ""}, {"host", "host", helper}, {"restricted", "restricted", helper}, {"strict", "strict", helper},
	} {
		enf := tc.enf
		b.Run(tc.name, func(b *testing.B) {
			core, home := setupB(b)
			core.Sandbox = tc.helper
			a := admin.New(filepath.Join(home, "data"))
			if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
				"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":8,"enforcement":"` + enf + `"}}}`)); err != nil {
				b.Fatal(err)
			}
			target, _, err := core.Resolve([]string{"h", "well-behaved"})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home, Stdout: &bytes.Buffer{}})
				if err != nil || out.Outcome != invoke.Succeeded {
					b.Fatalf("%v %s", err, out.Message)
				}
			}
		})
	}
}
