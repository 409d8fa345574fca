//go:build soak

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// TestSoak (make soak) runs SOAK_CALLS MCP calls (default 10,000) across
// 20 `rukh mcp` sessions while a killer kill -9s running extension
// children and whole `rukh mcp` processes at random and an owner applies
// a new profile now and then (renaming every tool). Afterwards: no
// invocation ran twice (every run leaves a file named by its invocation
// id, created exclusively), every kept record has exactly one final
// outcome (none left open once the hosts are gone and one more call was
// admitted), every answered call's outcome is the recorded one, and no
// process of the soak is left.
func TestSoak(t *testing.T) {
	total := 10000
	if n := os.Getenv("SOAK_CALLS"); n != "" {
		fmt.Sscan(n, &total)
	}
	const sessions = 20
	dir := testhome.TempDir(t)
	rukh := cliInto(t, filepath.Join(dir, "bin"))
	runs := filepath.Join(dir, "runs")
	os.MkdirAll(runs, 0o755)
	rel := filepath.Join(dir, "rel")
	os.MkdirAll(filepath.Join(rel, "bin"), 0o755)
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok"}}\n' "$RUKH_IPC_TOKEN" >&3`
	// Each run records itself: a file named by its invocation id, created
	// exclusively (set -C), holding its pid. A replay would fail here.
	record := "set -C\necho $$ > " + runs + "/$RUKH_INVOCATION_ID || echo replay > " + runs + "/REPLAY-$RUKH_INVOCATION_ID-$$\n"
	os.WriteFile(filepath.Join(rel, "bin", "quick"), []byte("#!/bin/sh\n"+record+report+"\n"), 0o755)
	os.WriteFile(filepath.Join(rel, "bin", "slow"), []byte("#!/bin/sh\n"+record+"sleep 0.$(($$ % 4 + 1))\n"+report+"\n"), 0o755)
	os.WriteFile(filepath.Join(rel, "rukh-extension.json"), []byte(`{"schema":"rukh.extension/2","package":"soak.t","version":"1.0.0","publisher":"t","commands":[
		{"id":"quick","path":["quick"],"summary":"Quick","execute":{"mapping":"managed","program":"bin/quick","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
		{"id":"slow","path":["slow"],"summary":"Slow","execute":{"mapping":"managed","program":"bin/slow","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`), 0o644)
	home := filepath.Join(dir, "home")
	testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	env := append(os.Environ(), "RUKH_HOME="+home)
	profile := func(ns string) []byte {
		return []byte(`{"endpointNamespace":"` + ns + `","cli":{"task":"owner"},"mcp":{"expose":["soak.t/*"],"task":"agent"},
			"tasks":{"owner":{"commands":["*/*"],"deadlineMs":30000,"maxConcurrent":64,"enforcement":"host"},
			         "agent":{"commands":["soak.*/*"],"deadlineMs":30000,"maxConcurrent":64,"enforcement":"host"}}}`)
	}
	apply := func(ns string) {
		f := filepath.Join(dir, "profile-"+ns+".json")
		os.WriteFile(f, profile(ns), 0o644)
		cmd := exec.Command(rukh, "profile", "apply", "-f", f)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("profile apply: %v: %s", err, out)
		}
	}
	apply("soak0")

	var (
		calls, answered, toolErrors, sessionKills, childKills, applies atomic.Int64
		mu                                                             sync.Mutex
		outcomes                                                       = map[string]string{} // invocation id → outcome/reason answered
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a hang guard
	defer cancel()
	start := func() (*exec.Cmd, *sdk.ClientSession, map[string]string) {
		cmd := exec.Command(rukh, "mcp", "--log-file", filepath.Join(dir, "mcp.log"))
		cmd.Env = env
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "soak", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("rukh mcp: %v", err)
		}
		return cmd, cs, nil
	}
	names := func(cs *sdk.ClientSession) map[string]string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return nil
		}
		m := map[string]string{}
		for _, tool := range res.Tools {
			m[tool.Title] = tool.Name
		}
		return m
	}

	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(s), 7))
			cmd, cs, _ := start()
			tools := names(cs)
			for calls.Add(1) <= int64(total) && ctx.Err() == nil {
				if r.IntN(200) == 0 { // kill -9 this session's rukh mcp now and then
					cmd.Process.Kill()
					cs.Close()
					sessionKills.Add(1)
					cmd, cs, _ = start()
					tools = names(cs)
				}
				title := "Quick"
				if r.IntN(4) == 0 {
					title = "Slow"
				}
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tools[title]})
				if err != nil {
					// A renamed tool (a profile was applied) or a dead session:
					// list again, or start again.
					toolErrors.Add(1)
					if tools = names(cs); tools == nil {
						cmd.Process.Kill()
						cs.Close()
						cmd, cs, _ = start()
						tools = names(cs)
					}
					continue
				}
				answered.Add(1)
				raw, _ := json.Marshal(res.StructuredContent)
				var env struct{ InvocationID, Outcome, Reason string }
				json.Unmarshal(raw, &env)
				mu.Lock()
				if prev, ok := outcomes[env.InvocationID]; ok {
					t.Errorf("invocation %s answered twice: %s and %s/%s", env.InvocationID, prev, env.Outcome, env.Reason)
				}
				outcomes[env.InvocationID] = env.Outcome + "/" + env.Reason
				mu.Unlock()
			}
			cs.Close()
			cmd.Wait()
		}()
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Add(2)
	go func() { // the killer: kill -9 a running child now and then
		defer side.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+r.IntN(60)) * time.Millisecond):
			}
			// The running children: processes whose command line is a
			// program of the installed release.
			var running []int
			procs, _ := os.ReadDir("/proc")
			for _, e := range procs {
				b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				if err == nil && strings.Contains(string(b), filepath.Join(home, "data", "releases")) {
					var pid int
					fmt.Sscan(e.Name(), &pid)
					running = append(running, pid)
				}
			}
			if len(running) > 0 && syscall.Kill(running[r.IntN(len(running))], syscall.SIGKILL) == nil {
				childKills.Add(1)
			}
		}
	}()
	go func() { // the owner: a new profile revision now and then
		defer side.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(700 * time.Millisecond):
			}
			apply(fmt.Sprintf("soak%d", i))
			applies.Add(1)
		}
	}()
	wg.Wait()
	close(stop)
	side.Wait()

	// One more admission resolves the records of the killed hosts.
	last := exec.Command(rukh, "quick")
	last.Env = env
	if out, err := last.CombinedOutput(); err != nil {
		t.Fatalf("rukh quick: %v: %s", err, out)
	}
	list := exec.Command(rukh, "invocations", "list", "--json", "-n", "0")
	list.Env = env
	out, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		ID, Outcome, Reason string
	}
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatal(err)
	}
	open, mismatched := 0, 0
	byOutcome := map[string]int{}
	for _, r := range recs {
		byOutcome[r.Outcome+"/"+r.Reason]++
		if r.Outcome == "" {
			open++
		}
		mu.Lock()
		if got, ok := outcomes[r.ID]; ok && got != r.Outcome+"/"+r.Reason {
			mismatched++
			t.Errorf("invocation %s: answered %s, recorded %s/%s", r.ID, got, r.Outcome, r.Reason)
		}
		mu.Unlock()
	}
	if open > 0 {
		t.Errorf("%d records are still open after every host is gone", open)
	}
	ents, _ := os.ReadDir(runs)
	replays := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "REPLAY-") {
			replays++
			t.Errorf("an invocation ran twice: %s", e.Name())
		}
	}
	// No process of the soak is left: no rukh mcp, no extension (their
	// command lines hold the soak's directory).
	time.Sleep(500 * time.Millisecond)
	left := 0
	procEnts, _ := os.ReadDir("/proc")
	for _, e := range procEnts {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), dir) && e.Name() != fmt.Sprint(os.Getpid()) {
			if st, _ := os.ReadFile("/proc/" + e.Name() + "/stat"); !strings.Contains(string(st), ") Z ") {
				left++
				t.Errorf("process %s of the soak is left: %s", e.Name(), st)
			}
		}
	}
	t.Logf("soak: %d calls sent, %d answered, %d tool errors (renamed tools, killed sessions), %d sessions and %d children killed, %d profile revisions; runs %d; kept records %d by outcome %v; open %d, mismatched %d, replays %d, processes left %d",
		total, answered.Load(), toolErrors.Load(), sessionKills.Load(), childKills.Load(), applies.Load(), len(ents), len(recs), byOutcome, open, mismatched, replays, left)
}
