package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/client"
	"github.com/rukh-cli/rukh/descriptor"
	"github.com/rukh-cli/rukh/extproto"
	"github.com/rukh-cli/rukh/profile"
	"github.com/rukh-cli/rukh/projection"
	"github.com/rukh-cli/rukh/store"
	"github.com/rukh-cli/rukh/thin"
	"github.com/rukh-cli/rukh/trust"
	"github.com/rukh-cli/rukh/values"
	"github.com/rukh-cli/rukh/wire"
)

// TestLimitsDocumented ties docs/limits.md to the constants it names: each
// row below is a documented limit, the value the constant must have, and
// the value as the document spells it in the row that names the constant
// (in its section). Changing either without the other fails here.
func TestLimitsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "limits.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, part := range strings.Split(string(doc), "\n**")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		sections[head] = body
	}
	row := func(section, name string) string {
		for head, body := range sections {
			if !strings.Contains(head, "(`"+section) {
				continue
			}
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "| ") && strings.Contains(line, "`"+name+"`") {
					return line
				}
			}
		}
		return ""
	}
	for _, l := range []struct {
		section, name string
		got, want     int64
		doc           string
	}{
		{"descriptor", "MaxBytes", descriptor.MaxBytes, 1 << 20, "1 MiB"},
		{"descriptor", "MaxCommands", descriptor.MaxCommands, 512, "512"},
		{"descriptor", "MaxNameLength", descriptor.MaxNameLength, 64, "64"},
		{"values", "MaxArgumentBytes", values.MaxArgumentBytes, 128 << 10, "128 KiB"},
		{"values", "MaxStringLength", values.MaxStringLength, 16384, "16,384"},
		{"values", "MaxListItems", values.MaxListItems, 1024, "1,024"},
		{"extproto", "MaxFrame", extproto.MaxFrame, 256 << 10, "256 KiB"},
		{"extproto", "MaxEffects", extproto.MaxEffects, 64, "64, 256"},
		{"invoke", "profile.MaxConcurrent", profile.MaxConcurrent, 256, "256"},
		{"invoke", "store.MaxFinishedInvocations", store.MaxFinishedInvocations, 1000, "1,000"},
		{"profile", "MaxTasks", profile.MaxTasks, 64, "64, 256"},
		{"profile", "MaxNamespaceSize", profile.MaxNamespaceSize, 32, "32"},
		{"mcp/guard", "client.PageTools", client.PageTools, 32, "32, 1 MiB"},
		{"mcp/guard", "projection.FullSlug", projection.FullSlug, 48, "48"},
		{"mcp/guard", "projection.DefaultCacheSize", projection.DefaultCacheSize, 4, "4"},
		{"wire", "wire.MaxFrame", wire.MaxFrame, 4 << 20, "4 MiB"},
		{"wire", "wire.MaxElements", wire.MaxElements, 8192, "16, 8,192"},
		{"wire", "wire.ExecFiles", wire.ExecFiles, 3, "3, 8"},
		{"wire", "wire.MaxFiles", wire.MaxFiles, 8, "3, 8"},
		{"wire", "thin.HelloTimeout", int64(thin.HelloTimeout), int64(3 * time.Second), "3 s"},
		{"wire", "store.DefaultTimeout", int64(store.DefaultTimeout), int64(time.Second), "1 s"},
		{"trust", "MaxFiles", trust.MaxFiles, 10000, "10,000"},
		{"trust", "MaxFileBytes", trust.MaxFileBytes, 64 << 20, "64 MiB, 256 MiB"},
	} {
		if l.got != l.want {
			t.Errorf("%s %s is %d in the code; docs/limits.md and this test say %d", l.section, l.name, l.got, l.want)
		}
		r := row(l.section, l.name)
		if r == "" || !strings.Contains(r, "| "+l.doc+" |") {
			t.Errorf("docs/limits.md, section (%s): the row of `%s` is %q; want it to give %q", l.section, l.name, r, l.doc)
		}
	}
}
