package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/cli"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/testhome"
)

const helperEnv = "RUKH_RECORD_HELPER"

// TestRecordHelper is the `rukh ok` process of TestUnrecordedOutcome: the
// real CLI over a store that refuses writes as RUKH_RECORD_HELPER says.
func TestRecordHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("the helper process of TestUnrecordedOutcome")
	}
	p, err := paths.Resolve("rukh", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	core := invoke.New(p.Data)
	r := &storetest.Refusing{Provider: core.Store, Pass: 1, Fail: -1, Err: &store.LockedError{Path: p.Store()}}
	switch mode {
	case "final-3":
		r.Fail = 3
	case "admission":
		r.Pass = 0
	}
	core.Store, core.FinishRetry = r, 300*time.Millisecond
	os.Exit(runCLI(core.DataDir, local.NewCore(core), os.Stdout, os.Stderr))
}

func runCLI(data string, host *local.Host, stdout, stderr *os.File) int {
	f := &cli.Factory{Name: "rukh", IO: cli.IOStreams{In: strings.NewReader(""), Out: stdout, ErrOut: stderr},
		Paths: func() (paths.Paths, error) { return paths.Resolve("rukh", os.Getenv) }, Dir: data, Env: os.Environ(),
		NewHost: func() (*local.Host, error) { return host, nil }}
	return cli.Execute(context.Background(), f, []string{"ok"})
}

// TestUnrecordedOutcome runs `rukh ok` as a real process over a store that
// refuses the final write (a few times; always; always, with nowhere to
// save the outcome aside) or the admission, and checks what the person
// sees — the result, the exit status, one message that says what became
// of the outcome — and what the records show once the process is gone
// and the next call has been admitted.
func TestUnrecordedOutcome(t *testing.T) {
	cases := []struct {
		name, mode   string
		blockPending bool
		status       int
		stdout       string
		stderr       func(id, data string, pendingErr error) string
		first        string // the first call's record after the next call
	}{
		{"final write refused 3 times", "final-3", false, 0, "ok\n",
			func(string, string, error) string { return "" }, "succeeded"},
		{"final write refused always", "final-always", false, 0, "ok\n",
			func(id, data string, _ error) string {
				return fmt.Sprintf("rukh: invocation %s: the outcome succeeded could not be written to the store (%v); it is saved in %s and the next call records it\n",
					id, &store.LockedError{Path: filepath.Join(data, "store.db")}, filepath.Join(data, invoke.PendingDir, id+".json"))
			}, "succeeded"},
		{"final write refused always, nowhere to save it", "final-always", true, 0, "ok\n",
			func(id, data string, pendingErr error) string {
				return fmt.Sprintf("rukh: invocation %s: the outcome succeeded could not be recorded (%v), nor saved aside (%v); its record will show execution_failed/host_lost\n",
					id, &store.LockedError{Path: filepath.Join(data, "store.db")}, pendingErr)
			}, "execution_failed/host_lost"},
		{"admission refused", "admission", false, exitcode.TempFail, "",
			func(_, data string, _ error) string {
				return fmt.Sprintf("rukh: %v\n", &store.LockedError{Path: filepath.Join(data, "store.db")})
			}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := testhome.TempDir(t)
			data := filepath.Join(home, "data")
			rel := filepath.Join(home, "src")
			testhome.WriteFiles(t, rel, map[string]string{
				"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.ok","version":"1.0.0","publisher":"test",
 "commands":[{"id":"ok","path":["ok"],"summary":"say ok","execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},"effects":{"class":"none"}}]}`,
				"bin/ok": "#!/bin/sh\nprintf '{\"type\":\"complete\",\"token\":\"%s\",\"status\":\"succeeded\",\"commandResult\":{\"kind\":\"text\",\"text\":\"ok\\\\n\"}}\\n' \"$RUKH_IPC_TOKEN\" >&3\n",
			})
			testhome.Apply(t, testhome.InstallPinned(t, data, rel), `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
 "tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":8,"enforcement":"host"}}}`)
			var pendingErr error
			if tc.blockPending {
				block := filepath.Join(data, invoke.PendingDir)
				if err := os.WriteFile(block, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				pendingErr = os.MkdirAll(block, 0o700) // the error the host meets
			}

			cmd := exec.Command(os.Args[0], "-test.run=^TestRecordHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode, "RUKH_HOME="+home)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}

			core := invoke.New(data)
			invs, err := core.Invocations(0)
			if err != nil {
				t.Fatal(err)
			}
			id := ""
			if len(invs) > 0 {
				id = invs[0].ID
			}
			if status != tc.status || stdout.String() != tc.stdout {
				t.Errorf("exit status %d, stdout %q; want %d, %q", status, &stdout, tc.status, tc.stdout)
			}
			if want := tc.stderr(id, data, pendingErr); stderr.String() != want {
				t.Errorf("stderr\n got %q\nwant %q", &stderr, want)
			}
			if tc.first == "" {
				if len(invs) != 0 {
					t.Errorf("records %+v, want none", invs)
				}
				return
			}
			if len(invs) != 1 {
				t.Fatalf("%d records, want 1", len(invs))
			}

			// The next call, on a store that works: the first call's record
			// shows what the message said, and the outcome is recorded once.
			next, err := os.CreateTemp(home, "stdout")
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			if got := runCLI(data, local.New(data), next, next); got != 0 {
				t.Errorf("the next call exited %d", got)
			}
			invs, err = core.Invocations(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(invs) != 2 || invs[1].ID != id {
				t.Fatalf("records %+v", invs)
			}
			got := invs[1].Outcome
			if invs[1].Reason != "" {
				got += "/" + invs[1].Reason
			}
			if got != tc.first {
				t.Errorf("the first call's record shows %s, want %s", got, tc.first)
			}
			if invs[0].Outcome != invoke.Succeeded {
				t.Errorf("the next call's record: %+v", invs[0])
			}
			if left, _ := filepath.Glob(filepath.Join(data, invoke.PendingDir, "*.json")); len(left) != 0 {
				t.Errorf("left aside: %v", left)
			}
		})
	}
}
