package client

import (
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// docs/limits.md gives the kept connections' bounds as they are here.
func TestLimitsDocumented(t *testing.T) {
	if got := testhome.Limit(t, "wire", "client.maxKept"); got != "16" || maxKept != 16 {
		t.Errorf("client.maxKept is %d; docs/limits.md says %s", maxKept, got)
	}
	if got := testhome.Limit(t, "wire", "client.keptFor"); got != "10 s" || keptFor != 10*time.Second {
		t.Errorf("client.keptFor is %s; docs/limits.md says %s", keptFor, got)
	}
}
