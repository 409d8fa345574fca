package projection

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// builder returns a build func for revision rev that counts its calls.
func countingBuild(t *testing.T, pkgs []Package, rev uint64, calls *atomic.Int64) func() (*Projection, []*Error) {
	return func() (*Projection, []*Error) {
		calls.Add(1)
		runtime.Gosched() // let concurrent Gets pile up
		return Build(Input{Namespace: "team", Revision: rev, Expose: []string{"acme.greet/*"}, Packages: pkgs})
	}
}

// TestCacheConcurrent runs many Gets of a few revisions at once (run with
// -race): each revision is built once, and every caller gets a projection
// of the revision it asked for.
func TestCacheConcurrent(t *testing.T) {
	pkgs := examples(t)
	c := NewCache(8)
	var calls [5]atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				rev := uint64((g+i)%5 + 1)
				p, errs := c.Get(rev, countingBuild(t, pkgs, rev, &calls[rev-1]))
				if errs != nil || p == nil || p.Revision != rev || p.Tool(p.Tools[0].Name) == nil {
					t.Errorf("Get(%d) = %v, %v", rev, p, errs)
					return
				}
				if _, n := p.Resolve([]string{"greet"}); n != 1 {
					t.Errorf("Resolve on a cached projection consumed %d words", n)
				}
			}
		}()
	}
	wg.Wait()
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("revision %d built %d times, want 1", i+1, n)
		}
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	pkgs := examples(t)
	c := NewCache(2)
	var calls [4]atomic.Int64
	get := func(rev uint64) {
		t.Helper()
		if p, errs := c.Get(rev, countingBuild(t, pkgs, rev, &calls[rev])); errs != nil || p.Revision != rev {
			t.Fatalf("Get(%d) = %v, %v", rev, p, errs)
		}
	}
	get(1)
	get(2)
	get(1) // 1 is now the most recently used
	get(3) // evicts 2
	get(1)
	get(2)
	if got := [4]int64{calls[0].Load(), calls[1].Load(), calls[2].Load(), calls[3].Load()}; got != [4]int64{0, 1, 2, 1} {
		t.Errorf("builds per revision %v, want [0 1 2 1]", got)
	}
}

func TestCacheKeepsOnlySuccess(t *testing.T) {
	var c Cache // the zero value is usable
	var calls atomic.Int64
	failing := func() (*Projection, []*Error) {
		calls.Add(1)
		return Build(Input{Namespace: "", Revision: 3})
	}
	for range 3 {
		p, errs := c.Get(3, failing)
		if p != nil || len(errs) != 1 || errs[0].Code != CodeNamespaceInvalid {
			t.Fatalf("Get = %v, %v", p, errs)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("a failed build was reused: %d builds for 3 Gets", n)
	}

	// A projection of another revision is returned but not kept.
	calls.Store(0)
	wrong := func() (*Projection, []*Error) {
		calls.Add(1)
		return Build(Input{Namespace: "team", Revision: 9})
	}
	for range 2 {
		if p, _ := c.Get(4, wrong); p == nil || p.Revision != 9 {
			t.Fatalf("Get(4) = %v", p)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("a projection of revision 9 was cached as revision 4")
	}
}

func TestCachePanickingBuild(t *testing.T) {
	c := NewCache(2)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller")
			}
		}()
		c.Get(1, func() (*Projection, []*Error) { panic("boom") })
	}()
	p, errs := c.Get(1, func() (*Projection, []*Error) { return Build(Input{Namespace: "team", Revision: 1}) })
	if errs != nil || p == nil {
		t.Fatalf("Get after a panic = %v, %v", p, errs)
	}

	// A waiter whose build panics in another goroutine builds itself.
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan *Projection)
	go func() {
		defer func() { recover() }()
		c.Get(2, func() (*Projection, []*Error) {
			close(started)
			<-release
			panic("boom")
		})
	}()
	<-started
	waiting := make(chan struct{})
	testHookWait = func(rev uint64) {
		if rev == 2 {
			close(waiting)
		}
	}
	t.Cleanup(func() { testHookWait = func(uint64) {} })
	go func() {
		p, _ := c.Get(2, func() (*Projection, []*Error) { return Build(Input{Namespace: "team", Revision: 2}) })
		done <- p
	}()
	<-waiting // the second Get waits for the build that will panic
	close(release)
	select {
	case p := <-done:
		if p == nil || p.Revision != 2 {
			t.Errorf("waiter got %v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter of a panicked build never returned")
	}
}
