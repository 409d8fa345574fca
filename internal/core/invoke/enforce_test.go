package invoke_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
	"golang.org/x/sys/unix"
)

// A restricted call that never starts its command (cancelled before it
// started, or the helper could not be started) leaves no descriptor
// behind: the helper's report pipe is closed with the rest.
func TestReportPipeClosedWhenNothingStarts(t *testing.T) {
	home := testhome.TempDir(t)
	rel := filepath.Join(home, "src")
	write(t, filepath.Join(rel, "bin", "ok"), "#!/bin/sh\n"+complete+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.enf","version":"1.0.0","publisher":"test","commands":[
		{"id":"ok","path":["ok"],"summary":"ok","execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":8,"enforcement":"restricted"}}}`)); err != nil {
		t.Fatal(err)
	}
	core := invoke.New(filepath.Join(home, "data"))
	target, _, err := core.Resolve([]string{"ok"})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name            string
		ctx             context.Context
		helper          string
		outcome, reason string
	}{
		{"cancelled before start", cancelled, "/bin/true", invoke.Cancelled, invoke.ReasonInterrupted},
		{"helper cannot start", context.Background(), filepath.Join(home, "no-such-helper"), invoke.ExecutionFailed, invoke.ReasonSpawnFailed},
	} {
		core.Sandbox = tc.helper
		before := pipes(t)
		for range 4 {
			out, err := core.Invoke(tc.ctx, target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home})
			if err != nil {
				t.Fatal(err)
			}
			if out.Outcome != tc.outcome || out.Reason != tc.reason {
				t.Fatalf("%s: outcome %s/%s (%s), want %s/%s", tc.name, out.Outcome, out.Reason, out.Message, tc.outcome, tc.reason)
			}
		}
		if after := pipes(t); after > before {
			t.Errorf("%s: %d pipe descriptors open before, %d after", tc.name, before, after)
		}
	}
}

// pipes counts this process's open pipe descriptors.
func pipes(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	n := 0
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n
}

// A strict call's granted path is opened to the command as admission
// resolved it: when a directory on the way is swapped for a symbolic link
// after admission, before the helper opens it (here by a wrapper that
// swaps, then execs the helper), the call is denied with the path in its
// record and nothing runs; the link's target is never opened. Without the
// swap the same call runs.
func TestStrictGrantSwappedForSymlink(t *testing.T) {
	if abi, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1); errno != 0 || abi < 4 {
		t.Skip("no Landlock ABI 4: strict is refused here")
	}
	home := testhome.TempDir(t)
	rel := filepath.Join(home, "src")
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.grant","version":"1.0.0","publisher":"test",
	  "commands":[{"id":"cat","path":["cat"],"summary":"s","inputs":[{"id":"dir","positional":0,"type":"string","required":true}],
	    "execute":{"mapping":"managed","program":"bin/cat","result":{"kind":"text"}},
	    "access":[{"action":"files.read","resource":"path:{dir}"}],"effects":{"class":"read"}}]}`, 0o644)
	srv := filepath.Join(home, "srv")
	grant := filepath.Join(srv, "public", "dir")
	// The command proves it ran by reading the granted file into its result.
	write(t, filepath.Join(rel, "bin", "cat"), "#!/bin/sh\n"+
		`printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"%s"}}\n' "$RUKH_IPC_TOKEN" "$(cat '`+grant+`/a.txt')" >&3`+"\n", 0o755)
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	write(t, filepath.Join(srv, "public", "dir", "a.txt"), "public", 0o644)
	write(t, filepath.Join(srv, "private", "a.txt"), "private", 0o644)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["test.*/*"],"deadlineMs":10000,"maxConcurrent":1,"enforcement":"strict",
		  "allow":[{"action":"files.read","resource":"path:` + srv + `/public/**"}]}}}`)); err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(home, "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		t.Fatal(err)
	}
	core := invoke.New(filepath.Join(home, "data"))
	target, _, err := core.Resolve([]string{"cat"})
	if err != nil {
		t.Fatal(err)
	}
	call := func() *invoke.Outcome {
		t.Helper()
		out, err := core.Invoke(context.Background(), target, &invoke.Request{Transport: invoke.TransportCLI, Dir: home,
			CLIInputs: map[string][]string{"dir": {grant}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	core.Sandbox = helper
	if out := call(); out.Outcome != invoke.Succeeded || out.Result == nil || !strings.Contains(fmt.Sprint(out.Result), "public") {
		t.Fatalf("plain grant: %s/%s (%s) %v; want it read", out.Outcome, out.Reason, out.Message, out.Result)
	}

	swap := filepath.Join(home, "swap-then-helper")
	write(t, swap, fmt.Sprintf("#!/bin/sh\nmv %q %q && ln -s %q %q || exit 1\nexec %q \"$@\"\n",
		grant, grant+".old", filepath.Join(srv, "private"), grant, helper), 0o755)
	core.Sandbox = swap
	out := call()
	if out.Outcome != invoke.Rejected || out.Reason != invoke.ReasonDenied ||
		out.Attempt.Action != "files.read" || out.Attempt.Resource != "path:"+grant ||
		!strings.Contains(out.Message, "leads through a symbolic link") || strings.Contains(fmt.Sprint(out.Result), "private") {
		t.Errorf("swapped grant: %s/%s (%s) attempt %+v, result %v; want rejected/denied on path:%s", out.Outcome, out.Reason, out.Message, out.Attempt, out.Result, grant)
	}
}

// rukh doctor's probe: each profile the helper can apply here is reported
// applied (strict's probe includes a grant, opened as calls' are).
func TestEnforceable(t *testing.T) {
	helper := filepath.Join(testhome.TempDir(t), "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		t.Fatal(err)
	}
	core := invoke.New(testhome.TempDir(t))
	core.Sandbox = helper
	got := core.Enforceable()
	want := []string{"host", "restricted"}
	if abi, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1); errno == 0 && abi >= 4 {
		want = append(want, "strict")
	}
	for _, p := range want {
		if !strings.HasPrefix(got[p], "applied") {
			t.Errorf("%s: %q, want applied", p, got[p])
		}
	}
}
