package invoke_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// records returns every invocation record, newest first.
func records(t *testing.T, core *invoke.Core) []*store.Invocation {
	t.Helper()
	invs, err := core.Invocations(0)
	if err != nil {
		t.Fatal(err)
	}
	return invs
}

func pendingFiles(t *testing.T, core *invoke.Core) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(core.DataDir, invoke.PendingDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A final write that the store refuses a few times is tried again until
// it lands: the same outcome, recorded once, nothing left aside.
func TestFinishRetried(t *testing.T) {
	for name, refusal := range map[string]error{
		"locked":    &store.LockedError{Path: "/x/store.db"},
		"disk-full": fmt.Errorf("commit: write /x/store.db: %w", syscall.ENOSPC),
	} {
		t.Run(name, func(t *testing.T) {
			core, home := setup(t)
			target, _, err := core.Resolve([]string{"h", "well-behaved"})
			if err != nil {
				t.Fatal(err)
			}
			healthy := core.Store
			r := &storetest.Refusing{Provider: healthy, Pass: 1, Fail: 3, Err: refusal}
			core.Store, core.FinishRetry = r, 5*time.Second
			out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if out.Outcome != invoke.Succeeded || out.Result == nil || out.Result.Text != "ok\n" {
				t.Errorf("outcome %+v", out)
			}
			if got := r.Updates(); got != 5 { // begin, 3 refused, the one that landed
				t.Errorf("%d updates, want 5", got)
			}
			core.Store = healthy
			invs := records(t, core)
			if len(invs) != 1 || invs[0].ID != out.InvocationID || invs[0].Outcome != invoke.Succeeded {
				t.Fatalf("records %+v", invs)
			}
			if p := pendingFiles(t, core); len(p) != 0 {
				t.Errorf("left aside: %v", p)
			}
		})
	}
}

// A final write that the store refuses for longer than FinishRetry: the
// outcome is saved aside, the error says so exactly, and the next
// admission records that outcome — never host_lost.
func TestFinishSavedAside(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	healthy := core.Store
	refusal := &store.LockedError{Path: "/x/store.db"}
	core.Store, core.FinishRetry = &storetest.Refusing{Provider: healthy, Pass: 1, Fail: -1, Err: refusal}, 300*time.Millisecond
	decided := time.Now().UTC()
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if out.Outcome != invoke.Succeeded || out.Result == nil || out.Result.Text != "ok\n" {
		t.Errorf("outcome %+v", out)
	}
	var re *invoke.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *RecordError", err)
	}
	pending := filepath.Join(core.DataDir, invoke.PendingDir, out.InvocationID+".json")
	want := fmt.Sprintf("invocation %s: the outcome succeeded could not be written to the store (%v); it is saved in %s and the next call records it",
		out.InvocationID, refusal, pending)
	if err.Error() != want {
		t.Errorf("message\n got %q\nwant %q", err, want)
	}
	if !errors.As(err, new(*store.LockedError)) {
		t.Errorf("%v does not unwrap to the store's refusal", err)
	}
	if fi, err := os.Stat(pending); err != nil || fi.Mode() != 0o600 {
		t.Fatalf("saved outcome: %v, %v", fi, err)
	}

	// Until the next admission, the record is open.
	core.Store = healthy
	invs := records(t, core)
	if len(invs) != 1 || !invs[0].Open() {
		t.Fatalf("records %+v, want the one open", invs)
	}
	// The next call (here: the daemon's ResolveLost, as at its start, then
	// a call) commits the saved outcome first.
	if lost, err := core.ResolveLost(); err != nil || len(lost) != 0 {
		t.Errorf("ResolveLost = %v, %v", lost, err)
	}
	next, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if err != nil || next.Outcome != invoke.Succeeded {
		t.Fatalf("next call: %+v, %v", next, err)
	}
	invs = records(t, core)
	if len(invs) != 2 {
		t.Fatalf("%d records, want 2", len(invs))
	}
	first := invs[1]
	if first.ID != out.InvocationID || first.Outcome != invoke.Succeeded || first.Reason != "" || first.Open() {
		t.Errorf("the first call's record: %+v", first)
	}
	if first.FinishedAt.Before(decided.Add(-time.Second)) || first.FinishedAt.After(decided.Add(time.Second)) {
		t.Errorf("finished at %v, want when the outcome was decided (%v)", first.FinishedAt, decided)
	}
	if p := pendingFiles(t, core); len(p) != 0 {
		t.Errorf("left aside after it was recorded: %v", p)
	}
}

// The host that saved an outcome aside and then got its write through
// finds it already recorded: still one outcome, and the file is gone.
func TestFinishSettledByAnother(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	healthy := core.Store
	// Refused once; then, while the host backs off, another process's
	// admission commits the saved outcome.
	r := &storetest.Refusing{Provider: healthy, Pass: 1, Fail: 1, Err: &store.LockedError{Path: "/x"}}
	other := invoke.New(core.DataDir)
	core.Store = &settleOnSecondTry{Refusing: r, other: other, target: target, home: home, t: t}
	core.FinishRetry = 5 * time.Second
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if err != nil || out.Outcome != invoke.Succeeded {
		t.Fatalf("%+v, %v", out, err)
	}
	core.Store = healthy
	invs := records(t, core)
	if len(invs) != 2 {
		t.Fatalf("%d records, want 2", len(invs))
	}
	for _, inv := range invs {
		if inv.Outcome != invoke.Succeeded {
			t.Errorf("record %+v", inv)
		}
	}
	if p := pendingFiles(t, core); len(p) != 0 {
		t.Errorf("left aside: %v", p)
	}
}

// settleOnSecondTry runs a whole call on another core just before the
// host's second try of its final write.
type settleOnSecondTry struct {
	*storetest.Refusing
	other  *invoke.Core
	target *invoke.Target
	home   string
	t      *testing.T
}

func (s *settleOnSecondTry) Update(fn func(*store.Tx) error) error {
	s.beforeWrite()
	return s.Refusing.Update(fn)
}

func (s *settleOnSecondTry) Batch(fn func(*store.Tx) error) error {
	s.beforeWrite()
	return s.Refusing.Batch(fn)
}

func (s *settleOnSecondTry) beforeWrite() {
	if s.Updates() == 2 {
		out, err := s.other.Invoke(context.Background(), s.target, &invoke.Request{Transport: invoke.TransportCLI, Dir: s.home})
		if err != nil || out.Outcome != invoke.Succeeded {
			s.t.Errorf("the other call: %+v, %v", out, err)
		}
	}
}

// When the outcome can be neither written nor saved aside, the error says
// what the record will show.
func TestFinishLost(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "command-fails"})
	if err != nil {
		t.Fatal(err)
	}
	// PendingDir cannot be created: a file is in its way.
	if err := os.WriteFile(filepath.Join(core.DataDir, invoke.PendingDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	refusal := fmt.Errorf("commit: %w", syscall.ENOSPC)
	core.Store = &storetest.Refusing{Provider: core.Store, Pass: 1, Fail: -1, Err: refusal}
	core.FinishRetry = 200 * time.Millisecond
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if out.Outcome != invoke.CommandFailed || out.ExitStatus != 3 {
		t.Errorf("outcome %+v", out)
	}
	var re *invoke.RecordError
	if !errors.As(err, &re) || re.PendingErr == nil || re.Pending != "" {
		t.Fatalf("err = %#v", err)
	}
	want := fmt.Sprintf("invocation %s: the outcome command_failed could not be recorded (%v), nor saved aside (%v); its record will show execution_failed/host_lost",
		out.InvocationID, refusal, re.PendingErr)
	if err.Error() != want {
		t.Errorf("message\n got %q\nwant %q", err, want)
	}
	if _, ferr := core.StoreWriteFailure(); !errors.Is(ferr, syscall.ENOSPC) {
		t.Errorf("StoreWriteFailure = %v, want the full disk", ferr)
	}

	// Space is back. The record of the lost call is open, and this host
	// (this process) is alive, but it knows that call has finished: the
	// next admission closes the record as the message said, so its slot
	// of maxConcurrent is free again, and the host's writes are healthy.
	core.Store = core.Store.(*storetest.Refusing).Provider
	if _, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home}); err != nil {
		t.Fatal(err)
	}
	var lost *store.Invocation
	for _, inv := range records(t, core) {
		if inv.ID == out.InvocationID {
			lost = inv
		}
	}
	if lost == nil || lost.Outcome != invoke.ExecutionFailed || lost.Reason != invoke.ReasonHostLost {
		t.Errorf("the lost call's record = %+v, want execution_failed/host_lost", lost)
	}
	if _, ferr := core.StoreWriteFailure(); ferr != nil {
		t.Errorf("StoreWriteFailure after a write went through = %v", ferr)
	}
}

// A damaged store is not waited on: the outcome is saved aside at once.
func TestFinishCorruptNotRetried(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	r := &storetest.Refusing{Provider: core.Store, Pass: 1, Fail: -1, Err: &store.CorruptError{Bucket: "invocations", Err: errors.New("bad")}}
	core.Store, core.FinishRetry = r, time.Minute
	_, err = core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	var re *invoke.RecordError
	if !errors.As(err, &re) || re.Pending == "" {
		t.Fatalf("err = %v", err)
	}
	if r.Updates() != 2 {
		t.Errorf("%d updates, want 2 (no retry)", r.Updates())
	}
}

// A refusal the store cannot record is one error that says nothing ran;
// an admission the store refuses is store_unavailable with no id, and
// its error is the store's (the message already says it).
func TestRecordRefused(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	refusal := &store.LockedError{Path: "/x/store.db"}
	core.Store = &storetest.Refusing{Provider: core.Store, Pass: 0, Fail: -1, Err: refusal}

	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonStoreUnavailable || out.InvocationID != "" || out.Message != refusal.Error() {
		t.Errorf("outcome %+v", out)
	}
	if !errors.Is(err, refusal) {
		t.Errorf("err = %v, want the store's refusal", err)
	}

	out, err = core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home, Task: "nosuch"})
	if out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonDenied || out.InvocationID == "" {
		t.Errorf("outcome %+v", out)
	}
	want := fmt.Sprintf("invocation %s: the outcome rejected/denied could not be recorded (%v); nothing ran", out.InvocationID, refusal)
	if err == nil || err.Error() != want {
		t.Errorf("message\n got %v\nwant %s", err, want)
	}
}

// A new home's first call keeps its outcome when the disk is full at its
// end: the reserve of space it is saved aside in was made before the
// command ran, and the save frees it. (The reserve used to be made only
// after a call that was recorded, so this outcome was lost as host_lost.)
func TestFirstCallOnAFullDisk(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	reserve := filepath.Join(core.DataDir, invoke.PendingDir, invoke.ReserveName)
	if _, err := os.Stat(reserve); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a new home already has a reserve: %v", err)
	}
	// The disk is full: a save fails unless the reserve's space was freed.
	had := false
	defer invoke.SetSaveHook(func() error {
		if _, err := os.Stat(reserve); err == nil {
			had = true
			return &os.PathError{Op: "write", Path: "pending", Err: syscall.ENOSPC}
		}
		if had {
			return nil
		}
		return &os.PathError{Op: "write", Path: "pending", Err: syscall.ENOSPC}
	})()
	full := &os.PathError{Op: "write", Path: filepath.Join(core.DataDir, "store.db"), Err: syscall.ENOSPC}
	healthy := core.Store
	core.Store, core.FinishRetry = &storetest.Refusing{Provider: healthy, Pass: 1, Fail: -1, Err: full}, 300*time.Millisecond
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	var re *invoke.RecordError
	if out.Outcome != invoke.Succeeded || !errors.As(err, &re) || re.Pending == "" {
		t.Fatalf("outcome %+v, err %v: want succeeded, saved aside", out, err)
	}
	core.Store = healthy
	if _, err := core.ResolveLost(); err != nil {
		t.Fatal(err)
	}
	invs := records(t, core)
	if len(invs) != 1 || invs[0].ID != out.InvocationID || invs[0].Outcome != invoke.Succeeded {
		t.Errorf("records %+v, want the call succeeded", invs)
	}
}

// A disk with no room for the reserve could not keep a call's outcome:
// the call is refused before anything is committed or run, with the
// disk's error (store_unavailable, which the CLI reports as exit 75).
func TestNoRoomForTheOutcome(t *testing.T) {
	core, home := setup(t)
	target, _, err := core.Resolve([]string{"h", "well-behaved"})
	if err != nil {
		t.Fatal(err)
	}
	full := &os.PathError{Op: "fallocate", Path: "reserve", Err: syscall.ENOSPC}
	defer invoke.SetReserveHook(func() error { return full })()
	out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	if out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonStoreUnavailable || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("outcome %+v, err %v: want rejected/store_unavailable with the disk's error", out, err)
	}
	if want := "there is no room on the disk to keep this call's outcome (fallocate reserve: no space left on device); nothing ran"; out.Message != want {
		t.Errorf("message %q, want %q", out.Message, want)
	}
	if invs := records(t, core); len(invs) != 0 {
		t.Errorf("records %+v, want none: nothing was admitted", invs)
	}
}
