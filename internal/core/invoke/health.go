package invoke

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// writeHealth is what a long-lived host (rukhd, rukh mcp) knows about its
// own writes to the store: the last one that failed for want of a
// writable disk, and the calls whose outcome it could neither record nor
// save aside. Their records stay open, and an open record holds a slot of
// its task's maxConcurrent, so the host must say they are finished.
type writeHealth struct {
	mu     sync.Mutex
	failed error     // the last unwritable-store failure, nil after a write succeeds
	since  time.Time // when the writes began to fail
	lost   map[string]bool
}

// noteWrite remembers the result of one write transaction.
func (h *writeHealth) noteWrite(err error, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.failed = nil
	case store.Unwritable(err):
		if h.failed == nil {
			h.since = now
		}
		h.failed = err
	}
}

// noteLost records that id's outcome was neither recorded nor saved.
func (h *writeHealth) noteLost(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = make(map[string]bool)
	}
	h.lost[id] = true
}

// isLost reports whether id is a call of this host that has finished
// though its record is open (noteLost).
func (h *writeHealth) isLost(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost[id]
}

// forget drops ids whose records are finished now.
func (h *writeHealth) forget(ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		delete(h.lost, id)
	}
}

// StoreWriteFailure is the error of this host's last write to the store
// when it failed because the store cannot be written (a full, read-only
// or failing disk, a damaged file) and no write has succeeded since, and
// when such failures began; nil when the last write went through.
//
// A store held open (store.Held) whose file was removed or replaced at its
// path is found here too, before any write fails on it: no write to it
// would be acknowledged.
func (c *Core) StoreWriteFailure() (since time.Time, err error) {
	if r, ok := c.Store.(interface{ Replaced() error }); ok {
		if err := r.Replaced(); err != nil {
			c.health.noteWrite(err, c.Now())
		}
	}
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	return c.health.since, c.health.failed
}

// PendingOutcomes counts the outcomes saved aside in PendingDir that wait
// for the store to take them.
func PendingOutcomes(dataDir string) int {
	ents, err := os.ReadDir(filepath.Join(dataDir, PendingDir))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	return n
}

// hostAlive reports whether the host of an open invocation record still
// runs. When it does not, whatever the invocation started and is still
// running (a grandchild that outlived the command, which died with its
// host) is found by its RUKH_INVOCATION_ID and killed first: a lost
// host's slot is freed only once its processes are gone. A call of this
// very host whose outcome could not be recorded (noteLost) counts as a
// lost host's: it has finished, and its slot is free.
func (c *Core) hostAlive(inv *store.Invocation) bool {
	if c.health.isLost(inv.ID) {
		reap(inv.ID)
		return false
	}
	if processAlive(inv.PID, inv.PIDStart) {
		return true
	}
	reap(inv.ID)
	return false
}
