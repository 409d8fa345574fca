package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/internal/testpty"
)

// The attacks of issue 25 by the command on its own call: approving it,
// reaching the home, and holding the call open past its deadline. The
// probe (testdata/confine/probe) carries them out; each test runs on both
// hosts.

// hostileRelease: drop is destructive (the call an agent wants
// approved); attack is a read command that runs the probe's attacks.
const hostileRelease = `{"schema":"rukh.extension/2","package":"t.hostile","version":"1.0.0","publisher":"t","commands":[
 {"id":"drop","path":["drop"],"summary":"Drop a table",
  "inputs":[{"id":"arg","positional":0,"type":"string","required":true},{"id":"what","type":"string","enum":["drop"],"default":"drop"}],
  "execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},
  "machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"destructive"}},
 {"id":"attack","path":["attack"],"summary":"Attack",
  "inputs":[{"id":"what","positional":0,"type":"string","required":true},{"id":"arg","positional":1,"type":"string","default":""},
            {"id":"other","type":"string","default":""}],
  "execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},
  "machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"read"}}]}`

// hostileProfile: the agent task is restricted and keeps destructive
// calls for approval; held and late are host tasks with a short deadline
// and one slot.
const hostileProfile = `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["t.hostile/*"],"task":"agent"},
 "tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"},
          "agent":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"restricted","requireApproval":["destructive"]},
          "held":{"commands":["*/*"],"deadlineMs":1000,"maxConcurrent":1,"enforcement":"host"},
          "late":{"commands":["*/*"],"deadlineMs":1000,"maxConcurrent":1,"enforcement":"host"}}}`

type hostileHome struct {
	rukh, home, dir string
	env             []string
	served          *served
}

func newHostileHome(t *testing.T, host *testHost) *hostileHome {
	t.Helper()
	h := prepareHostileHome(t, host.Rukh)
	h.served = host.serve(t, h.home)
	return h
}

// prepareHostileHome is the home, not yet served.
func prepareHostileHome(t *testing.T, rukh string) *hostileHome {
	t.Helper()
	h := &hostileHome{rukh: rukh, dir: testhome.TempDir(t)}
	rel := probeRelease(t, h.dir, hostileRelease)
	h.home = filepath.Join(h.dir, "home")
	a := testhome.InstallPinned(t, filepath.Join(h.home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(hostileProfile)); err != nil {
		t.Fatal(err)
	}
	h.env = append(os.Environ(), "RUKH_HOME="+h.home)
	return h
}

// session starts `rukh mcp --task TASK` and returns the session, the
// rukh mcp process and the tools by title.
func (h *hostileHome) session(t *testing.T, task string) (*sdk.ClientSession, *exec.Cmd, map[string]string) {
	t.Helper()
	cmd := exec.Command(h.rukh, "mcp", "--task", task)
	cmd.Env = h.env
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	_, names := toolsByTitle(t, cs)
	return cs, cmd, names
}

// toolsByTitle lists cs's tools, and their names by title.
func toolsByTitle(t *testing.T, cs *sdk.ClientSession) ([]*sdk.Tool, map[string]string) {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, tool := range tools.Tools {
		names[tool.Title] = tool.Name
	}
	return tools.Tools, names
}

// call makes one tools/call and returns its envelope and the text of its
// result (commandResult.text).
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	env, text, err := callE(cs, name, args)
	if err != nil {
		t.Fatal(err)
	}
	return env, text
}

// callE is call for a goroutine: it returns what went wrong.
func callE(cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, "", fmt.Errorf("tools/call %v: %w", args, err)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var env map[string]any
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, "", err
	}
	text := ""
	if r, ok := env["commandResult"].(map[string]any); ok {
		text, _ = r["text"].(string)
	}
	return env, text, nil
}

// TestCommandCannotApproveItself replays the self-approval attacks on a
// restricted task that keeps destructive calls for approval: the command
// kills its helper and runs `rukh approve` from a new session on a
// terminal of its own; reaches for the store, the config and the
// daemon's socket; signals, traces and reads the helper's files; and runs
// the owner's CLI. Each fails, the approval stays pending, and the
// agent's retry is still refused. (Without the user and mount namespace
// and the Landlock scoping, the kill succeeds, the orphan is below no
// host, and it approves.)
func TestCommandCannotApproveItself(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newHostileHome(t, host)
		cs, _, names := h.session(t, "agent")
		target := filepath.Join(h.dir, "orders")
		env, _ := call(t, cs, names["Drop a table"], map[string]any{"arg": target})
		id, _ := env["approvalId"].(string)
		if env["reason"] != "approval_required" || id == "" {
			t.Fatalf("the destructive call: %v; want approval_required", env)
		}

		report := filepath.Join(h.dir, "selfapprove")
		env, text := call(t, cs, names["Attack"], map[string]any{"what": "selfapprove", "arg": report, "other": id + " " + h.rukh})
		if env["outcome"] != "succeeded" || !strings.HasPrefix(text, "ok: kill helper: operation not permitted; approve: exit status ") {
			// Where the kill worked, the command died with its helper and
			// the grandchild goes on: what it did is in its report.
			var got []byte
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if got, _ = os.ReadFile(report); len(got) > 0 {
					break
				}
			}
			t.Errorf("the self-approval attack: %v %q; the attacker's report: %q", env, text, got)
		}
		cmd := exec.Command(h.rukh, "approve", "--list", "--json")
		cmd.Env = h.env
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `"status": "pending"`) || strings.Contains(string(out), `"status": "approved"`) {
			t.Errorf("approvals after the attack (%v):\n%s", err, out)
		}
		if env, _ := call(t, cs, names["Drop a table"], map[string]any{"arg": target}); env["reason"] != "approval_required" || env["approvalId"] != id {
			t.Errorf("the retry after the attack: %v; want approval_required %s again", env, id)
		}
		if n := runs(t, target); n != 0 {
			t.Errorf("the destructive call ran %d times", n)
		}

		data := filepath.Join(h.home, "data")
		socket := filepath.Join(h.home, "run", "rukhd.sock")
		for _, tc := range []struct {
			name, what, arg, other, want string
		}{
			{"the store", "stat", filepath.Join(data, "store.db"), "", "error: stat " + filepath.Join(data, "store.db") + ": no such file or directory"},
			{"the config", "stat", filepath.Join(h.home, "config", "x"), "", "error: stat " + filepath.Join(h.home, "config", "x") + ": no such file or directory"},
			{"the daemon's socket", "daemon", socket, "", "error: dial unix " + socket + ": connect: no such file or directory"},
			{"its own release", "stat", filepath.Join(data, "releases"), "", "ok: d"},
			{"signal the helper", "signal", "", "", "error: operation not permitted"},
			{"trace the helper", "ptrace", "", "", "error: operation not permitted"},
			{"the helper's files", "procroot", "", "", "error: open /proc/"},
			{"the owner's CLI", "run", h.rukh, "profile show", "error: exit status "},
		} {
			env, text := call(t, cs, names["Attack"], map[string]any{"what": tc.what, "arg": tc.arg, "other": tc.other})
			if env["outcome"] != "succeeded" || !strings.HasPrefix(text, tc.want) {
				t.Errorf("%s: %v %q; want it to start %q", tc.name, env["outcome"], text, tc.want)
			}
		}
	})
}

// TestDeadlineEndsAHeldCall: a host command whose grandchild, in a
// session of its own, stops its helper again and again (SIGSTOP) or
// traces it (ptrace) cannot hold its call past the deadline: the host
// kills the helper with SIGKILL when it does not end the call, the call
// is recorded cancelled/deadline, the grandchild is gone, and the task's
// one slot is free for the next call. (Before, the host asked the helper
// once and waited for it forever.)
func TestDeadlineEndsAHeldCall(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newHostileHome(t, host)
		cs, _, names := h.session(t, "held")
		for _, attack := range []string{"stoploop", "traceloop"} {
			pidfile := filepath.Join(h.dir, attack+".pid")
			env, text := call(t, cs, names["Attack"], map[string]any{"what": attack, "arg": pidfile})
			if env["outcome"] != "cancelled" || env["reason"] != "deadline" {
				t.Errorf("%s: %v %q; want cancelled/deadline", attack, env, text)
			}
			b, err := os.ReadFile(pidfile)
			if err != nil {
				t.Fatalf("%s: the grandchild never held the helper: %v", attack, err)
			}
			pid, _ := strconv.Atoi(string(b))
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s: the grandchild %d outlived its call (kill 0: %v)", attack, pid, err)
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if env, text := call(t, cs, names["Attack"], map[string]any{"what": "stat", "arg": "/"}); env["outcome"] != "succeeded" {
				t.Errorf("after %s, the next call: %v %q; want the slot free", attack, env, text)
			}
		}
	})
}

// TestLateIsNotSuccess: a host stopped (SIGSTOP) past a call's deadline
// while the command finished does not record the call as a success when
// it runs again: the call ended after its deadline.
func TestLateIsNotSuccess(t *testing.T) {
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newHostileHome(t, host)
		cs, mcp, names := h.session(t, "late")
		hostPID := h.served.PID
		if hostPID == 0 {
			hostPID = mcp.Process.Pid // rukh mcp runs the call itself
		}
		for i := range 3 {
			done, started := fifo(t, h.dir, fmt.Sprintf("done-%d", i))
			_, finished := fifo(t, h.dir, fmt.Sprintf("done-%d.finished", i))
			type answer struct {
				env  map[string]any
				text string
				err  error
			}
			answered := make(chan answer, 1)
			go func() {
				env, text, err := callE(cs, names["Attack"], map[string]any{"what": "sleep", "arg": done, "other": "1200ms"})
				answered <- answer{env, text, err}
			}()
			// Stop the host once the command runs, and keep it stopped
			// until the command has finished: 1.2 s after it started, so
			// after the call's 1 s deadline.
			started("the command's start")
			syscall.Kill(hostPID, syscall.SIGSTOP)
			finished("the command's end, with its host stopped")
			syscall.Kill(hostPID, syscall.SIGCONT)
			a := <-answered
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.env["outcome"] != "cancelled" || a.env["reason"] != "deadline" {
				t.Errorf("run %d: %v %q; want cancelled/deadline", i, a.env, a.text)
			}
		}
	})
}

// TestCtrlCEndsAHeldCall: at a real terminal, a host command whose
// grandchild traces its helper (which then acts on no signal but
// SIGKILL) ends at Ctrl-C all the same (exit 130, recorded cancelled/interrupted), and at once at a
// second Ctrl-C; the grandchild, which could otherwise read what the
// owner types next, is gone. (Before, the host asked the helper once
// and waited for it forever, and two Ctrl-Cs did not end the call.)
func TestCtrlCEndsAHeldCall(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed for a job-control shell: %v", err)
	}
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := newHostileHome(t, host)
		for _, presses := range []int{1, 2} {
			t.Run(fmt.Sprintf("%d Ctrl-C", presses), func(t *testing.T) {
				pidfile, held := fifo(t, h.dir, fmt.Sprintf("ctrlc-%d.pid", presses))
				master, slave := testpty.Open(t)
				t.Cleanup(func() { master.Close() })
				cmd := exec.Command("bash", "--norc", "--noprofile", "-m", "-c", `"$RUKH" attack traceloop "$PIDFILE"; echo "status=$?"`)
				cmd.Env = append(h.env, "RUKH="+h.rukh, "PIDFILE="+pidfile, "TERM=dumb", "PS1=")
				sh := startAtTerminal(t, cmd, slave)
				s := newScreen(master)
				s.ended = func() string {
					select {
					case <-sh.exited:
						return "the shell ended: " + waitStatus(sh.err)
					case <-time.After(5 * time.Second):
						return "the shell still ran 5 s after the terminal closed"
					}
				}
				pid, err := strconv.Atoi(held("the grandchild holding the helper"))
				if err != nil {
					t.Fatalf("the grandchild's pid: %v; the terminal shows:\n%s", err, s)
				}
				for range presses {
					master.Write([]byte{3}) // Ctrl-C
				}
				at := 0
				s.expect(t, &at, "status=130")
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("the grandchild %d outlived its call (kill 0: %v)", pid, err)
					syscall.Kill(pid, syscall.SIGKILL)
				}
				list := exec.Command(h.rukh, "invocations", "list", "--json")
				list.Env = h.env
				out, err := list.Output()
				if err != nil || !strings.Contains(string(out), `"reason": "interrupted"`) {
					t.Errorf("invocations list (%v):\n%s", err, out)
				}
			})
		}
	})
}

// waitStatus says how a process that cmd.Wait returned err for ended.
func waitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case !errors.As(err, &ee):
		return err.Error()
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return ee.Error()
}
