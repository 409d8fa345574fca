package projection

import "sync"

// DefaultCacheSize is how many revisions a zero Cache keeps.
const DefaultCacheSize = 4

// Cache keeps the projections of the last few revisions it was asked for,
// so that listing and calling do not rebuild them. It is safe for
// concurrent use; the zero value keeps DefaultCacheSize revisions.
//
// A revision number identifies a profile revision of one store, and with
// it the namespace, exposure and active releases, so the revision is the
// whole key: use one Cache per store. Only successful builds are kept;
// concurrent Gets of one revision share one build.
type Cache struct {
	size int

	mu      sync.Mutex
	entries []*cacheEntry // least recently used first
}

type cacheEntry struct {
	rev  uint64
	done chan struct{} // closed when p and errs are set
	p    *Projection
	errs []*Error
}

// testHookWait is called when a Get is about to wait for another's build
// of rev (tests synchronize on it).
var testHookWait = func(rev uint64) {}

// NewCache returns a cache that keeps the projections of at most size
// revisions (DefaultCacheSize if size < 1).
func NewCache(size int) *Cache {
	return &Cache{size: size}
}

// Get returns the projection of revision rev, calling build to derive it
// if the cache does not hold it. A failed build is returned to every
// caller that waited for it and is not kept, so the next Get builds
// again. A projection whose Revision is not rev is returned but not kept.
func (c *Cache) Get(rev uint64, build func() (*Projection, []*Error)) (*Projection, []*Error) {
	for {
		c.mu.Lock()
		e := c.find(rev)
		if e == nil {
			e = &cacheEntry{rev: rev, done: make(chan struct{})}
			c.entries = append(c.entries, e)
			c.mu.Unlock()
			return c.fill(e, build)
		}
		c.mu.Unlock()
		testHookWait(rev)
		<-e.done
		if e.p != nil || e.errs != nil {
			return e.p, e.errs
		}
		// The build panicked in another goroutine, or returned neither a
		// projection nor errors; build again here.
	}
}

// find returns the entry of rev, marked most recently used, or nil.
// c.mu is held.
func (c *Cache) find(rev uint64) *cacheEntry {
	for i, e := range c.entries {
		if e.rev == rev {
			copy(c.entries[i:], c.entries[i+1:])
			c.entries[len(c.entries)-1] = e
			return e
		}
	}
	return nil
}

func (c *Cache) fill(e *cacheEntry, build func() (*Projection, []*Error)) (p *Projection, errs []*Error) {
	keep := false
	defer func() {
		c.mu.Lock()
		if !keep {
			c.remove(e)
		}
		c.evict()
		c.mu.Unlock()
		close(e.done)
	}()
	p, errs = build()
	keep = p != nil && len(errs) == 0 && p.Revision == e.rev
	e.p, e.errs = p, errs
	return p, errs
}

// remove drops e. c.mu is held.
func (c *Cache) remove(e *cacheEntry) {
	for i, x := range c.entries {
		if x == e {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
			return
		}
	}
}

// evict drops the least recently used finished entries beyond the size.
// Entries still being built are kept: their waiters need them. c.mu is
// held.
func (c *Cache) evict() {
	size := c.size
	if size < 1 {
		size = DefaultCacheSize
	}
	for n := len(c.entries); n > size; n-- {
		i := 0
		for i < len(c.entries) && !finished(c.entries[i]) {
			i++
		}
		if i == len(c.entries) {
			return
		}
		c.entries = append(c.entries[:i], c.entries[i+1:]...)
	}
}

func finished(e *cacheEntry) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}
