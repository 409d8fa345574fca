package daemon

import (
	"slices"
	"sync"
	"testing"
)

// TestProcessors: the daemon, started on one processor, takes all of
// them at the first request that overlaps another and goes back to one
// once settle requests in a row came alone; GOMAXPROCS fixes the count.
func TestProcessors(t *testing.T) {
	alone := func(n int) []int { return slices.Repeat([]int{1}, n) }
	seq := func(parts ...[]int) []int { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name    string
		fixed   bool
		serving []int  // what each admitted request sees served, that one included
		want    []bool // what was set in turn (true: one)
	}{
		{"alone: nothing changes", false, alone(3 * settle), nil},
		{"an overlap: all", false, seq(alone(3), []int{2}), []bool{false}},
		{"more overlaps: set once", false, []int{2, 3, 2, 5}, []bool{false}},
		{"fewer than settle alone after it: still all", false, seq([]int{2}, alone(settle-1)), []bool{false}},
		{"settle alone after it: one", false, seq([]int{2}, alone(settle)), []bool{false, true}},
		{"an overlap among them starts the count again", false, seq([]int{2}, alone(settle-1), []int{2}, alone(settle-1)), []bool{false}},
		{"and back and forth", false, seq([]int{2}, alone(settle), []int{2}, alone(settle)), []bool{false, true, false, true}},
		{"fixed by GOMAXPROCS", true, seq([]int{2}, alone(settle), []int{2}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []bool
			p := &processors{fixed: tc.fixed, set: func(one bool) { got = append(got, one) }}
			p.one.Store(!tc.fixed) // as newProcessors leaves it
			for _, n := range tc.serving {
				p.admitted(n)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("set %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProcessorsConcurrent: requests admitted at the same time change the
// count in turn, never to what it is already.
func TestProcessorsConcurrent(t *testing.T) {
	var got []bool // under p.mu, as set is called
	p := &processors{set: func(one bool) { got = append(got, one) }}
	p.one.Store(true)
	p.change(true) // as a request that raced another and came second
	if len(got) != 0 {
		t.Fatalf("a change to one processor on one set %v", got)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				serving := 1
				if (g+i)%7 == 0 {
					serving = 2
				}
				p.admitted(serving)
			}
		})
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, one := range got {
		if want := i%2 == 1; one != want {
			t.Fatalf("change %d set one=%v, after %v: a change to what it was", i, one, got[:i])
		}
	}
	if len(got) == 0 {
		t.Fatal("1,600 requests, some overlapping, changed nothing")
	}
}

// TestBusyEndsBeforeTheAnswer: a request stops counting as running
// (Server.busy, which the processors follow) before its answer is sent,
// so that a client quick to send its next request, on the same
// connection or a new one, is not taken for two requests at once (ADR
// 0020). Reads are counted like every other request.
func TestBusyEndsBeforeTheAnswer(t *testing.T) {
	var mu sync.Mutex
	var sets []bool
	s, sock, _, _, _ := keptServer(t, func(s *Server) {
		s.procs = &processors{set: func(one bool) {
			mu.Lock()
			defer mu.Unlock()
			sets = append(sets, one)
		}}
		s.procs.one.Store(true)
	})
	for i := range 20 {
		f, c := keptConn(t, sock)
		for read := range 2 { // a new connection's, then a kept one's
			keptRead(t, f, c)
			if n := s.busy.Load(); n != 0 {
				t.Fatalf("connection %d, read %d: counted as running (%d) once its answer came", i, read, n)
			}
		}
		f.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sets) != 0 {
		t.Errorf("40 requests one after another changed the processors: %v", sets)
	}
}
