package daemon

import (
	"container/list"
	"net"
	"sync"
)

// A connection is waiting from its accept until its request has been
// read: the peer check, the hello and the request. A client sends them at
// once, so a connection that waits long is one that holds a slot without
// using it (idle connections, a hello and then silence, half a frame).
// The waiting are counted apart from the served: when maxWaiting wait,
// the next connection takes the place of one of them, the oldest of the
// peer that holds the most, which is closed. A flood of any size then
// costs its sender its own connections, never the slot of a client that
// says what it wants at once, and `daemon status` always gets through.
//
// Once its request is read, a connection is served in one of two pools:
// management (Status, Stop) in manageReserve slots of its own, everything
// else in the daemon's connection limit. Neither waits on the other.
const (
	maxWaiting    = 512
	manageReserve = 16
)

// waitingPool holds the waiting connections, oldest first.
type waitingPool struct {
	mu     sync.Mutex
	max    int
	order  *list.List // of *waiter, oldest first
	byPeer map[int]int
	// closing counts the evicted connections whose goroutine has not
	// ended yet: their descriptor is closed, so they hold no place.
	closing int
}

// A waiter is one waiting connection.
type waiter struct {
	conn    *net.UnixConn
	pid     int
	elem    *list.Element
	evicted bool // closed to make room, or by a drain (kept)
	left    bool // its request was read
	kept    bool // it waits for a read after a read (serveReads)
}

func newWaitingPool(max int) *waitingPool {
	return &waitingPool{max: max, order: list.New(), byPeer: map[int]int{}}
}

// enter adds conn, of process pid, making room if the pool is full.
// It reports how many it evicted (0 or 1).
func (p *waitingPool) enter(conn *net.UnixConn, pid int) (*waiter, int) {
	return p.add(&waiter{conn: conn, pid: pid})
}

// keep adds conn, of process pid, waiting for its next read after a read
// (Server.serveReads); like enter, it makes room if the pool is full.
func (p *waitingPool) keep(conn *net.UnixConn, pid int) *waiter {
	w, _ := p.add(&waiter{conn: conn, pid: pid, kept: true})
	return w
}

func (p *waitingPool) add(w *waiter) (*waiter, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	evicted := 0
	if p.order.Len() >= p.max {
		p.evictLocked()
		evicted = 1
	}
	w.elem = p.order.PushBack(w)
	p.byPeer[w.pid]++
	return w, evicted
}

// closeKept closes every kept connection that waits, as a drain begins:
// their clients read in-process from then on, and none of them holds up
// the daemon's exit.
func (p *waitingPool) closeKept() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for e := p.order.Front(); e != nil; {
		w, next := e.Value.(*waiter), e.Next()
		if w.kept {
			p.closeLocked(w)
		}
		e = next
	}
}

// evictLocked closes the oldest connection of the peer that holds the
// most: the one that sent nothing for longest among those of the likely
// flooder. Its goroutine sees its read fail and ends.
func (p *waitingPool) evictLocked() {
	most := 0
	for _, n := range p.byPeer {
		most = max(most, n)
	}
	for e := p.order.Front(); e != nil; e = e.Next() {
		w := e.Value.(*waiter)
		if p.byPeer[w.pid] == most {
			p.closeLocked(w)
			return
		}
	}
}

// closeLocked takes w out of the pool and closes its connection; its
// goroutine sees its read fail and ends.
func (p *waitingPool) closeLocked(w *waiter) {
	p.removeLocked(w)
	w.evicted = true
	p.closing++
	w.conn.Close()
}

func (p *waitingPool) removeLocked(w *waiter) {
	p.order.Remove(w.elem)
	if p.byPeer[w.pid]--; p.byPeer[w.pid] == 0 {
		delete(p.byPeer, w.pid)
	}
}

// leave ends w's wait (again is a no-op). It reports false if w was
// evicted: its connection is closed, and what it read is not served.
func (p *waitingPool) leave(w *waiter) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.evicted {
		if !w.left {
			w.left = true
			p.closing--
		}
		return false
	}
	if !w.left {
		w.left = true
		p.removeLocked(w)
	}
	return true
}

// evictedOpen reports how many evicted connections are still being ended
// by their goroutine.
func (p *waitingPool) evictedOpen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// len reports how many connections wait.
func (p *waitingPool) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.order.Len()
}
