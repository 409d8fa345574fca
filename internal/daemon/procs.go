package daemon

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// processors is how many processors the daemon's goroutines run on: one
// from its start and while the requests it serves come one at a time,
// all that the Go runtime gives it as soon as two overlap.
//
// A call through rukhd is half the daemon's: the client starts the
// command and waits, the daemon resolves, records and reads the result,
// and the two hand each other the call over the socket. On several
// processors each hand-over woke an idle one on another core, where the
// client and its command run, which cost a call through rukhd about 3 %
// and the daemon a fifth of its CPU (docs/benchmarks.md, "Fifteenth
// pass"). On one, the goroutines of a call hand each other the work on
// one thread. Requests that overlap (an HTTP adapter's callers, many
// calls at once) need the processors again, and get them at once; the
// daemon goes back to one once settle requests in a row have come alone,
// so that changing, which stops the world for a moment, happens at most
// twice in settle requests. GOMAXPROCS in the environment fixes the count.
type processors struct {
	fixed bool           // GOMAXPROCS was set, or the runtime gives one
	set   func(one bool) // tests replace it
	mu    sync.Mutex     // held while the count changes
	one   atomic.Bool    // it runs on one now
	alone atomic.Int32   // requests in a row admitted with none other served
}

// settle is how many requests in a row must come alone before the
// daemon goes back to one processor.
const settle = 16

// newProcessors puts the daemon on one processor, unless GOMAXPROCS
// fixes the count or the runtime gives it one only.
func newProcessors() *processors {
	p := &processors{
		fixed: os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) == 1,
		set: func(one bool) {
			if one {
				runtime.GOMAXPROCS(1)
			} else {
				runtime.SetDefaultGOMAXPROCS()
			}
		},
	}
	if !p.fixed {
		p.one.Store(true)
		p.set(true)
	}
	return p
}

// admitted is told, as a request is admitted, how many are served now,
// that one included. Only a change of the count takes the lock: it
// stops the world, which may first wait for a collection's marking to
// end, and no request need wait for it that does not change the count.
func (p *processors) admitted(serving int) {
	if p.fixed {
		return
	}
	if serving > 1 {
		p.alone.Store(0)
		if p.one.Load() {
			p.change(false)
		}
		return
	}
	if !p.one.Load() && p.alone.Add(1) >= settle {
		p.change(true)
	}
}

// change runs the daemon on one processor or on all, unless a request
// that came at the same time did so first.
func (p *processors) change(one bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.one.Load() == one {
		return
	}
	p.one.Store(one)
	p.alone.Store(0)
	p.set(one)
}
