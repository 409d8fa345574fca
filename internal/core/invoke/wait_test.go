package invoke_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// waitHome is a store with fabricated records: running (this process is
// their host), stopped (their host is gone: a start time that is not this
// process's), finished, in two tasks.
type waitHome struct {
	core *invoke.Core
	ids  map[string]string // name → id
}

func newWaitHome(t *testing.T) *waitHome {
	t.Helper()
	core := invoke.New(testhome.TempDir(t))
	h := &waitHome{core: core, ids: map[string]string{}}
	self := selfStartForTest(t)
	for i, r := range []struct {
		name, task string
		start      uint64
		outcome    string
	}{
		{"running", "agent", self, ""},
		{"stopped", "agent", self + 1, ""},
		{"done", "agent", self, invoke.Succeeded},
		{"failed", "agent", self, invoke.CommandFailed},
		{"other", "other", self, ""},
		{"otherdone", "other", self, invoke.Succeeded},
	} {
		id := fmt.Sprintf("%032x", i)
		if r.name == "other" {
			id = "ab" + id[2:] // shares no 8-character prefix with the others
		}
		h.ids[r.name] = id
		inv := &store.Invocation{ID: id, Identity: "t.x/" + r.name, Task: r.task, Transport: "mcp",
			PID: os.Getpid(), PIDStart: r.start, StartedAt: time.Now()}
		err := core.Store.Update(func(tx *store.Tx) error {
			if err := tx.BeginInvocation(inv, 100, func(*store.Invocation) bool { return true }, time.Now()); err != nil {
				return err
			}
			if r.outcome != "" {
				_, err := tx.FinishInvocation(id, r.outcome, "", 0, "", time.Now())
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// selfStartForTest reads this process's start time as the host does.
func selfStartForTest(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err) // the host's liveness check needs it too
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var n uint64
	for _, c := range fields[19] {
		n = n*10 + uint64(c-'0')
	}
	return n
}

func TestWaitLooksOnce(t *testing.T) {
	h := newWaitHome(t)
	id := h.ids
	for _, tc := range []struct {
		name       string
		task       string
		ids        []string
		entries    []invoke.WaitEntry // Error compared by prefix
		all, timed bool
		terminal   []string
		pending    []string
		stopped    []string
		unknown    []string
	}{
		{name: "every status", task: "agent",
			ids: []string{id["done"], id["running"], "nope", id["stopped"], id["failed"][:10], "ffffffff"},
			entries: []invoke.WaitEntry{
				{ID: id["done"], InvocationID: id["done"], Command: "t.x/done", Status: invoke.WaitTerminal, Outcome: invoke.Succeeded},
				{ID: id["running"], InvocationID: id["running"], Command: "t.x/running", Status: invoke.WaitPending},
				{ID: "nope", Status: invoke.WaitUnknown, Error: `"nope" is not an invocation id`},
				{ID: id["stopped"], InvocationID: id["stopped"], Command: "t.x/stopped", Status: invoke.WaitStopped},
				{ID: id["failed"][:10], Status: invoke.WaitUnknown, Error: "4 invocations start with"},
				{ID: "ffffffff", Status: invoke.WaitUnknown, Error: "no invocation ffffffff"},
			},
			timed: true, terminal: []string{id["done"]}, pending: []string{id["running"]}, stopped: []string{id["stopped"]},
			unknown: []string{"nope", id["failed"][:10], "ffffffff"}},
		{name: "another task's records are unknown, like ids that do not exist", task: "agent",
			ids: []string{id["other"], id["otherdone"], strings.ToUpper(id["done"])},
			entries: []invoke.WaitEntry{
				{ID: id["other"], Status: invoke.WaitUnknown, Error: "no invocation " + id["other"]},
				{ID: id["otherdone"], Status: invoke.WaitUnknown, Error: "no invocation " + id["otherdone"]},
				{ID: id["done"], InvocationID: id["done"], Command: "t.x/done", Status: invoke.WaitTerminal, Outcome: invoke.Succeeded},
			},
			terminal: []string{id["done"]}, unknown: []string{id["other"], id["otherdone"]}},
		{name: "the CLI sees every task", task: "",
			ids: []string{id["otherdone"], id["done"]},
			entries: []invoke.WaitEntry{
				{ID: id["otherdone"], InvocationID: id["otherdone"], Command: "t.x/otherdone", Status: invoke.WaitTerminal, Outcome: invoke.Succeeded},
				{ID: id["done"], InvocationID: id["done"], Command: "t.x/done", Status: invoke.WaitTerminal, Outcome: invoke.Succeeded},
			},
			all: true, terminal: []string{id["otherdone"], id["done"]}},
		{name: "a unique prefix", task: "agent",
			ids: []string{id["other"][:8]},
			entries: []invoke.WaitEntry{
				{ID: id["other"][:8], Status: invoke.WaitUnknown, Error: "no invocation"},
			},
			unknown: []string{id["other"][:8]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.core.Wait(context.Background(), tc.task, tc.ids, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Entries) != len(tc.entries) {
				t.Fatalf("%d entries, want %d: %+v", len(res.Entries), len(tc.entries), res.Entries)
			}
			for i, want := range tc.entries {
				got := res.Entries[i]
				if !strings.HasPrefix(got.Error, want.Error) || (want.Error == "") != (got.Error == "") {
					t.Errorf("entry %d: error %q, want %q…", i, got.Error, want.Error)
				}
				got.Error, want.Error = "", ""
				if got != want {
					t.Errorf("entry %d:\n got %+v\nwant %+v", i, got, want)
				}
			}
			if res.AllTerminal != tc.all || res.TimedOut != tc.timed {
				t.Errorf("allTerminal %v timedOut %v, want %v %v", res.AllTerminal, res.TimedOut, tc.all, tc.timed)
			}
			for _, l := range []struct {
				name      string
				got, want []string
			}{{"terminal", res.Terminal, tc.terminal}, {"pending", res.Pending, tc.pending}, {"stopped", res.Stopped, tc.stopped}, {"unknown", res.Unknown, tc.unknown}} {
				if len(l.got) != 0 || len(l.want) != 0 {
					if !reflect.DeepEqual(l.got, l.want) {
						t.Errorf("%s: %v, want %v", l.name, l.got, l.want)
					}
				}
			}
			// The partition is exhaustive: every id is in exactly one list.
			n := len(res.Terminal) + len(res.Pending) + len(res.Stopped) + len(res.Unknown)
			if n != len(tc.ids) {
				t.Errorf("the lists hold %d ids, %d were given", n, len(tc.ids))
			}
		})
	}
}

// A wait whose ids are all decided returns at once, whatever its window;
// one on a running id returns as soon as it finishes, with its outcome;
// the records are exactly as before the waits.
func TestWaitUntilTerminal(t *testing.T) {
	h := newWaitHome(t)
	before := records(t, h.core)
	res, err := h.core.Wait(context.Background(), "agent", []string{h.ids["done"], h.ids["failed"]}, invoke.MaxWaitTimeout)
	if err != nil || !res.AllTerminal || res.TimedOut {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := records(t, h.core); !reflect.DeepEqual(got, before) {
		t.Errorf("the wait changed the records")
	}

	done := make(chan *invoke.WaitResult, 1)
	go func() {
		res, err := h.core.Wait(context.Background(), "agent", []string{h.ids["running"], h.ids["done"]}, invoke.MaxWaitTimeout)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	if err := h.core.Store.Update(func(tx *store.Tx) error {
		_, err := tx.FinishInvocation(h.ids["running"], invoke.CommandFailed, "", 3, "", time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	res = <-done
	if !res.AllTerminal || res.TimedOut || res.Entries[0].Outcome != invoke.CommandFailed || len(res.Terminal) != 2 {
		t.Errorf("%+v", res)
	}
}

// A wait whose window closes reports what it saw: not an error. One whose
// caller goes away returns the context's error and leaves the record as
// it was.
func TestWaitExpiresAndCancels(t *testing.T) {
	h := newWaitHome(t)
	res, err := h.core.Wait(context.Background(), "agent", []string{h.ids["running"], h.ids["done"]}, time.Millisecond)
	if err != nil || !res.TimedOut || res.AllTerminal || !reflect.DeepEqual(res.Pending, []string{h.ids["running"]}) {
		t.Fatalf("%+v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := records(t, h.core)
	if _, err := h.core.Wait(ctx, "agent", []string{h.ids["running"]}, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if got := records(t, h.core); !reflect.DeepEqual(got, before) {
		t.Errorf("the wait changed the records")
	}
	// A stopped id cannot change by waiting: the wait does not spend its
	// window on it.
	res, err = h.core.Wait(context.Background(), "agent", []string{h.ids["stopped"]}, invoke.MaxWaitTimeout)
	if err != nil || res.TimedOut || res.AllTerminal || len(res.Stopped) != 1 {
		t.Errorf("%+v, %v", res, err)
	}
}

func TestWaitRefusals(t *testing.T) {
	h := newWaitHome(t)
	many := make([]string, invoke.MaxWaitIDs+1)
	for i := range many {
		many[i] = fmt.Sprintf("%032x", i+1000)
	}
	for _, tc := range []struct {
		ids     []string
		timeout time.Duration
		want    string
	}{
		{nil, 0, "give at least one invocation id"},
		{many, 0, "65 invocation ids given; one wait takes at most 64"},
		{many[:invoke.MaxWaitIDs], -time.Second, "negative"},
		{many[:1], invoke.MaxWaitTimeout + time.Second, "longer than the maximum, 10m0s"},
		{[]string{h.ids["done"], h.ids["running"], strings.ToUpper(h.ids["done"])}, 0, "invocation id " + h.ids["done"] + " is given more than once"},
	} {
		_, err := h.core.Wait(context.Background(), "agent", tc.ids, tc.timeout)
		var ue *invoke.WaitUsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d ids, %s: %v, want a WaitUsageError saying %q", len(tc.ids), tc.timeout, err, tc.want)
		}
	}
	// At the bounds: accepted.
	if _, err := h.core.Wait(context.Background(), "agent", many[:invoke.MaxWaitIDs], 0); err != nil {
		t.Errorf("%d ids: %v", invoke.MaxWaitIDs, err)
	}
}
