package invoke

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every admitted call holds its own reserve of disk space from admission
// until its outcome is committed: a file in PendingDir with room for one
// outcome saved aside, allocated before the command runs. When the store
// cannot take the outcome, it is written into that file's own allocated
// blocks and the file renamed into place, so the save needs no space the
// disk still has. One shared reserve (reserveName) kept only the first
// outcome on a disk another writer keeps full: the space it freed went to
// that writer, and the next calls' outcomes were lost as host_lost.
const (
	// CallReserveSize is the space one call holds for its outcome: a
	// saved outcome is the record's fields, bounded by the completion
	// report it came in (extproto.MaxFrame, 256 KiB).
	CallReserveSize = 256 << 10
	// MaxCallReserves bounds the calls that hold a reserve at once in one
	// data directory (profile.MaxConcurrent: one task's most), and so the
	// space held: 64 MiB. A call beyond it is refused before it runs.
	MaxCallReserves = 256
	// callReservePrefix names a call's reserve: .reserve-PID.START-ID,
	// the host process that holds it, so a reserve a dead host left is
	// found and removed.
	callReservePrefix = reserveName + "-"
	// freeReservePrefix names a reserve no call holds (.free-reserve-ID):
	// one a call gave back once its outcome was committed, still
	// allocated, for the next call to take by renaming it. Creating,
	// allocating and removing a file for every call cost 0.6–0.8 ms of
	// it on ext4; two renames cost 0.02 ms (docs/benchmarks.md).
	freeReservePrefix = ".free-reserve-"
	// MaxFreeReserves bounds the reserves an admission leaves free (2
	// MiB); a burst of calls may give back more, which the next
	// admission removes.
	MaxFreeReserves = 8
)

// callReserve is one call's reserve; the zero value (nil) holds none.
type callReserve struct {
	name string        // its file; "" once used or released
	id   string        // the call's
	kept *keptReserves // where release keeps it for the next call; nil: give it back
	keep int           // how many kept may hold (Core.KeepReserves)
}

// keptReserves are the reserves a core holds between its calls
// (Core.KeepReserves): allocated, named for this host as a call's are
// (so other hosts count them and leave them alone), and taken by its next
// calls with no file system work.
type keptReserves struct {
	mu    sync.Mutex
	names []string
}

func (k *keptReserves) take() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.names) == 0 {
		return ""
	}
	name := k.names[len(k.names)-1]
	k.names = k.names[:len(k.names)-1]
	return name
}

// put keeps name unless max are kept already.
func (k *keptReserves) put(name string, max int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.names) >= max {
		return false
	}
	k.names = append(k.names, name)
	return true
}

// ReleaseReserves gives back every reserve this core keeps between calls
// (KeepReserves), free for any host's next call: the host stops serving.
// Reserves a host left behind when it was killed are removed by the next
// call that looks for a free one (takeReserve).
func (c *Core) ReleaseReserves() {
	for {
		name := c.reserves.take()
		if name == "" {
			return
		}
		(&callReserve{name: name, id: newInvocationID()}).release()
	}
}

// takeReserve allocates the reserve of call id (CallReserveSize, fallocate
// with KEEP_SIZE: blocks held, the file empty) in PendingDir: a free one
// another call gave back when there is one, else a new file. It fails
// when the disk has no room for it or MaxCallReserves calls hold one: the
// call could not be sure to keep its outcome, and is refused before it
// runs. Reserves left by hosts that are gone are removed first. A file
// system without fallocate, or a PendingDir that cannot be written for
// another reason than space, holds no reserve, as keepReserve does: the
// call runs with the shared margin only.
func (c *Core) takeReserve(id string) (*callReserve, error) {
	if err := testHookReserve(); err != nil {
		return nil, err
	}
	// One this core kept from an earlier call is allocated and counted
	// already: taking it adds no reserve, so neither the limit nor the
	// space needs looking at.
	if name := c.reserves.take(); name != "" {
		return c.reserve(name, id), nil
	}
	dir := filepath.Join(c.DataDir, PendingDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, noRoom(err)
	}
	ents, _ := os.ReadDir(dir)
	held := 0
	var free []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), freeReservePrefix) {
			if e.Type().IsRegular() {
				free = append(free, e.Name())
			}
			continue
		}
		rest, ok := strings.CutPrefix(e.Name(), callReservePrefix)
		if !ok {
			continue
		}
		if !reserveHostAlive(rest) {
			os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		held++
	}
	if held >= MaxCallReserves {
		return nil, fmt.Errorf("%d calls already hold room for their outcomes, the most there may be (invoke.MaxCallReserves)", held)
	}
	for len(free) > MaxFreeReserves {
		os.Remove(filepath.Join(dir, free[len(free)-1]))
		free = free[:len(free)-1]
	}
	name := filepath.Join(dir, fmt.Sprintf("%s%d.%d-%s", callReservePrefix, os.Getpid(), selfStart(), id))
	f := takeFree(dir, free, name)
	if f == nil {
		var err error
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, noRoom(err)
		}
	}
	defer f.Close()
	// A reserve taken from the free ones is allocated already, and this
	// allocates nothing; it makes sure.
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, CallReserveSize); err != nil {
		os.Remove(name)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return nil, &os.PathError{Op: "fallocate", Path: name, Err: err}
		}
		return nil, nil // no fallocate here: no reserve, as keepReserve
	}
	return c.reserve(name, id), nil
}

// reserve is call id's reserve, the file name.
func (c *Core) reserve(name, id string) *callReserve {
	return &callReserve{name: name, id: id, kept: &c.reserves, keep: c.KeepReserves}
}

// takeFree renames the first of the free reserves (names in dir) that
// no other host takes first to name, and opens it; nil when none is
// left.
func takeFree(dir string, free []string, name string) *os.File {
	for _, fr := range free {
		if os.Rename(filepath.Join(dir, fr), name) != nil {
			continue // another host took it
		}
		f, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
		if err == nil {
			return f
		}
		os.Remove(name)
	}
	return nil
}

// noRoom is err when it says the disk is full (ENOSPC, EDQUOT), else nil:
// a reserve that cannot be made for another reason (an unwritable
// PendingDir) is not held, as keepReserve, and the save aside reports
// that reason if it comes to it.
func noRoom(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return err
	}
	return nil
}

// reserveHostAlive reports whether the host named in a reserve's name
// (PID.START-ID) still runs.
func reserveHostAlive(rest string) bool {
	host, _, ok := strings.Cut(rest, "-")
	pidS, startS, ok2 := strings.Cut(host, ".")
	pid, err1 := strconv.Atoi(pidS)
	start, err2 := strconv.ParseUint(startS, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil {
		return true // not ours to judge: left alone, and counted
	}
	return processAlive(pid, start)
}

// release gives the reserve up once the call's outcome is committed (one
// saved in it used it up): its core keeps it for its next call
// (Core.KeepReserves), or it stays allocated, free for any host's next
// call (freeReservePrefix), or is removed when it cannot be renamed.
func (r *callReserve) release() {
	if r == nil || r.name == "" {
		return
	}
	if r.kept != nil && r.kept.put(r.name, r.keep) {
		r.name = ""
		return
	}
	if os.Rename(r.name, filepath.Join(filepath.Dir(r.name), freeReservePrefix+r.id)) != nil {
		os.Remove(r.name)
	}
	r.name = ""
}

// saveInto writes data as the saved outcome name, in the reserve's own
// allocated blocks, synced, then renames the reserve into place and syncs
// the directory: nothing of it needs space the disk may no longer have.
// The reserve is used up when it returns nil.
func (r *callReserve) saveInto(name string, data []byte) error {
	if r == nil || r.name == "" || len(data) > CallReserveSize {
		return errors.New("no reserve for it")
	}
	f, err := os.OpenFile(r.name, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.name, name)
	}
	if err != nil {
		return err
	}
	r.name = ""
	d, err := os.Open(filepath.Dir(name))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
