package storetest

import (
	"sync"

	"github.com/rukh-cli/rukh/store"
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

func (r *Refusing) Update(fn func(*store.Tx) error) error {
	r.mu.Lock()
	n := r.updates
	r.updates++
	r.mu.Unlock()
	if n >= r.Pass && (r.Fail < 0 || n < r.Pass+r.Fail) {
		return r.Err
	}
	return r.Provider.Update(fn)
}

// Updates is how many updates were asked for so far.
func (r *Refusing) Updates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates
}
