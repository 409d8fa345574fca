package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/internal/testpty"
)

// approvalRelease has one destructive command, `drop TARGET`: the probe
// appends a line to TARGET (so the test counts runs) and reports the
// effect {deleted, table:TARGET}.
const approvalRelease = `{"schema":"rukh.extension/2","package":"t.guarded","version":"1.0.0","publisher":"t","commands":[
 {"id":"drop","path":["drop"],"summary":"Drop a table",
  "inputs":[{"id":"arg","positional":0,"type":"string","required":true},{"id":"what","type":"string","enum":["drop"],"default":"drop"}],
  "execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},
  "machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"destructive"}}]}`

// approvalProfile: the owner's CLI task runs drop freely; the agent task
// (MCP) and the ops task keep destructive calls for the owner's approval,
// ops with a 1 s lifetime.
const approvalProfile = `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["t.guarded/*"],"task":"agent"},
 "tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"},
          "agent":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"restricted","requireApproval":["destructive"]},
          "ops":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"restricted","requireApproval":["destructive"],"approvalTtlMs":1000}}}`

type approvalHome struct {
	rukh, home, dir string
	env             []string
}

func newApprovalHome(t *testing.T, rukh string) *approvalHome {
	t.Helper()
	h := &approvalHome{rukh: rukh, dir: testhome.TempDir(t)}
	rel := probeRelease(t, h.dir, approvalRelease)
	h.home = filepath.Join(h.dir, "home")
	a := testhome.InstallPinned(t, filepath.Join(h.home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(approvalProfile)); err != nil {
		t.Fatal(err)
	}
	h.env = append(os.Environ(), "RUKH_HOME="+h.home)
	return h
}

// call makes one MCP call of drop with args through `rukh mcp [--task]`
// as a client named client, and returns the envelope and isError.
func (h *approvalHome) call(t *testing.T, client, task string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	argv := []string{"mcp"}
	if task != "" {
		argv = append(argv, "--task", task)
	}
	cmd := exec.Command(h.rukh, argv...)
	cmd.Env = h.env
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: client, Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	for _, tool := range tools.Tools {
		if strings.Contains(tool.Name, "approve") {
			t.Errorf("a tool named %s: approval must never be a tool", tool.Name)
		}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tools.Tools[0].Name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var env map[string]any
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	return env, res.IsError
}

// rukhCLI runs rukh ARGS with stdin from stdin (nil: /dev/null) and extra
// environment, and returns stdout, stderr and the exit status.
func (h *approvalHome) rukhCLI(t *testing.T, stdin *os.File, extraEnv []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(h.rukh, args...)
	cmd.Env = append(append([]string(nil), h.env...), extraEnv...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), status
}

// approveAtTerminal runs `rukh approve ID` on a new pseudo-terminal (its
// controlling terminal and stdin), types answer, and returns what the
// terminal showed, stdout and the exit status.
func (h *approvalHome) approveAtTerminal(t *testing.T, id, answer string) (string, string, int) {
	t.Helper()
	master, slave := testpty.Open(t)
	defer master.Close()
	cmd := exec.Command(h.rukh, "approve", id)
	cmd.Env = h.env
	cmd.Stdin = slave
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	if _, err := master.WriteString(answer + "\n"); err != nil {
		t.Fatal(err)
	}
	shown := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // EIO once the terminal's last user is gone
		shown <- string(b)
	}()
	err := cmd.Wait()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return <-shown, out.String() + errb.String(), status
}

func runs(t *testing.T, target string) int {
	t.Helper()
	b, err := os.ReadFile(target)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "dropped\n")
}

// TestApproval is issue 9's approval through a trusted path, on both
// hosts: an agent's destructive call is refused rejected/approval_required
// with an approval id and runs nothing; only a person at a terminal can
// approve it; the approval is bound to the command, the exact inputs and
// the task, single-use and expiring; the agent's retry then runs once, and
// every refusal is recorded with what it refused.
func TestApproval(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newApprovalHome(t, host.Rukh)
		host.serve(t, h.home)
		target := filepath.Join(h.dir, "orders")
		args := map[string]any{"arg": target}

		env, isErr := h.call(t, "agent", "", args)
		id, _ := env["approvalId"].(string)
		if !isErr || env["outcome"] != "rejected" || env["reason"] != "approval_required" || len(id) != 32 {
			t.Fatalf("first call: isError %v, envelope %v; want rejected/approval_required with an approval id", isErr, env)
		}
		if n := runs(t, target); n != 0 {
			t.Fatalf("the refused call ran %d times", n)
		}
		// The refusal is recorded with the approval it asks for.
		show, _, _ := h.rukhCLI(t, nil, nil, "invocations", "show", env["invocationId"].(string), "--json")
		var rec map[string]any
		json.Unmarshal([]byte(show), &rec)
		if rec["reason"] != "approval_required" || rec["approvalId"] != id {
			t.Errorf("record of the refusal: %s", show)
		}

		// An agent that retries before the owner answers gets the same id;
		// a client calling itself the owner changes nothing; an argument
		// naming the approval is an unknown input, not a key.
		if env, _ := h.call(t, "rukh-owner", "", args); env["approvalId"] != id || env["reason"] != "approval_required" {
			t.Errorf("retry before the answer: %v; want the same approval %s", env, id)
		}
		for _, field := range []string{"approvalId", "task", "owner"} {
			if env, _ := h.call(t, "agent", "", map[string]any{"arg": target, field: id}); env["reason"] != "invalid_input" {
				t.Errorf("an argument %q: %v; want invalid_input", field, env)
			}
		}

		// No terminal, or from inside a command: refused, nothing approved.
		if _, stderr, status := h.rukhCLI(t, nil, nil, "approve", id); status != 77 || !strings.Contains(stderr, "not one") {
			t.Errorf("approve without a terminal: exit %d, %q; want 77", status, stderr)
		}
		if _, stderr, status := h.rukhCLI(t, nil, []string{"RUKH_INVOCATION_ID=0123456789abcdef0123456789abcdef"}, "approve", id); status != 77 || !strings.Contains(stderr, "inside a command") {
			t.Errorf("approve inside a command: exit %d, %q; want 77", status, stderr)
		}
		// At a terminal, anything but yes approves nothing.
		if shown, out, status := h.approveAtTerminal(t, id, "no"); status != 1 || !strings.Contains(out, "not approved") || !strings.Contains(shown, target) {
			t.Errorf("answer no: exit %d, %q, terminal showed %q", status, out, shown)
		}
		if env, _ := h.call(t, "agent", "", args); env["reason"] != "approval_required" || env["approvalId"] != id {
			t.Errorf("after a no: %v", env)
		}
		shown, out, status := h.approveAtTerminal(t, id, "yes")
		if status != 0 || !strings.Contains(out, "approved "+id) {
			t.Fatalf("approve: exit %d, %q; terminal showed %q", status, out, shown)
		}
		for _, want := range []string{"t.guarded/drop", "destructive", `"arg":{"value":"` + target + `","explicit":true}`, "agent", "expires"} {
			if !strings.Contains(shown, want) {
				t.Errorf("the terminal did not show %q:\n%s", want, shown)
			}
		}
		if _, out, status := h.approveAtTerminal(t, id, "yes"); status != 1 || !strings.Contains(out, "already approved") {
			t.Errorf("approving twice: exit %d, %q", status, out)
		}

		// Bound to the inputs and the task.
		other := filepath.Join(h.dir, "customers")
		if env, _ := h.call(t, "agent", "", map[string]any{"arg": other}); env["reason"] != "approval_required" || env["approvalId"] == id {
			t.Errorf("other inputs: %v; want a new approval", env)
		}
		opsEnv, _ := h.call(t, "agent", "ops", args)
		if opsEnv["reason"] != "approval_required" || opsEnv["approvalId"] == id {
			t.Errorf("another task: %v; want a new approval", opsEnv)
		}
		if runs(t, target) != 0 || runs(t, other) != 0 {
			t.Fatal("an unapproved call ran")
		}

		// The approved call runs once, with its effects in the envelope
		// and in the record, which names the approval.
		env, isErr = h.call(t, "agent", "", args)
		if isErr || env["outcome"] != "succeeded" {
			t.Fatalf("the approved call: isError %v, %v", isErr, env)
		}
		effects, _ := json.Marshal(env["effects"])
		if string(effects) != `[{"kind":"deleted","ref":"table:`+target+`"}]` {
			t.Errorf("effects in the envelope: %s", effects)
		}
		show, _, _ = h.rukhCLI(t, nil, nil, "invocations", "show", env["invocationId"].(string), "--json")
		rec = nil
		json.Unmarshal([]byte(show), &rec)
		recEffects, _ := json.Marshal(rec["effects"])
		if rec["approvalId"] != id || string(recEffects) != string(effects) || rec["enforcement"] != "restricted" {
			t.Errorf("record of the approved call: %s", show)
		}
		// Single use: the same call again asks anew and runs nothing.
		if env, _ := h.call(t, "agent", "", args); env["reason"] != "approval_required" || env["approvalId"] == id {
			t.Errorf("the approval reused: %v", env)
		}
		if n := runs(t, target); n != 1 {
			t.Errorf("the approved call ran %d times, want 1", n)
		}

		// Expired (ops approvals last 1 s): it can no longer be approved.
		opsID := opsEnv["approvalId"].(string)
		waitExpired(t, h, opsID)
		if _, out, status := h.approveAtTerminal(t, opsID, "yes"); status != 1 || !strings.Contains(out, "expired") {
			t.Errorf("approving an expired approval: exit %d, %q", status, out)
		}

		// The list shows what waits and, with --all, what was.
		list, _, _ := h.rukhCLI(t, nil, nil, "approve", "--list", "--all", "--json")
		var rows []map[string]any
		json.Unmarshal([]byte(list), &rows)
		statuses := map[string]string{}
		for _, r := range rows {
			statuses[r["id"].(string)] = r["status"].(string)
		}
		if statuses[id] != "used" || statuses[opsID] != "expired" {
			t.Errorf("approve --list --all: %s", list)
		}
		// The owner's own task needs no approval.
		if _, stderr, status := h.rukhCLI(t, nil, nil, "drop", target); status != 0 || runs(t, target) != 2 {
			t.Errorf("the owner's CLI call: exit %d, %q", status, stderr)
		}
	})
}

// waitExpired waits (bounded by steps, not a clock threshold) until the
// approval's status is expired.
func waitExpired(t *testing.T, h *approvalHome, id string) {
	t.Helper()
	for range 100 {
		list, _, _ := h.rukhCLI(t, nil, nil, "approve", "--list", "--all", "--json")
		var rows []map[string]any
		json.Unmarshal([]byte(list), &rows)
		for _, r := range rows {
			if r["id"] == id && r["status"] == "expired" {
				return
			}
		}
		sleep10ms()
		sleep10ms()
		sleep10ms()
	}
	t.Fatalf("approval %s never expired", id)
}

// TestUntrustedTextIsEscaped: what a command reports, and the inputs of a
// call kept for approval, reach the owner's terminal with every control
// character (an OSC title, CSI colours, a C1 CSI without ESC) and bidi
// override escaped — in `invocations show`, `approve --list` and the
// approval's own display — while --json stays exact.
func TestUntrustedTextIsEscaped(t *testing.T) {
	rukh, _ := hostBinaries(t)
	h := newApprovalHome(t, rukh)
	hostile := "x\x1b]0;owned\x07\x1b[31m\u009b2J\u202egpj.exe"
	target := filepath.Join(h.dir, hostile)
	out, errOut, status := h.rukhCLI(t, nil, nil, "drop", target)
	if status != 0 {
		t.Fatalf("drop: exit %d: %s %s", status, out, errOut)
	}
	raw := func(s string) bool {
		return strings.ContainsAny(s, "\x1b\x07\u009b\u202e")
	}
	var list []struct {
		ID string `json:"id"`
	}
	listOut, _, _ := h.rukhCLI(t, nil, nil, "invocations", "list", "--json", "-n", "1")
	if err := json.Unmarshal([]byte(listOut), &list); err != nil || len(list) != 1 {
		t.Fatalf("invocations list: %v: %s", err, listOut)
	}
	show, _, _ := h.rukhCLI(t, nil, nil, "invocations", "show", list[0].ID)
	want := `effect:       deleted table:` + filepath.Join(h.dir, `x\x1b]0;owned\x07\x1b[31m\u009b2J\u202egpj.exe`)
	if raw(show) || !strings.Contains(show, want) {
		t.Errorf("invocations show:\n%s\nwant it to contain %q and no raw control", show, want)
	}
	showJSON, _, _ := h.rukhCLI(t, nil, nil, "invocations", "show", list[0].ID, "--json")
	var rec struct {
		Effects []struct{ Ref string } `json:"effects"`
	}
	if err := json.Unmarshal([]byte(showJSON), &rec); err != nil || len(rec.Effects) != 1 || rec.Effects[0].Ref != "table:"+target {
		t.Errorf("invocations show --json is not exact: %s (%v)", showJSON, err)
	}

	// The same text as the input of a call kept for approval.
	env, _ := h.call(t, "agent", "", map[string]any{"arg": target})
	id, _ := env["approvalId"].(string)
	if id == "" {
		t.Fatalf("no approval asked: %v", env)
	}
	pending, _, _ := h.rukhCLI(t, nil, nil, "approve", "--list")
	if raw(pending) || !strings.Contains(pending, id) {
		t.Errorf("approve --list:\n%s", pending)
	}
	shown, _, _ := h.approveAtTerminal(t, id, "no")
	if raw(shown) || !strings.Contains(shown, `\u202egpj.exe`) {
		t.Errorf("the approval prompt shows:\n%q", shown)
	}
}

// TestCommandCannotApprove: a host command that gives `rukh approve` a
// pseudo-terminal of its own, drops RUKH_INVOCATION_ID and answers yes is
// refused (exit 77): it descends from the process that runs it, in-process
// and through rukhd; the approval stays pending and the kept call does not
// run.
func TestCommandCannotApprove(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newApprovalHome(t, host.Rukh)
		rel := filepath.Join(h.dir, "ttyrel")
		if out, err := exec.Command("go", "build", "-o", filepath.Join(rel, "bin", "tty"), "./testdata/tty").CombinedOutput(); err != nil {
			t.Fatalf("go build tty: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(rel, "rukh-extension.json"), []byte(ttyRelease), 0o644); err != nil {
			t.Fatal(err)
		}
		testhome.InstallPinned(t, filepath.Join(h.home, "data"), rel)
		testhome.Apply(t, admin.New(filepath.Join(h.home, "data")), approvalProfile)
		host.serve(t, h.home)
		target := filepath.Join(h.dir, "orders")
		env, _ := h.call(t, "agent", "", map[string]any{"arg": target})
		id, _ := env["approvalId"].(string)
		if id == "" {
			t.Fatalf("no approval asked: %v", env)
		}
		out, errOut, status := h.rukhCLI(t, nil, nil, "tty", "approve", host.Rukh, id)
		if status != 0 || !strings.Contains(out, "approve-exit=77") || !strings.Contains(out, "approve cannot run below rukh") {
			t.Errorf("a command approving its own call: exit %d:\n%s%s", status, out, errOut)
		}
		if env, _ := h.call(t, "agent", "", map[string]any{"arg": target}); env["reason"] != "approval_required" || env["approvalId"] != id {
			t.Errorf("after the command's attempt the call: %v; want still kept for approval %s", env, id)
		}
		if n := runs(t, target); n != 0 {
			t.Errorf("the kept call ran %d times", n)
		}
	})
}

// TestPassthroughApprovalIsOfItsArguments: a passthrough command's call
// kept for the owner's approval is bound to its exact argv, as a typed
// call is to its inputs. Approving `legacy run --help` lets exactly that
// run, once; `legacy run --force` asks anew and runs nothing. The
// approval shows the arguments as {"argv": […]}.
func TestPassthroughApprovalIsOfItsArguments(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		dir := testhome.TempDir(t)
		legacy, err := filepath.Abs(filepath.Join("..", "examples", "legacy"))
		if err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(dir, "home")
		a := testhome.InstallPinned(t, filepath.Join(home, "data"), legacy)
		if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"gated"},"mcp":{"expose":[],"task":"gated"},
			"tasks":{"gated":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"restricted","requireApproval":["destructive"]}}}`)); err != nil {
			t.Fatal(err)
		}
		h := &approvalHome{rukh: host.Rukh, home: home, dir: dir, env: append(os.Environ(), "RUKH_HOME="+home)}
		host.serve(t, home)

		pending := func() []map[string]any {
			t.Helper()
			out, stderr, status := h.rukhCLI(t, nil, nil, "approve", "--list", "--json")
			var rows []map[string]any
			if err := json.Unmarshal([]byte(out), &rows); status != 0 || err != nil {
				t.Fatalf("approve --list --json: exit %d, %v: %s %s", status, err, out, stderr)
			}
			return rows
		}
		if out, _, status := h.rukhCLI(t, nil, nil, "legacy", "run", "--help"); status != 77 || strings.Contains(out, "legacy tool called") {
			t.Fatalf("legacy run --help before an approval: exit %d, %q; want 77 and nothing run", status, out)
		}
		rows := pending()
		if len(rows) != 1 {
			t.Fatalf("pending approvals: %v; want one", rows)
		}
		id, _ := rows[0]["id"].(string)
		if inputs, _ := json.Marshal(rows[0]["inputs"]); string(inputs) != `{"argv":["--help"]}` {
			t.Errorf("the approval's inputs: %s; want {\"argv\":[\"--help\"]}", inputs)
		}
		if shown, out, status := h.approveAtTerminal(t, id, "yes"); status != 0 || !strings.Contains(shown, `"argv":["--help"]`) {
			t.Fatalf("approve: exit %d, %q; the terminal showed %q", status, out, shown)
		}

		// Other arguments are another call: a new approval, nothing run.
		if out, _, status := h.rukhCLI(t, nil, nil, "legacy", "run", "--force"); status != 77 || strings.Contains(out, "legacy tool called") {
			t.Errorf("legacy run --force on --help's approval: exit %d, %q; want 77 and nothing run", status, out)
		}
		if out, _, status := h.rukhCLI(t, nil, nil, "legacy", "run", "--he", "lp"); status != 77 || strings.Contains(out, "legacy tool called") {
			t.Errorf("legacy run --he lp on --help's approval: exit %d, %q; want 77 and nothing run", status, out)
		}
		// The approved call runs, once.
		if out, stderr, status := h.rukhCLI(t, nil, nil, "legacy", "run", "--help"); status != 0 || !strings.Contains(out, "legacy tool called with 1 argument(s):\n  --help\n") {
			t.Errorf("the approved legacy run --help: exit %d, %q %q", status, out, stderr)
		}
		if _, _, status := h.rukhCLI(t, nil, nil, "legacy", "run", "--help"); status != 77 {
			t.Errorf("legacy run --help again: exit %d; want 77 (an approval is used once)", status)
		}
	})
}

// TestCtrlCAtTheApprovePrompt: a Ctrl-C while `approve` waits for the
// owner's answer approves nothing and ends the command line with 130, on
// both hosts. Through rukhd the prompt is the daemon's, on the client's
// terminal: the client of a built-in command line catches its signals
// while the daemon answers, so the Ctrl-C is a cancel, not a client
// killed while the daemon still reads the terminal.
func TestCtrlCAtTheApprovePrompt(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newApprovalHome(t, host.Rukh)
		host.serve(t, h.home)
		target := filepath.Join(h.dir, "orders")
		env, _ := h.call(t, "agent", "", map[string]any{"arg": target})
		id, _ := env["approvalId"].(string)
		if env["reason"] != "approval_required" || id == "" {
			t.Fatalf("the agent's call: %v; want approval_required with an approval id", env)
		}

		master, slave := testpty.Open(t)
		t.Cleanup(func() { master.Close() })
		cmd := exec.Command(h.rukh, "approve", id)
		cmd.Env = h.env
		r := startAtTerminal(t, cmd, slave)
		s := newScreen(master)
		at := 0
		s.expect(t, &at, "Type yes to approve: ")
		master.Write([]byte{3}) // Ctrl-C
		select {
		case <-r.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("approve still ran 30 s after a Ctrl-C; the terminal shows:\n%s", s)
		}
		var ee *exec.ExitError
		if !errors.As(r.err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("approve after a Ctrl-C: %s; want exit status 130; the terminal shows:\n%s", waitStatus(r.err), s)
		}
		if env, _ := h.call(t, "agent", "", map[string]any{"arg": target}); env["reason"] != "approval_required" || env["approvalId"] != id {
			t.Errorf("the agent's call after the Ctrl-C: %v; want approval %s still pending", env, id)
		}
		if n := runs(t, target); n != 0 {
			t.Errorf("the call ran %d times", n)
		}
	})
}
