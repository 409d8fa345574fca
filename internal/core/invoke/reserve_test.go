package invoke

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The pending-outcomes directory keeps a reserve of allocated disk space;
// a save that finds the disk full frees it and is written, so an outcome
// the store could not take is still kept.
func TestReserveForFullDisk(t *testing.T) {
	c := New(t.TempDir())
	c.keepReserve()
	reserve := filepath.Join(c.DataDir, PendingDir, reserveName)
	var st syscall.Stat_t
	if err := syscall.Stat(reserve, &st); err != nil || st.Blocks*512 < reserveSize {
		t.Fatalf("the reserve: %v, %d bytes allocated; want %d", err, st.Blocks*512, reserveSize)
	}
	full := true
	testHookSave = func() error {
		if _, err := os.Stat(reserve); err == nil && full {
			return &os.PathError{Op: "write", Path: "pending", Err: syscall.ENOSPC}
		}
		return nil
	}
	t.Cleanup(func() { testHookSave = func() error { return nil } })
	name, err := c.savePending(&pendingOutcome{ID: "0123456789abcdef0123456789abcdef", Outcome: "succeeded"}, nil)
	if err != nil {
		t.Fatalf("a save on a full disk with a reserve: %v", err)
	}
	if _, err := os.Stat(name); err != nil {
		t.Errorf("the saved outcome: %v", err)
	}
	if _, err := os.Stat(reserve); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reserve was not given up: %v", err)
	}
	// The space the reserve held serves the saves that follow.
	_, err = c.savePending(&pendingOutcome{ID: "1123456789abcdef0123456789abcdef", Outcome: "succeeded"}, nil)
	if err != nil {
		t.Errorf("a second save once the reserve is gone and the disk has room: %v", err)
	}
	full = false
	c.keepReserve()
	if _, err := os.Stat(reserve); err != nil {
		t.Errorf("the reserve was not made again: %v", err)
	}
}

// Each admitted call holds a reserve of its own, allocated, for its
// outcome; a save on a disk that stays full (every new write fails) is
// written into it, and so is every other call's: none depends on space
// another call freed. Reserves of hosts that are gone are removed, and
// no more than MaxCallReserves are held.
func TestCallReservesOnAFullDisk(t *testing.T) {
	c := New(t.TempDir())
	testHookSave = func() error { return &os.PathError{Op: "write", Path: "pending", Err: syscall.ENOSPC} }
	t.Cleanup(func() { testHookSave = func() error { return nil } })
	var held []*callReserve
	for i := range 8 {
		id := fmt.Sprintf("%032x", i+1)
		res, err := c.takeReserve(id)
		if err != nil || res == nil {
			t.Fatalf("reserve %d: %v, %v", i, res, err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(res.name, &st); err != nil || st.Blocks*512 < CallReserveSize {
			t.Fatalf("reserve %d: %v, %d bytes allocated; want %d", i, err, st.Blocks*512, CallReserveSize)
		}
		held = append(held, res)
	}
	for i, res := range held {
		p := &pendingOutcome{ID: fmt.Sprintf("%032x", i+1), Outcome: "succeeded", Detail: strings.Repeat("d", 4000)}
		name, err := c.savePending(p, res)
		if err != nil {
			t.Fatalf("save %d on a full disk with its own reserve: %v", i, err)
		}
		data, err := os.ReadFile(name)
		var got pendingOutcome
		if err != nil || json.Unmarshal(data, &got) != nil || got.ID != p.ID || got.Detail != p.Detail {
			t.Fatalf("saved outcome %d: %v %q", i, err, data)
		}
		if _, err := os.Stat(res.name); res.name != "" || err == nil {
			t.Errorf("reserve %d not used up", i)
		}
	}
	// A dead host's reserve is removed by the next admission; the cap.
	dir := filepath.Join(c.DataDir, PendingDir)
	stale := filepath.Join(dir, callReservePrefix+"999999999.1-"+strings.Repeat("a", 32))
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range MaxCallReserves {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s%d.%d-%032x", callReservePrefix, os.Getpid(), selfStart(), 1000+i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.takeReserve(strings.Repeat("b", 32)); err == nil || !strings.Contains(err.Error(), "invoke.MaxCallReserves") {
		t.Errorf("a reserve beyond MaxCallReserves: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dead host's reserve was kept: %v", err)
	}
}

// A call gives its reserve back, still allocated, and the next call
// takes that same file (a rename, no new allocation); an admission
// leaves at most MaxFreeReserves free, and a free reserve is never
// counted as held nor taken for a saved outcome.
func TestFreeReservesAreTakenAgain(t *testing.T) {
	c := New(t.TempDir())
	dir := filepath.Join(c.DataDir, PendingDir)
	first, err := c.takeReserve(fmt.Sprintf("%032x", 1))
	if err != nil || first == nil {
		t.Fatalf("first reserve: %v, %v", first, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(first.name, &st); err != nil {
		t.Fatal(err)
	}
	inode := st.Ino
	first.release()
	freed := filepath.Join(dir, freeReservePrefix+fmt.Sprintf("%032x", 1))
	if err := syscall.Stat(freed, &st); err != nil || st.Ino != inode || st.Blocks*512 < CallReserveSize {
		t.Fatalf("the released reserve: %v, inode %d (want %d), %d bytes allocated", err, st.Ino, inode, st.Blocks*512)
	}
	if n := PendingOutcomes(c.DataDir); n != 0 {
		t.Errorf("a free reserve counted as %d saved outcomes", n)
	}
	second, err := c.takeReserve(fmt.Sprintf("%032x", 2))
	if err != nil || second == nil {
		t.Fatalf("second reserve: %v, %v", second, err)
	}
	if err := syscall.Stat(second.name, &st); err != nil || st.Ino != inode || st.Blocks*512 < CallReserveSize {
		t.Fatalf("the second call's reserve: %v, inode %d (want the freed %d), %d bytes allocated", err, st.Ino, inode, st.Blocks*512)
	}
	if _, err := os.Stat(freed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the free reserve is still there once taken: %v", err)
	}
	second.release()

	// A burst gives back more than MaxFreeReserves; the next admission
	// keeps that many free, beside its own.
	var burst []*callReserve
	for i := range MaxFreeReserves + 5 {
		r, err := c.takeReserve(fmt.Sprintf("%032x", 100+i))
		if err != nil || r == nil {
			t.Fatalf("burst reserve %d: %v, %v", i, r, err)
		}
		burst = append(burst, r)
	}
	for _, r := range burst {
		r.release()
	}
	if _, err := c.takeReserve(fmt.Sprintf("%032x", 999)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var free, held int
	for _, e := range ents {
		switch {
		case strings.HasPrefix(e.Name(), freeReservePrefix):
			free++
		case strings.HasPrefix(e.Name(), callReservePrefix):
			held++
		}
	}
	if free != MaxFreeReserves-1 || held != 1 {
		t.Errorf("after a burst and one admission: %d free (want %d), %d held (want 1)", free, MaxFreeReserves-1, held)
	}
}

// A core that keeps reserves between calls (KeepReserves, rukhd's) takes
// the one an earlier call kept with no file system work: the same file,
// still named for this host, and nothing else in PendingDir changes. It
// keeps at most KeepReserves; one used up by a saved outcome is not kept;
// another host leaves them alone; and ReleaseReserves gives them back,
// free and still allocated.
func TestKeptReservesAreTakenWithoutFiles(t *testing.T) {
	c := New(t.TempDir())
	c.KeepReserves = 2
	dir := filepath.Join(c.DataDir, PendingDir)
	id := func(i int) string { return fmt.Sprintf("%032x", i) }
	listing := func() []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	first, err := c.takeReserve(id(1))
	if err != nil || first == nil {
		t.Fatalf("first reserve: %v, %v", first, err)
	}
	name := first.name
	first.release()
	kept := listing()
	if len(kept) != 1 || filepath.Join(dir, kept[0]) != name {
		t.Fatalf("after the first call PendingDir holds %q, want its reserve %s kept as it was", kept, name)
	}
	second, err := c.takeReserve(id(2))
	if err != nil || second == nil || second.name != name {
		t.Fatalf("second reserve: %+v, %v; want the kept %s", second, err, name)
	}
	if now := listing(); !slices.Equal(now, kept) {
		t.Errorf("taking a kept reserve changed PendingDir: %q, was %q", now, kept)
	}

	// Three at once: the kept one and two new; two are kept, one is free.
	third, err := c.takeReserve(id(3))
	if err != nil || third == nil {
		t.Fatalf("third reserve: %v, %v", third, err)
	}
	fourth, err := c.takeReserve(id(4))
	if err != nil || fourth == nil {
		t.Fatalf("fourth reserve: %v, %v", fourth, err)
	}
	// One used up by a saved outcome is gone, not kept.
	if err := fourth.saveInto(filepath.Join(dir, id(4)+".json"), []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	second.release()
	third.release()
	fourth.release()
	count := func() (free, held int) {
		for _, n := range listing() {
			switch {
			case strings.HasPrefix(n, freeReservePrefix):
				free++
			case strings.HasPrefix(n, callReservePrefix):
				held++
			}
		}
		return free, held
	}
	if free, held := count(); free != 0 || held != 2 {
		t.Errorf("after three calls: %d free, %d held (kept); want 0 and 2", free, held)
	}

	// Another host's admission counts them as held and leaves them.
	other := New(c.DataDir)
	r, err := other.takeReserve(id(5))
	if err != nil || r == nil {
		t.Fatalf("another host's reserve: %v, %v", r, err)
	}
	r.release()
	if free, held := count(); free != 1 || held != 2 {
		t.Errorf("after another host's call: %d free, %d held; want 1 and 2", free, held)
	}

	c.ReleaseReserves()
	if free, held := count(); free != 3 || held != 0 {
		t.Errorf("after ReleaseReserves: %d free, %d held; want 3 and 0", free, held)
	}
	for _, n := range listing() {
		var st syscall.Stat_t
		if strings.HasPrefix(n, freeReservePrefix) && (syscall.Stat(filepath.Join(dir, n), &st) != nil || st.Blocks*512 < CallReserveSize) {
			t.Errorf("free reserve %s is no longer allocated (%d bytes)", n, st.Blocks*512)
		}
	}
	if r := c.reserves.take(); r != "" {
		t.Errorf("ReleaseReserves left %s kept", r)
	}
}
