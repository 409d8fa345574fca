package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// tsQuick is how many trivial commands the TypeScript fixture adds next
// to its six named tools, so that listing spans two pages of 32; tsTools
// is how many tools it lists in all.
const (
	tsQuick = 40
	tsTools = tsQuick + 6
)

// tsProfile is the owner profile of the TypeScript fixture; NAMESPACE is
// replaced, so that a second apply renames every tool.
const tsProfile = `{"endpointNamespace":"NAMESPACE","cli":{"task":"owner"},"mcp":{"expose":["ts.tools/*"],"task":"agent"},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":40000,"maxConcurrent":8,"enforcement":"host"},
	         "agent":{"commands":["ts.*/*"],"deadlineMs":40000,"maxConcurrent":8,"enforcement":"host",
	                  "allow":[{"action":"deploy.read","resource":"env:stage"}]}}}`

// TestTypeScriptClient drives a real `rukh mcp` process with the official
// TypeScript SDK client (tests/mcp/client.mjs, @modelcontextprotocol/sdk
// 1.32.2, protocol 2025-11-25 via initialize): each subtest is one
// scenario of the script, which asserts and exits non-zero on a failure.
// Every scenario runs in process and through rukhd (forEachHost), and
// both hosts must report the same but for invocation ids and timings.
// CI (.ci/run) installs the SDK with `npm ci`; elsewhere the test is
// skipped until `cd tests/mcp && npm ci` has been run.
func TestTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("mcp", "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript MCP client tests cannot run (%v): .ci/run must install node and tests/mcp/node_modules (npm ci --prefix tests/mcp) before `make test`", err)
		}
		t.Skipf("the TypeScript MCP client tests need node and tests/mcp/node_modules (%v); `cd tests/mcp && npm ci` enables them", err)
	}

	rel := tsRelease(t, filepath.Join(testhome.TempDir(t), "src"))
	var same acrossHosts // each scenario's report
	forEachHost(t, func(t *testing.T, h *testHost) {
		dir := testhome.TempDir(t)
		// The stale scenario changes the profile under a running server,
		// so it gets a home of its own; the others share one and run in
		// order.
		shared := tsHome(t, filepath.Join(dir, "home"), rel)
		stale := tsHome(t, filepath.Join(dir, "home-stale"), rel)
		next := filepath.Join(dir, "next-profile.json")
		if err := os.WriteFile(next, []byte(strings.Replace(tsProfile, "NAMESPACE", "renamed", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		h.serve(t, shared)
		for _, sc := range tsScenarios {
			t.Run(sc, func(t *testing.T) {
				home := shared
				var env []string
				if sc == "dispatch" {
					// The same release under the dispatch projection.
					home = tsHome(t, filepath.Join(dir, "home-dispatch"), rel)
					dispatch := func(ns string) string {
						return strings.Replace(strings.Replace(tsProfile, "NAMESPACE", ns, 1), `"task":"agent"}`, `"task":"agent","projection":"dispatch"}`, 1)
					}
					testhome.Apply(t, admin.New(filepath.Join(home, "data")), dispatch("ts"))
					renamed := filepath.Join(dir, "next-dispatch.json")
					if err := os.WriteFile(renamed, []byte(dispatch("renamed")), 0o644); err != nil {
						t.Fatal(err)
					}
					env = append(env, "RUKH_NEXT_PROFILE="+renamed)
					h.serve(t, home)
				}
				if sc == "stale" {
					// Through rukhd, the scenario's `rukh profile apply`
					// runs in the daemon too.
					home = stale
					h.serve(t, home)
					env = append(env, "RUKH_NEXT_PROFILE="+next)
				}
				same.record(h, sc, tsNormal(t, tsRun(t, node, h.Rukh, home, sc, env)))
			})
		}
	})
	same.check(t)
}

// tsScenarios are the scenarios of client.mjs, in the order they run.
var tsScenarios = []string{"list", "list-default", "call", "invalid", "denied", "unknown", "progress", "cancel", "stale", "dispatch"}

// tsNormal is a report without its timings.
func tsNormal(t *testing.T, report json.RawMessage) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(report, &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "finalizedAfterMs")
	out, err := json.Marshal(v) // members in key order
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// tsRelease writes the fixture release: sh-only programs speaking
// rukh.ipc/1 on fd 3.
//
//	echo      a structured result {"word": WORD} echoing its input
//	count     an integer input 1..5 (the invalid-input target)
//	read      access deploy.read env:{env}; the agent may read env:stage only
//	slow      exec sleep 30 (the cancellation target)
//	progress  two progress frames, then a text result
//	q00..q39  a text result
func tsRelease(t *testing.T, rel string) string {
	t.Helper()
	// complete reports a result; %s in result takes the values of args.
	complete := func(result string, args ...string) string {
		return `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":` + result + `}\n' "$RUKH_IPC_TOKEN" ` + strings.Join(append(args, ">&3"), " ")
	}
	progress := func(done int) string {
		return fmt.Sprintf(`printf '{"type":"progress","message":"step","done":%d,"total":2}\n' >&3`, done)
	}
	files := map[string]string{
		"bin/ok": "#!/bin/sh\n" + complete(`{"kind":"text","text":"ok"}`) + "\n",
		// The invoke frame is one line on fd 3; the word is one of an enum of [a-z]+.
		"bin/echo": "#!/bin/sh\nIFS= read -r frame <&3\n" +
			`word=$(printf '%s' "$frame" | sed -n 's/.*"word":{"value":"\([a-z]*\)".*/\1/p')` + "\n" +
			complete(`{"kind":"structured","data":{"word":"%s"}}`, `"$word"`) + "\n",
		"bin/slow":     "#!/bin/sh\nexec sleep 30\n",
		"bin/progress": "#!/bin/sh\n" + progress(1) + "\nsleep 0.2\n" + progress(2) + "\nsleep 0.2\n" + complete(`{"kind":"text","text":"done"}`) + "\n",
	}

	managed := func(program, result string) string {
		return `"execute":{"mapping":"managed","program":"bin/` + program + `","result":` + result + `},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]}`
	}
	text := `{"kind":"text"}`
	cmds := []string{
		`{"id":"echo","path":["echo"],"summary":"Echo","inputs":[{"id":"word","type":"string","enum":["hello","hola","salut"],"default":"hello"}],` +
			managed("echo", `{"kind":"structured","schema":{"type":"object","properties":{"word":{"type":"string"}},"required":["word"],"additionalProperties":false}}`) + `,"effects":{"class":"none"}}`,
		`{"id":"count","path":["count"],"summary":"Count","inputs":[{"id":"count","type":"integer","minimum":1,"maximum":5,"default":1}],` + managed("ok", text) + `,"effects":{"class":"none"}}`,
		`{"id":"read","path":["read"],"summary":"Read","inputs":[{"id":"env","type":"string","enum":["stage","prod"],"required":true}],` +
			managed("ok", text) + `,"access":[{"action":"deploy.read","resource":"env:{env}"}],"effects":{"class":"read"}}`,
		`{"id":"slow","path":["slow"],"summary":"Slow",` + managed("slow", text) + `,"effects":{"class":"none"}}`,
		`{"id":"deploy","path":["deploy"],"summary":"Deploy",` + managed("ok", text) + `,"effects":{"class":"write"}}`,
		`{"id":"progress","path":["progress"],"summary":"Progress",` + managed("progress", text) + `,"effects":{"class":"none"}}`,
	}
	for i := range tsQuick {
		cmds = append(cmds, fmt.Sprintf(`{"id":"q%02d","path":["q%02d"],"summary":"Quick %d",`, i, i, i)+managed("ok", text)+`,"effects":{"class":"none"}}`)
	}
	files["rukh-extension.json"] = `{"schema":"rukh.extension/2","package":"ts.tools","version":"1.0.0","publisher":"test","commands":[` + strings.Join(cmds, ",\n") + `]}`
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(rel, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rel, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return rel
}

// tsHome installs the pinned fixture release into a new RUKH_HOME and
// applies the fixture profile.
func tsHome(t *testing.T, home, rel string) string {
	t.Helper()
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(strings.Replace(tsProfile, "NAMESPACE", "ts", 1))); err != nil {
		t.Fatal(err)
	}
	return home
}

// tsRun runs one scenario of client.mjs against home and returns its
// report; it fails the test with the script's message when the script
// exits non-zero.
func tsRun(t *testing.T, node, rukh, home, scenario string, env []string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", scenario)
	cmd.Dir = "mcp"
	cmd.Env = append(os.Environ(), "RUKH_BIN="+rukh, "RUKH_HOME="+home, fmt.Sprintf("RUKH_EXPECT_TOOLS=%d", tsTools))
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("scenario %s did not finish within 60 s\nstdout:\n%s\nstderr:\n%s", scenario, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("scenario %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, stdout.Bytes(), stderr.Bytes())
	}
	var report struct {
		Scenario string `json:"scenario"`
		OK       bool   `json:"ok"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil || !report.OK || report.Scenario != scenario {
		t.Fatalf("scenario %s: no passing JSON report on stdout (%v)\nstdout:\n%s\nstderr:\n%s", scenario, err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("%s", bytes.TrimSpace(stdout.Bytes()))
	return bytes.TrimSpace(stdout.Bytes())
}
