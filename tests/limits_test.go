package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/guard"
	"github.com/rukh-cli/rukh/internal/mcp/mcpconfig"
	"github.com/rukh-cli/rukh/internal/mcp/mcphttp"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
	"github.com/rukh-cli/rukh/internal/release/source"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/release/values"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/thin"
)

// TestLimitsDocumented ties docs/limits.md to the exported constants it
// names: the document's value of each, as it spells it, is the value the
// constant has. (The unexported ones are tied by their packages' own
// tests: internal/core/invoke/limits_test.go, internal/daemon/limits_test.go.)
func TestLimitsDocumented(t *testing.T) {
	size := func(n int64) string {
		switch {
		case n >= 1<<20 && n%(1<<20) == 0:
			return fmt.Sprintf("%d MiB", n>>20)
		case n >= 1<<10 && n%(1<<10) == 0:
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return count(n)
	}
	dur := func(d time.Duration) string {
		switch {
		case d%time.Hour == 0:
			return fmt.Sprintf("%d h", d/time.Hour)
		case d%time.Second == 0:
			return fmt.Sprintf("%d s", d/time.Second)
		}
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	}
	rl := resultschema.DefaultLimits()
	gl := guard.DefaultLimits()
	for _, l := range []struct{ pkg, name, want string }{
		{"descriptor", "MaxBytes", size(descriptor.MaxBytes)},
		{"descriptor", "MaxDepth", count(descriptor.MaxDepth)},
		{"descriptor", "MaxMembers", count(descriptor.MaxMembers)},
		{"descriptor", "MaxCommands", count(descriptor.MaxCommands)},
		{"descriptor", "MaxPathWords", count(descriptor.MaxPathWords)},
		{"descriptor", "MaxAliases", count(descriptor.MaxAliases)},
		{"descriptor", "MaxInputs", count(descriptor.MaxInputs)},
		{"descriptor", "MaxArgs", count(descriptor.MaxArgs)},
		{"descriptor", "MaxAccess", count(descriptor.MaxAccess)},
		{"descriptor", "MaxNameLength", count(descriptor.MaxNameLength)},
		{"descriptor", "MaxSummary", count(descriptor.MaxSummary)},
		{"descriptor", "MaxDescription", count(descriptor.MaxDescription)},
		{"descriptor", "MaxProgram", count(descriptor.MaxProgram)},
		{"descriptor", "MaxArgLength", count(descriptor.MaxArgLength)},
		{"descriptor", "MaxResource", count(descriptor.MaxResource)},
		{"values", "MaxArgumentBytes", size(values.MaxArgumentBytes)},
		{"values", "MaxArgumentDepth", count(values.MaxArgumentDepth)},
		{"values", "MaxArgumentMembers", count(values.MaxArgumentMembers)},
		{"values", "MaxStringLength", count(values.MaxStringLength)},
		{"values", "MaxListItems", count(values.MaxListItems)},
		{"values", "MaxDecimalDigits", count(values.MaxDecimalDigits)},
		{"resultschema", "SchemaBytes", size(int64(rl.SchemaBytes))},
		{"resultschema", "ResultBytes", size(int64(rl.ResultBytes))},
		{"resultschema", "Depth", count(int64(rl.Depth))},
		{"resultschema", "Members", count(int64(rl.Members))},
		{"extproto", "MaxFrame", size(extproto.MaxFrame)},
		{"extproto", "MaxDepth", count(extproto.MaxDepth)},
		{"extproto", "MaxMembers", count(extproto.MaxMembers)},
		{"extproto", "MaxMessage", count(extproto.MaxMessage)},
		{"extproto", "MaxEffects", count(extproto.MaxEffects)},
		{"extproto", "MaxEffectField", count(extproto.MaxEffectField)},
		{"invoke", "profile.MaxDeadlineMs", dur(time.Duration(profile.MaxDeadlineMs) * time.Millisecond)},
		{"invoke", "profile.MaxConcurrent", count(profile.MaxConcurrent)},
		{"invoke", "store.MaxFinishedInvocations", count(store.MaxFinishedInvocations)},
		{"profile", "MaxBytes", size(profile.MaxBytes)},
		{"profile", "MaxTasks", count(profile.MaxTasks)},
		{"profile", "MaxPatterns", count(profile.MaxPatterns)},
		{"profile", "MaxNamespaceSize", count(profile.MaxNamespaceSize)},
		{"internal/mcp/guard", "MaxMessage", size(int64(gl.MaxMessage))},
		{"internal/mcp/guard", "MaxResponse", size(int64(gl.MaxResponse))},
		{"internal/mcp/guard", "MaxDepth", count(int64(gl.MaxDepth))},
		{"internal/mcp/guard", "MaxMembers", count(int64(gl.MaxMembers))},
		{"internal/mcp/guard", "QueueMessages", count(int64(gl.QueueMessages))},
		{"internal/mcp/guard", "QueueBytes", size(int64(gl.QueueBytes))},
		{"internal/mcp/guard", "Stall", dur(gl.Stall)},
		{"internal/mcp/guard", "local.PageTools", count(local.PageTools)},
		{"internal/mcp/guard", "local.PageBytes", size(local.PageBytes)},
		{"internal/mcp/guard", "local.ListDeadline", dur(local.ListDeadline)},
		{"internal/mcp/guard", "projection.FullSlug", count(projection.FullSlug)},
		{"internal/mcp/guard", "projection.CompactSlug", count(projection.CompactSlug)},
		{"internal/mcp/guard", "CompactFingerprint", count(projection.CompactFingerprint) + " hex"},
		{"internal/mcp/guard", "projection.DefaultCacheSize", count(projection.DefaultCacheSize)},
		{"wire", "wire.MaxFrame", size(wire.MaxFrame)},
		{"wire", "wire.MaxDepth", count(wire.MaxDepth)},
		{"wire", "wire.MaxElements", count(wire.MaxElements)},
		{"wire", "wire.ExecFiles", count(wire.ExecFiles)},
		{"wire", "wire.MaxFiles", count(wire.MaxFiles)},
		{"wire", "thin.HelloTimeout", dur(thin.HelloTimeout)},
		{"wire", "store.DefaultTimeout", dur(store.DefaultTimeout)},
		{"wire", "store.MaxRouteWords", count(store.MaxRouteWords)},
		{"wire", "store.MaxRouteKey", count(store.MaxRouteKey) + " bytes"},
		{"wire", "store.MaxGroup", count(store.MaxGroup)},
		{"trust", "MaxFiles", count(trust.MaxFiles)},
		{"trust", "MaxFileBytes", size(trust.MaxFileBytes)},
		{"trust", "MaxTotalBytes", size(trust.MaxTotalBytes)},
		{"trust", "MaxManifestBytes", size(trust.MaxManifestBytes)},
		{"trust", "MaxSignatureBytes", size(trust.MaxSignatureBytes)},
		{"trust", "MaxPathBytes", count(trust.MaxPathBytes)},
		{"trust", "MaxKeyFileBytes", size(trust.MaxKeyFileBytes)},
		{"trust", "MaxIgnoreBytes", size(trust.MaxIgnoreBytes)},
		{"source", "MaxManifestBytes", size(source.MaxManifestBytes)},
		{"source", "MaxArchiveBytes", size(source.MaxArchiveBytes)},
		{"source", "MaxTagPages", count(source.MaxTagPages)},
		{"source", "MaxRedirects", count(source.MaxRedirects)},
		{"source", "DefaultTimeout", dur(source.DefaultTimeout)},
		{"source", "MaxTimeout", dur(source.MaxTimeout)},
		{"source", "MaxOperation", dur(source.MaxOperation)},
		{"mcpconfig", "MaxFileBytes", size(mcpconfig.MaxFileBytes)},
		{"mcpconfig", "MaxBackups", count(mcpconfig.MaxBackups)},
		{"mcphttp", "MaxConnections", count(mcphttp.MaxConnections)},
		{"mcphttp", "MaxHeaderBytes", size(mcphttp.MaxHeaderBytes)},
		{"mcphttp", "MaxConcurrent", count(mcphttp.MaxConcurrent)},
		{"mcphttp", "MaxConcurrentCaller", count(mcphttp.MaxConcurrentCaller)},
		{"mcphttp", "MaxBoundServers", count(mcphttp.MaxBoundServers)},
		{"mcphttp", "MaxListen", count(mcphttp.MaxListen)},
		{"mcphttp", "MaxListenCaller", count(mcphttp.MaxListenCaller)},
	} {
		if got := testhome.Limit(t, l.pkg, l.name); got != l.want {
			t.Errorf("docs/limits.md gives %s %s as %q; the code has %q", l.pkg, l.name, got, l.want)
		}
	}
	// Steps is counted from the members bound, as its row says.
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "limits.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := fmt.Sprintf("| `Steps` | %s (`StepBudget(%d)`, `MaxValueSteps` = %d) |", count(int64(rl.Steps)), rl.Members, resultschema.MaxValueSteps)
	if !strings.Contains(string(doc), steps) || rl.Steps != resultschema.StepBudget(rl.Members) {
		t.Errorf("docs/limits.md does not give the result steps as %q", steps)
	}
	if testhome.Limit(t, "internal/mcp/guard", "projection.MaxRevision") != "2⁵³−1" || projection.MaxRevision != 1<<53-1 {
		t.Errorf("projection.MaxRevision is %d; docs/limits.md says 2⁵³−1", int64(projection.MaxRevision))
	}
}

// count spells n as docs/limits.md does: thousands separated by commas.
func count(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
