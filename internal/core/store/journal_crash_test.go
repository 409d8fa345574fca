package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

const (
	envFailpoint = "STORE_FAILPOINT"
	envWorkers   = "STORE_WORKERS" // journal-calls' concurrent callers
)

// journalCalls is the crash tests' helper: it records calls as rukhd
// does (a journaled begin, a journaled outcome, Batch when the journal
// says ErrNotJournaled, and now and then another write, which folds),
// printing each record once it is acknowledged, from STORE_WORKERS
// callers at once, until the failpoint named in STORE_FAILPOINT
// ("name:k") kills it at its k-th hit.
func journalCalls(path string) error {
	name, k, _ := strings.Cut(os.Getenv(envFailpoint), ":")
	kth, err := strconv.ParseInt(k, 10, 64)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", envFailpoint, os.Getenv(envFailpoint), err)
	}
	var hits atomic.Int64
	store.SetFailpoint(func(point string) {
		if point == name && hits.Add(1) == kth {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	})
	s, err := store.Open(path, store.Options{Timeout: 5 * time.Second, Journal: true})
	if err != nil {
		return err
	}
	workers, _ := strconv.Atoi(os.Getenv(envWorkers))
	errs := make(chan error, max(workers, 1))
	for w := range max(workers, 1) {
		go func() { errs <- journalWorker(s, w) }()
	}
	for range max(workers, 1) {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Println("done")
	return s.Close()
}

// journalWorker records calls 1000w+1 to 1000w+400 (a worker of
// journalCalls).
func journalWorker(s *store.Store, w int) error {
	for n := 1000*w + 1; n <= 1000*w+400; n++ {
		inv := journalInv(n, "agent")
		err := s.JournalBegin(inv, 1<<20, alive)
		if errors.Is(err, store.ErrNotJournaled) {
			err = s.Batch(func(tx *store.Tx) error { return tx.BeginInvocation(inv, 1<<20, alive, t0) })
		}
		if err != nil {
			return err
		}
		fmt.Printf("begin %s\n", inv.ID)
		if n%50 == 0 {
			// Another write (an owner's change): it folds first.
			if err := s.Update(func(tx *store.Tx) error { return nil }); err != nil {
				return err
			}
		}
		f := &store.Finish{Outcome: "succeeded", ExitStatus: n % 7}
		_, err = s.JournalFinish(inv.ID, f, t0.Add(time.Duration(n)*time.Second))
		if errors.Is(err, store.ErrNotJournaled) {
			err = s.Batch(func(tx *store.Tx) error {
				_, err := tx.Finish(inv.ID, f, t0.Add(time.Duration(n)*time.Second))
				return err
			})
		}
		if err != nil {
			return err
		}
		fmt.Printf("finish %s %d\n", inv.ID, n%7)
	}
	return nil
}

// TestJournalCrashes kills a process that records calls through the
// journal, from one caller and from four at once (sharing syncs, racing
// the background fold), at each of the journal's points (after an
// entry's write, after its fdatasync, after a fold's commit, after the
// journal's reset), at an early and a later hit, and opens the store
// after it: every record it acknowledged is there, once, with its
// outcome; the store passes its check; and opening it again (a daemon
// restarted) changes nothing.
func TestJournalCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, tc := range []struct {
		fp      string
		workers int
	}{
		{"journal-written:5", 1}, {"journal-written:150", 1}, {"journal-written:300", 4},
		{"journal-synced:3", 1}, {"journal-synced:200", 1}, {"journal-synced:150", 4},
		{"fold-committed:1", 1}, {"fold-committed:4", 1}, {"fold-committed:3", 4},
		{"journal-reset:1", 1}, {"journal-reset:3", 1}, {"journal-reset:4", 4},
	} {
		t.Run(fmt.Sprintf("%s/callers=%d", tc.fp, tc.workers), func(t *testing.T) {
			path, s := openPath(t)
			s.Close()
			begun, finished := runJournalCalls(t, path, tc.fp, tc.workers)
			if len(begun) == 0 {
				t.Fatal("the helper acknowledged nothing before it was killed")
			}

			s, err := store.Open(path, store.Options{Timeout: time.Second})
			if err != nil {
				t.Fatalf("open after the kill: %v", err)
			}
			got := invocations(t, s)
			checkAcknowledged(t, got, begun, finished, tc.workers)
			if err := storetest.Check(s); err != nil {
				t.Fatal(err)
			}
			s.Close()

			// rukhd starts again on it, and stops.
			s, err = store.Open(path, store.Options{Timeout: time.Second, Journal: true})
			if err != nil {
				t.Fatal(err)
			}
			again := invocations(t, s)
			s.Close()
			if len(again) != len(got) {
				t.Fatalf("opened again: %d invocations, then %d", len(got), len(again))
			}
			checkAcknowledged(t, again, begun, finished, tc.workers)
			t.Logf("%d begins and %d outcomes acknowledged; %d records", len(begun), len(finished), len(got))
		})
	}
}

// runJournalCalls runs the journal-calls helper on path until failpoint
// kills it, and returns the begin records it acknowledged and the exit
// status of each outcome it acknowledged.
func runJournalCalls(t *testing.T, path, failpoint string, workers int) (begun map[string]bool, finished map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"=journal-calls", envPath+"="+path, envFailpoint+"="+failpoint, envWorkers+"="+strconv.Itoa(workers))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	begun, finished = map[string]bool{}, map[string]int{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "begin":
			begun[f[1]] = true
		case len(f) == 3 && f[0] == "finish":
			finished[f[1]], _ = strconv.Atoi(f[2])
		case len(f) == 1 && f[0] == "done":
			t.Fatalf("the helper ended without reaching failpoint %s", failpoint)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || ctx.Err() != nil {
		t.Fatalf("the helper ended with %v, want killed at failpoint %s", err, failpoint)
	}
	return begun, finished
}

// checkAcknowledged checks that every acknowledged begin record is in
// got, and every acknowledged outcome as it was acknowledged. Records
// not acknowledged may be there too (their writes were done), open or
// not: at most each caller's call in flight.
func checkAcknowledged(t *testing.T, got map[string]*store.Invocation, begun map[string]bool, finished map[string]int, callers int) {
	t.Helper()
	for id := range begun {
		inv := got[id]
		if inv == nil {
			t.Errorf("acknowledged begin record %s is lost", id)
			continue
		}
		if status, ok := finished[id]; ok && (inv.Outcome != "succeeded" || inv.ExitStatus != status) {
			t.Errorf("acknowledged outcome of %s is %q/%d, want succeeded/%d", id, inv.Outcome, inv.ExitStatus, status)
		}
	}
	if extra := len(got) - len(begun); extra < 0 || extra > callers {
		t.Errorf("%d records for %d acknowledged begins; at most one more a caller may be there", len(got), len(begun))
	}
	open := 0
	for _, inv := range got {
		if inv.Open() {
			open++
		}
	}
	if open > 2*callers {
		t.Errorf("%d open records; at most, for each caller, the call in flight and one whose outcome was not acknowledged may be", open)
	}
}
