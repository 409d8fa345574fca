package invoke_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/rukh-cli/rukh/invoke"
)

// BenchmarkInvoke is one whole invocation of a trivial sh extension in
// process: resolve, admit, record, execute, finalize.
func BenchmarkInvoke(b *testing.B) {
	t := &testing.T{}
	_ = t
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
