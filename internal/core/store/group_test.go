package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// groupWait bounds every wait of these tests for the calls to queue.
const groupWait = time.Minute

var scratch = []byte("group-test")

// groupHarness holds a leader's transaction open while n more Batch calls
// queue behind it, then lets them run, recording each transaction's size.
type groupHarness struct {
	s       *Store
	mu      sync.Mutex
	sizes   []int
	release chan struct{}
}

func newGroupHarness(t *testing.T) *groupHarness {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h := &groupHarness{s: s, release: make(chan struct{})}
	s.group.onRun = func(n int) {
		h.mu.Lock()
		h.sizes = append(h.sizes, n)
		h.mu.Unlock()
	}
	return h
}

// put is a Batch function that writes key and adds one to the counter,
// reading the counter in the same transaction.
func put(key string) func(*Tx) error {
	return func(tx *Tx) error {
		b, err := tx.tx.CreateBucketIfNotExists(scratch)
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(string(b.Get([]byte("counter"))))
		if err := b.Put([]byte("counter"), []byte(strconv.Itoa(n+1))); err != nil {
			return err
		}
		return b.Put([]byte(key), []byte("1"))
	}
}

// run starts the leader and then the calls fns, waits until all of them
// queued behind it, lets them run and returns each call's error.
func (h *groupHarness) run(t *testing.T, fns []func(*Tx) error) []error {
	t.Helper()
	return h.runCatching(t, fns, nil)
}

// runCatching is run, with a call's panic passed to onPanic.
func (h *groupHarness) runCatching(t *testing.T, fns []func(*Tx) error, onPanic func(any)) []error {
	t.Helper()
	queued := make(chan struct{}, len(fns))
	h.s.group.onQueue = func() { queued <- struct{}{} }
	inLeader := make(chan struct{})
	leaderDone := make(chan error, 1)
	go func() {
		leaderDone <- h.s.Batch(func(tx *Tx) error {
			close(inLeader)
			<-h.release
			return put("leader")(tx)
		})
	}()
	select {
	case <-inLeader:
	case <-time.After(groupWait):
		t.Fatalf("the leader's transaction did not start within %v", groupWait)
	}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					if onPanic == nil {
						panic(r)
					}
					onPanic(r)
				}
			}()
			errs[i] = h.s.Batch(fn)
		})
	}
	for i := range fns {
		select {
		case <-queued:
		case <-time.After(groupWait):
			t.Fatalf("%d of %d calls queued behind the leader within %v", i, len(fns), groupWait)
		}
	}
	close(h.release)
	wg.Wait()
	if err := <-leaderDone; err != nil {
		t.Errorf("leader: %v", err)
	}
	return errs
}

func (h *groupHarness) read(t *testing.T, key string) string {
	t.Helper()
	var v string
	if err := h.s.View(func(tx *Tx) error {
		if b := tx.tx.Bucket(scratch); b != nil {
			v = string(b.Get([]byte(key)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// Concurrent calls share commits: what queued behind a running commit
// commits in the next one, in groups of at most MaxGroup, and each call
// sees the writes of those before it (the counter counts every call).
func TestBatchGroupsConcurrentCalls(t *testing.T) {
	for _, n := range []int{1, 7, MaxGroup + 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			h := newGroupHarness(t)
			var fns []func(*Tx) error
			for i := range n {
				fns = append(fns, put(fmt.Sprint("k", i)))
			}
			for i, err := range h.run(t, fns) {
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
			}
			want := []int{1, min(n, MaxGroup)}
			if n > MaxGroup {
				want = append(want, n-MaxGroup)
			}
			if !slices.Equal(h.sizes, want) {
				t.Errorf("transactions of %v calls, want %v", h.sizes, want)
			}
			if got := h.read(t, "counter"); got != strconv.Itoa(n+1) {
				t.Errorf("counter %s after %d calls and the leader", got, n)
			}
			for i := range n {
				if h.read(t, fmt.Sprint("k", i)) != "1" {
					t.Errorf("call %d's write was not committed", i)
				}
			}
		})
	}
}

// A call that fails gets its own error and commits nothing; the others of
// its group are run again together and commit once each.
func TestBatchFailingCall(t *testing.T) {
	h := newGroupHarness(t)
	boom := errors.New("boom")
	var mu sync.Mutex
	runs := map[int]int{}
	var fns []func(*Tx) error
	for i := range 4 {
		fns = append(fns, func(tx *Tx) error {
			mu.Lock()
			runs[i]++
			mu.Unlock()
			if err := put(fmt.Sprint("k", i))(tx); err != nil {
				return err
			}
			if i == 2 {
				return boom
			}
			return nil
		})
	}
	errs := h.run(t, fns)
	for i, err := range errs {
		want := error(nil)
		if i == 2 {
			want = boom
		}
		if !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("call %d: %v, want %v", i, err, want)
		}
	}
	if got := h.read(t, "k2"); got != "" {
		t.Errorf("the failed call's write was committed")
	}
	if got := h.read(t, "counter"); got != "4" {
		t.Errorf("counter %s, want 4 (the leader and three calls)", got)
	}
	// The queue's order is the goroutines': with the failing call at
	// position p of the group, the calls before it commit together, then
	// it alone, then those after it.
	ok := false
	for p := range 4 {
		want := []int{1, 4}
		if p > 0 {
			want = append(want, p)
		}
		want = append(want, 1)
		if 3-p > 0 {
			want = append(want, 3-p)
		}
		ok = ok || slices.Equal(h.sizes, want)
	}
	if !ok {
		t.Errorf("transactions of %v calls, want [1 4] then, for the failing call at position p, [p] (if any), [1], [3-p] (if any)", h.sizes)
	}
	if runs[2] != 2 {
		t.Errorf("the failing call ran %d times, want 2 (in the group, then alone)", runs[2])
	}
}

// A transaction that cannot commit fails every call of its group with
// the same error (here: the store became wedged while they queued).
func TestBatchCommitFails(t *testing.T) {
	h := newGroupHarness(t)
	wedged := &CorruptError{Path: h.s.path, Err: errors.New("bbolt could not end a transaction on it")}
	fns := []func(*Tx) error{put("a"), put("b"), put("c")}
	h.s.group.onRun = func(n int) {
		h.mu.Lock()
		h.sizes = append(h.sizes, n)
		if n > 1 {
			h.s.wedged.Store(wedged) // after the leader committed
		}
		h.mu.Unlock()
	}
	for i, err := range h.run(t, fns) {
		if !errors.Is(err, wedged) {
			t.Errorf("call %d: %v, want %v", i, err, wedged)
		}
	}
	if !slices.Equal(h.sizes, []int{1, 3}) {
		t.Errorf("transactions of %v calls, want [1 3]", h.sizes)
	}
}

// A call whose fn panics has the panic raised again in its own caller;
// the others commit, and the store takes more calls: nothing is left
// waiting.
func TestBatchPanickingCall(t *testing.T) {
	h := newGroupHarness(t)
	fns := []func(*Tx) error{put("a"), func(*Tx) error { panic("boom") }, put("c")}
	var mu sync.Mutex
	var recovered []any
	errs := h.runCatching(t, fns, func(v any) {
		mu.Lock()
		recovered = append(recovered, v)
		mu.Unlock()
	})
	if !slices.Equal(recovered, []any{"boom"}) {
		t.Errorf("callers recovered %v, want exactly one boom", recovered)
	}
	for i, err := range errs {
		if i != 1 && err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if h.read(t, "a") != "1" || h.read(t, "c") != "1" {
		t.Errorf("the other calls' writes were not committed")
	}
	if err := h.s.Batch(put("later")); err != nil || h.read(t, "later") != "1" {
		t.Errorf("a later call: %v", err)
	}
}
