package daemon

import (
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// docs/limits.md gives the daemon's own bounds as they are here.
func TestLimitsDocumented(t *testing.T) {
	if got := testhome.Limit(t, "wire", "daemon.frameBudget"); got != "64 MiB" || frameBudget != 64<<20 {
		t.Errorf("daemon.frameBudget is %d; docs/limits.md says %s", frameBudget, got)
	}
	if got := testhome.Limit(t, "wire", "daemon.maxConns"); got != "1,024" || maxConns != 1024 {
		t.Errorf("daemon.maxConns is %d; docs/limits.md says %s", maxConns, got)
	}
	if got := testhome.Limit(t, "wire", "daemon.keepIdle"); got != "30 s" || keepIdle != 30*time.Second {
		t.Errorf("daemon.keepIdle is %s; docs/limits.md says %s", keepIdle, got)
	}
}
