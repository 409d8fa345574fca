package invoke_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// A one-shot command line holds the store from its resolution until its
// call's begin record is committed (local.Host.HoldStore): meanwhile no
// other process opens it, and the command itself — with or without the
// helper's gate — runs with the store free, as does whatever follows a
// call the begin transaction refused.
func TestHoldStoreLetsGoBeforeTheCommand(t *testing.T) {
	home := testhome.TempDir(t)
	mark := filepath.Join(home, "lock")
	lock := filepath.Join(home, "data", "store.db.lock")
	// The command says whether it could take the store's lock itself.
	data, helper, apply := oneScript(t, home, "test.hold", "probe",
		"if flock -n -x '"+lock+"' true; then echo free >> '"+mark+"'; else echo held >> '"+mark+"'; fi")
	// locked asks without waiting: a probe that waited for the lock (as
	// store.Open with a timeout does) would, once it gave up, still take
	// the lock for an instant when the hold lets go — just when the
	// command looks.
	locked := func() bool {
		t.Helper()
		f, err := os.Open(lock)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		switch err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
		case err == nil:
			return false
		case errors.Is(err, unix.EWOULDBLOCK):
			return true
		default:
			t.Fatal(err)
			return false
		}
	}
	for _, c := range []struct {
		name, sandbox, task, outcome string // sandbox "": none beside the test
		runs                         bool
	}{
		{"gated", helper, `{"commands":["*/*"],"deadlineMs":10000,"maxConcurrent":8,"enforcement":"host"}`, invoke.Succeeded, true},
		{"not gated", "", `{"commands":["*/*"],"deadlineMs":10000,"maxConcurrent":8,"enforcement":"host"}`, invoke.Succeeded, true},
		{"refused at its record", helper, `{"commands":["*/*"],"deadlineMs":10000,"maxConcurrent":8,"enforcement":"restricted","requireApproval":["none"]}`, invoke.Rejected, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			apply(c.task)
			os.Remove(mark)
			host := local.New(data)
			host.Core().Sandbox = c.sandbox
			release := host.HoldStore()
			defer release()
			target, _, err := host.Core().Resolve([]string{"probe"})
			if err != nil {
				t.Fatal(err)
			}
			if !locked() {
				t.Fatal("after the resolution, the store is free: HoldStore held nothing")
			}
			out, err := host.Core().Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
			if err != nil || out.Outcome != c.outcome {
				t.Fatalf("outcome %+v (%v); want %s", out, err, c.outcome)
			}
			got, _ := os.ReadFile(mark)
			if want := map[bool]string{true: "free\n", false: ""}[c.runs]; string(got) != want {
				t.Fatalf("the command found the store %q; want %q", strings.TrimSpace(string(got)), strings.TrimSpace(want))
			}
			if locked() {
				t.Fatal("the store is still held once the call ended")
			}
		})
	}
}
