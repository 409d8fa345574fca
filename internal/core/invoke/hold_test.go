package invoke_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// A one-shot command line holds the store from its resolution until its
// call's begin record is committed (local.Host.HoldStore): meanwhile no
// other process opens it, and the command itself — with or without the
// helper's gate — runs with the store free, as does whatever follows a
// call the begin transaction refused.
func TestHoldStoreLetsGoBeforeTheCommand(t *testing.T) {
	home := testhome.TempDir(t)
	data := filepath.Join(home, "data")
	rel := filepath.Join(home, "src")
	mark := filepath.Join(home, "lock")
	// The command says whether it could take the store's lock itself.
	write(t, filepath.Join(rel, "bin", "probe"), "#!/bin/sh\nif flock -n -x '"+filepath.Join(data, "store.db.lock")+"' true; then echo free >> '"+mark+"'; else echo held >> '"+mark+"'; fi\n"+complete+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.hold","version":"1.0.0","publisher":"test","commands":[
		{"id":"probe","path":["probe"],"summary":"probe","execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, data, rel)
	helper := filepath.Join(home, "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		t.Fatal(err)
	}
	apply := func(task string) {
		t.Helper()
		if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
			"tasks":{"owner":` + task + `}}`)); err != nil {
			t.Fatal(err)
		}
	}
	locked := func() bool {
		t.Helper()
		s, err := store.Open(filepath.Join(data, "store.db"), store.Options{Timeout: 50 * time.Millisecond, ReadOnly: true})
		var le *store.LockedError
		if errors.As(err, &le) {
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		return false
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
