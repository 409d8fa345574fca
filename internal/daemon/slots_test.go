package daemon

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/internal/testhome"
)

func unixConn(t *testing.T) *net.UnixConn {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fds[1])
	f := os.NewFile(uintptr(fds[0]), "conn")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.UnixConn)
}

// A full pool makes room by closing the oldest connection of the peer
// that holds the most; a connection that left is not counted, and one
// evicted is told so when it tries to leave, and counted as being ended
// until it does (its descriptor is closed: it holds no place).
func TestWaitingPoolEvicts(t *testing.T) {
	p := newWaitingPool(4)
	flood := []*waiter{}
	for range 3 {
		w, n := p.enter(unixConn(t), 100)
		if n != 0 {
			t.Fatal("evicted below the limit")
		}
		flood = append(flood, w)
	}
	client, _ := p.enter(unixConn(t), 200) // the oldest of its own peer
	if _, n := p.enter(unixConn(t), 300); n != 1 {
		t.Fatal("a full pool made no room")
	}
	if n := p.evictedOpen(); n != 1 {
		t.Errorf("%d evicted connections being ended, want 1", n)
	}
	if p.leave(flood[0]) {
		t.Error("the flooder's oldest connection was not the one evicted")
	}
	if n := p.evictedOpen(); n != 0 || p.leave(flood[0]) {
		t.Errorf("after its goroutine left: %d evicted connections being ended, want 0", n)
	}
	if _, err := flood[0].conn.Write([]byte{0}); err == nil {
		t.Error("an evicted connection is still open")
	}
	if !p.leave(client) || !p.leave(client) {
		t.Error("the other peer's connection was evicted")
	}
	if got := p.len(); got != 3 {
		t.Errorf("%d wait, want 3 (two of the flooder's and the newest)", got)
	}
}

// The reserve for small frames holds every waiting connection's first
// chunk, and management has slots of its own.
func TestSlotsTied(t *testing.T) {
	if frameReserve > frameBudget/2 {
		t.Errorf("frameReserve %d is more than half of frameBudget %d", frameReserve, frameBudget)
	}
	if got := testhome.Limit(t, "wire", "daemon.maxWaiting"); got != "512" || maxWaiting != 512 {
		t.Errorf("daemon.maxWaiting is %d; docs/limits.md says %s", maxWaiting, got)
	}
	if got := testhome.Limit(t, "wire", "daemon.manageReserve"); got != "16" || manageReserve != 16 {
		t.Errorf("daemon.manageReserve is %d; docs/limits.md says %s", manageReserve, got)
	}
	if got := testhome.Limit(t, "wire", "daemon.frameReserve"); got != "16 MiB" || frameReserve != 16<<20 {
		t.Errorf("daemon.frameReserve is %d; docs/limits.md says %s", frameReserve, got)
	}
}
