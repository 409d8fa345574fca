package invoke_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// gateHang bounds the waits here: a hang guard, never a budget.
const gateHang = 15 * time.Second

// With the helper installed, a call's helper starts while its begin
// record commits and forks the command only once the record is durable
// (its gate, invariant I10's "recorded before it runs"): while another
// process holds the store, the helper waits at its gate and the command
// has not run; once the store is free, the record commits and the call
// runs. A call the begin transaction refuses (here: it asks for the
// owner's approval) never runs its command, and leaves no process and no
// descriptor behind.
func TestGatedStart(t *testing.T) {
	home := testhome.TempDir(t)
	mark := filepath.Join(home, "ran")
	data, helper, apply := oneScript(t, home, "test.gate", "mark", "echo ran >> '"+mark+"'")
	resolve := func(core *invoke.Core) *invoke.Target {
		target, _, err := core.Resolve([]string{"mark"})
		if err != nil {
			t.Fatal(err)
		}
		return target
	}
	call := func(core *invoke.Core, target *invoke.Target) (*invoke.Outcome, error) {
		return core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
	}
	ran := func() int {
		b, err := os.ReadFile(mark)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "ran")
	}

	t.Run("held until the record is durable", func(t *testing.T) {
		apply(`{"commands":["*/*"],"deadlineMs":10000,"maxConcurrent":8,"enforcement":"host"}`)
		core := invoke.New(data)
		core.Sandbox = helper
		target := resolve(core)
		lock := holdStore(t, data)
		type result struct {
			out *invoke.Outcome
			err error
		}
		done := make(chan result, 1)
		go func() { out, err := call(core, target); done <- result{out, err} }()
		pid := helperAtGate(t, helper)
		if n := ran(); n != 0 {
			t.Fatalf("the command ran %d times while its begin record could not commit", n)
		}
		lock.Close() // the store is free: the record commits, the gate opens
		var r result
		select {
		case r = <-done:
		case <-time.After(gateHang):
			t.Fatalf("the call did not end within %s of the store being free", gateHang)
		}
		if r.err != nil || r.out.Outcome != invoke.Succeeded || ran() != 1 {
			t.Fatalf("outcome %v (%v), ran %d times; want succeeded, once (helper %d)", r.out, r.err, ran(), pid)
		}
	})

	t.Run("refused at its record", func(t *testing.T) {
		apply(`{"commands":["*/*"],"deadlineMs":10000,"maxConcurrent":8,"enforcement":"restricted","requireApproval":["none"]}`)
		core := invoke.New(data)
		core.Sandbox = helper
		target := resolve(core)
		before, marks := pipes(t), ran()
		out, err := call(core, target)
		if err != nil || out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonApprovalRequired {
			t.Fatalf("outcome %+v (%v); want rejected/approval_required", out, err)
		}
		if n := ran(); n != marks {
			t.Errorf("the refused call ran its command")
		}
		if kids := childrenOf(t, os.Getpid()); kids != "" {
			t.Errorf("the refused call left processes behind: %s", kids)
		}
		if after := pipes(t); after > before {
			t.Errorf("%d pipe descriptors open before, %d after", before, after)
		}
	})
}

// oneScript installs, in home, a release of package pkg with one managed
// command id (route: id) that runs script and then completes, and builds
// the helper. It returns the data directory, the helper's path, and a
// func that applies a profile whose one task (CLI and MCP) is task.
func oneScript(t *testing.T, home, pkg, id, script string) (data, helper string, apply func(task string)) {
	t.Helper()
	rel := filepath.Join(home, "src")
	write(t, filepath.Join(rel, "bin", id), "#!/bin/sh\n"+script+"\n"+complete+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"`+pkg+`","version":"1.0.0","publisher":"test","commands":[
		{"id":"`+id+`","path":["`+id+`"],"summary":"`+id+`","execute":{"mapping":"managed","program":"bin/`+id+`","result":{"kind":"text"}},"effects":{"class":"none"}}]}`, 0o644)
	data = filepath.Join(home, "data")
	a := testhome.InstallPinned(t, data, rel)
	helper = filepath.Join(home, "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		t.Fatal(err)
	}
	return data, helper, func(task string) {
		t.Helper()
		if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
			"tasks":{"owner":` + task + `}}`)); err != nil {
			t.Fatal(err)
		}
	}
}

// holdStore takes the store's lock of data exclusively, as an owner
// command in another process would, and returns it: closing it lets go.
func holdStore(t *testing.T, data string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(data, "store.db.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// helperAtGate waits until a child of this process running helper blocks
// in read(2) (its gate), having forked nothing, and returns its pid. It
// polls /proc for at most gateHang: no event says a process blocks.
func helperAtGate(t *testing.T, helper string) int {
	t.Helper()
	deadline := time.Now().Add(gateHang)
	for {
		for _, f := range strings.Fields(childrenOf(t, os.Getpid())) {
			pid, _ := strconv.Atoi(f)
			exe, _ := os.Readlink("/proc/" + f + "/exe")
			sc, _ := os.ReadFile("/proc/" + f + "/syscall")
			// read(2) is system call 0 on x86-64, 63 on arm64.
			if call := strings.Fields(string(sc)); exe == helper && len(call) > 0 && (call[0] == "0" || call[0] == "63") {
				if kids := childrenOf(t, pid); kids != "" {
					t.Fatalf("the helper forked %s before its gate opened", kids)
				}
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no helper blocked at its gate within %s", gateHang)
		}
		time.Sleep(time.Millisecond)
	}
}

// childrenOf is what /proc lists as the children of every thread of pid.
func childrenOf(t *testing.T, pid int) string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		all = append(all, strings.Fields(string(b))...)
	}
	return strings.Join(all, " ")
}
