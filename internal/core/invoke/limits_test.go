package invoke

import (
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// docs/limits.md gives the invocation core's own bounds as they are here.
func TestLimitsDocumented(t *testing.T) {
	c := New(t.TempDir())
	for _, l := range []struct {
		name string
		got  bool
	}{
		{"Core.Grace", testhome.Limit(t, "invoke", "Core.Grace") == "2 s" && c.Grace == 2*time.Second},
		{"channelGrace", testhome.Limit(t, "invoke", "channelGrace") == "500 ms" && channelGrace == 500*time.Millisecond},
		{"sendTimeout", testhome.Limit(t, "invoke", "sendTimeout") == "2 s" && sendTimeout == 2*time.Second},
		{"diagnosticsKeep", testhome.Limit(t, "invoke", "diagnosticsKeep") == "64 KiB" && diagnosticsKeep == 64<<10},
		{"diagnosticsLine", testhome.Limit(t, "invoke", "diagnosticsLine") == "4 KiB" && diagnosticsLine == 4<<10},
		{"invoke.reserveSize", testhome.Limit(t, "invoke", "invoke.reserveSize") == "1 MiB" && reserveSize == 1<<20},
		{"invoke.CallReserveSize", testhome.Limit(t, "invoke", "invoke.CallReserveSize") == "256 KiB" && CallReserveSize == 256<<10},
		{"invoke.MaxCallReserves", testhome.Limit(t, "invoke", "invoke.MaxCallReserves") == "256" && MaxCallReserves == 256},
		{"invoke.MaxFreeReserves", testhome.Limit(t, "invoke", "invoke.MaxFreeReserves") == "8" && MaxFreeReserves == 8},
		{"store.FilesTimeout", testhome.Limit(t, "wire", "store.FilesTimeout") == "10 s" && store.FilesTimeout == 10*time.Second},
	} {
		if !l.got {
			t.Errorf("docs/limits.md and the code disagree on %s", l.name)
		}
	}
}
