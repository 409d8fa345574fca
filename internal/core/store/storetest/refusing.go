package storetest

import (
	"sync"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// Refusing is a store.Provider that lets the first Pass updates through,
// refuses the next Fail ones (all of them when Fail < 0) with Err, and
// lets the rest through. A call's admission is its first update and its
// final write the second, so tests use it to make the final write fail.
type Refusing struct {
	store.Provider
	Pass, Fail int
	Err        error

	mu      sync.Mutex
	updates int
}

// Update counts one update, and refuses it or runs it.
func (r *Refusing) Update(fn func(*store.Tx) error) error { return r.write(r.Provider.Update, fn) }

// Batch is counted and refused as Update is.
func (r *Refusing) Batch(fn func(*store.Tx) error) error { return r.write(r.Provider.Batch, fn) }

func (r *Refusing) write(through func(func(*store.Tx) error) error, fn func(*store.Tx) error) error {
	r.mu.Lock()
	n := r.updates
	r.updates++
	r.mu.Unlock()
	if n >= r.Pass && (r.Fail < 0 || n < r.Pass+r.Fail) {
		return r.Err
	}
	return through(fn)
}

// Updates is how many updates (Update and Batch) were asked for so far.
func (r *Refusing) Updates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates
}
