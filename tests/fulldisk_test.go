package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/release/trust"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it when t ends. Mounting needs root: elsewhere the test is skipped with
// a message, except under CI=true as root, where it must run.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (mount -t tmpfs); run the tests as root, as CI does, to run it")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs as root under CI: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestFullDiskKeptFullByAnotherWriter runs 20 calls at once on a small
// tmpfs, and while they run another writer fills the disk and keeps it
// full (it takes whatever space is freed). Every call that exits 0 keeps
// its outcome: once the writer lets go, the next call records what was
// saved aside, and every one of the 20 records is succeeded — none
// host_lost, none open. Before, the one shared reserve kept only the first
// outcome: of 60 such calls 17 were recorded host_lost and 18 stayed open.
func TestFullDiskKeptFullByAnotherWriter(t *testing.T) {
	const calls = 20
	forEachHost(t, func(t *testing.T, h *testHost) {
		root := mountTmpfs(t, 24<<20)
		home := filepath.Join(root, "home")
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatal(err)
		}
		env := append(os.Environ(), "RUKH_HOME="+home)
		rukh := func(ctx context.Context, args ...string) (int, string, string) {
			cmd := exec.CommandContext(ctx, h.Rukh, args...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				return ee.ExitCode(), stdout.String(), stderr.String()
			case err != nil:
				return -1, stdout.String(), err.Error()
			}
			return 0, stdout.String(), stderr.String()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		// A command that says it started, then waits for the test to let
		// it go (a FIFO: every reader is released by one writer's close).
		syncDir := t.TempDir() // not on the tmpfs
		fifo := filepath.Join(syncDir, "go")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		ext := t.TempDir()
		if err := os.MkdirAll(filepath.Join(ext, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ext, "rukh-extension.json"), []byte(`{"schema": "rukh.extension/1", "package": "acme.hold", "version": "1.0.0", "publisher": "acme",
  "commands": [{"id": "run", "path": ["hold"], "summary": "Wait for the test", "execute": {"mapping": "passthrough", "program": "bin/hold"}}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ext, "bin", "hold"), []byte("#!/bin/sh\n: > \"$1/started-$2\"\nread x < \"$1/go\"\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		m, err := trust.BuildManifest(ext)
		if err != nil {
			t.Fatal(err)
		}
		if st, _, stderr := rukh(ctx, "ext", "install", ext, "--pin", m.Digest()); st != 0 {
			t.Fatalf("ext install: %d %s", st, stderr)
		}
		prof := filepath.Join(syncDir, "profile.json")
		if err := os.WriteFile(prof, []byte(fmt.Sprintf(`{"endpointNamespace": "full", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "owner"},
  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 60000, "maxConcurrent": %d, "enforcement": "host"}}}`, calls+4)), 0o600); err != nil {
			t.Fatal(err)
		}
		if st, _, stderr := rukh(ctx, "profile", "apply", "-f", prof); st != 0 {
			t.Fatalf("profile apply: %d %s", st, stderr)
		}
		h.serve(t, home)

		type result struct {
			status         int
			stdout, stderr string
		}
		results := make([]result, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, out, errOut := rukh(ctx, "hold", syncDir, fmt.Sprint(i))
				results[i] = result{st, out, errOut}
			}()
		}
		// Every call runs (or was refused: then it did not start).
		for end := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			started, _ := filepath.Glob(filepath.Join(syncDir, "started-*"))
			if len(started) == calls || time.Now().After(end) {
				if len(started) != calls {
					t.Fatalf("%d of %d calls started within a minute", len(started), calls)
				}
				break
			}
		}
		// Another writer fills the disk and keeps it full until told.
		filler := filepath.Join(root, "filler")
		stop := make(chan struct{})
		filled := make(chan struct{})
		writerDone := make(chan struct{})
		go func() {
			defer close(writerDone)
			chunk := make([]byte, 4096)
			once := false
			n := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				f, err := os.OpenFile(filepath.Join(root, fmt.Sprintf("filler-%d", n)), os.O_WRONLY|os.O_CREATE, 0o600)
				if err == nil {
					for {
						if _, err := f.Write(chunk); err != nil {
							break
						}
					}
					f.Close()
					n++
				}
				if !once {
					once = true
					close(filled)
				}
				// Take what is freed, in small pieces.
				time.Sleep(time.Millisecond)
			}
		}()
		<-filled
		// Let every call go: each command exits 0 on a full disk.
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		wg.Wait()
		close(stop)
		<-writerDone
		matches, _ := filepath.Glob(filler + "-*")
		for _, m := range matches {
			os.Remove(m)
		}
		ok := 0
		for i, r := range results {
			switch {
			case r.status == 0:
				ok++
			case r.status == 75 && strings.Contains(r.stderr, "no room on the disk to keep this call's outcome"):
				// refused before it ran: allowed, it did not start
			default:
				t.Errorf("call %d: exit %d, %q %q", i, r.status, r.stdout, r.stderr)
			}
		}
		// The next call records what was saved aside.
		if st, _, stderr := rukh(ctx, "ext", "list"); st != 0 {
			t.Fatalf("ext list once the disk has room: %d %s", st, stderr)
		}
		go func() {
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
		}()
		if st, _, stderr := rukh(ctx, "hold", syncDir, "after"); st != 0 {
			t.Fatalf("a call once the disk has room: %d %s", st, stderr)
		}
		st, out, stderr := rukh(ctx, "invocations", "list", "--json", "-n", "0")
		var invs []struct {
			Command, Outcome, Reason string
		}
		if st != 0 || json.Unmarshal([]byte(out), &invs) != nil {
			t.Fatalf("invocations list: %d %q %s", st, out, stderr)
		}
		succeeded := 0
		for _, inv := range invs {
			switch {
			case inv.Command != "acme.hold/run":
			case inv.Outcome == "succeeded":
				succeeded++
			default:
				t.Errorf("a record is %s/%s, want succeeded: none host_lost, none open", inv.Outcome, inv.Reason)
			}
		}
		if succeeded != ok+1 {
			t.Errorf("%d records succeeded, want %d (the %d calls that exited 0, and the one after)", succeeded, ok+1, ok)
		}
		if ok == 0 {
			t.Errorf("no call exited 0")
		}
	})
}
