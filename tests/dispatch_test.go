package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// dispatchFixture is a release for the dispatch projection:
//
//	status  read: echoes {"env": ENV}
//	deploy  write: "deployed"
//	fail    read: command_failed, exit 3
//	slow    read: sleeps 1 s, then "slow"
func dispatchFixture(t *testing.T, rel string) {
	t.Helper()
	complete := func(result string) string {
		return `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":` + result + `}\n' "$RUKH_IPC_TOKEN" >&3`
	}
	managed := func(program, result string) string {
		return `"execute":{"mapping":"managed","program":"bin/` + program + `","result":` + result + `},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]}`
	}
	env := `{"id":"env","type":"string","enum":["stage","prod"],"required":true}`
	testhome.WriteFiles(t, rel, map[string]string{
		"bin/status": "#!/bin/sh\nIFS= read -r frame <&3\n" +
			`env=$(printf '%s' "$frame" | sed -n 's/.*"env":{"value":"\([a-z]*\)".*/\1/p')` + "\n" +
			`printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"structured","data":{"env":"%s"}}}\n' "$RUKH_IPC_TOKEN" "$env" >&3` + "\n",
		"bin/deploy": "#!/bin/sh\n" + complete(`{"kind":"text","text":"deployed"}`) + "\n",
		"bin/fail":   "#!/bin/sh\nprintf '{\"type\":\"complete\",\"token\":\"%s\",\"status\":\"command_failed\"}\\n' \"$RUKH_IPC_TOKEN\" >&3\nexit 3\n",
		"bin/slow":   "#!/bin/sh\nsleep 1\n" + complete(`{"kind":"text","text":"slow"}`) + "\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.ops","version":"1.0.0","publisher":"test","commands":[
		{"id":"status","path":["status"],"summary":"Show status","inputs":[` + env + `],` +
			managed("status", `{"kind":"structured","schema":{"type":"object","properties":{"env":{"type":"string"}},"required":["env"],"additionalProperties":false}}`) + `,"effects":{"class":"read"}},
		{"id":"deploy","path":["deploy"],"summary":"Deploy","inputs":[` + env + `],` + managed("deploy", `{"kind":"text"}`) + `,"effects":{"class":"write"}},
		{"id":"fail","path":["fail"],"summary":"Fail",` + managed("fail", `{"kind":"text"}`) + `,"effects":{"class":"read"}},
		{"id":"slow","path":["slow"],"summary":"Slow",` + managed("slow", `{"kind":"text"}`) + `,"effects":{"class":"read"}}]}`,
	})
}

const dispatchProfileDoc = `{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.ops/*"],"task":"agent","projection":"dispatch"},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"},
	         "agent":{"commands":["test.*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`

// TestDispatchProcess drives a real `rukh mcp` serving the dispatch
// projection with the go-sdk client, in process and through rukhd
// (forEachHost): it lists the one tool, fetches help, calls a read op and
// a fingerprinted write op, runs a batch with one failing op, detaches a
// run and waits on it. Both hosts must answer the same.
func TestDispatchProcess(t *testing.T) {
	rel := filepath.Join(testhome.TempDir(t), "src")
	dispatchFixture(t, rel)
	var same acrossHosts
	forEachHost(t, func(t *testing.T, h *testHost) {
		home := filepath.Join(testhome.TempDir(t), "home")
		a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
		testhome.Apply(t, a, dispatchProfileDoc)
		h.serve(t, home)

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.Command(h.Rukh, "mcp")
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()

		list, err := cs.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 1 || list.NextCursor != "" || !regexp.MustCompile(`^request__[0-9a-f]{64}$`).MatchString(list.Tools[0].Name) {
			t.Fatalf("tools/list: %v %+v", err, list)
		}
		name := list.Tools[0].Name
		call := func(what, args string) string {
			t.Helper()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			raw, _ := json.Marshal(res.StructuredContent)
			var a, b any
			json.Unmarshal(raw, &a)
			json.Unmarshal([]byte(text), &b)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("%s: structuredContent %s differs from the text %s", what, raw, text)
			}
			same.record(h, what, fmt.Sprintf("isError %v %s", res.IsError, text))
			return text
		}

		if got := call("help", `{"help":true}`); !strings.Contains(got, `"test.ops/deploy(env:stage|prod) write, needs fingerprint — Deploy"`) {
			t.Errorf("help: %s", got)
		}
		help := call("help deploy", `{"help":"test.ops/deploy"}`)
		var h1 struct {
			Help struct {
				SchemaFingerprint string `json:"schemaFingerprint"`
			} `json:"help"`
		}
		json.Unmarshal([]byte(help), &h1)
		fp := h1.Help.SchemaFingerprint
		if !strings.HasPrefix(fp, "sha256:") {
			t.Fatalf("help deploy: %s", help)
		}
		if got := call("read op", `{"ops":[{"op":"test.ops/status","args":{"env":"prod"}}]}`); !regexp.MustCompile(
			`^\{"ok":true,"results":\[\{"ok":true,"op":"test.ops/status","invocationId":"[0-9a-f]{32}","outcome":"succeeded","commandResult":\{"kind":"structured","data":\{"env":"prod"\}\}\}\]\}$`).MatchString(got) {
			t.Errorf("read op: %s", got)
		}
		if got := call("write op", `{"ops":[{"op":"test.ops/deploy","args":{"env":"stage"},"fingerprint":"`+fp+`"}]}`); !strings.Contains(got, `"outcome":"succeeded","commandResult":{"kind":"text","text":"deployed"}`) {
			t.Errorf("write op: %s", got)
		}
		got := call("batch", `{"ops":[{"op":"test.ops/status","args":{"env":"stage"}},{"op":"test.ops/fail"},{"op":"test.ops/deploy","args":{"env":"stage"}}]}`)
		for _, want := range []string{`{"ok":false,"results":[{"ok":true,"op":"test.ops/status"`, `{"ok":false,"op":"test.ops/fail","invocationId":`,
			`"outcome":"command_failed"`, `"code":"fingerprint_required"`} {
			if !strings.Contains(got, want) {
				t.Errorf("batch: %s lacks %s", got, want)
			}
		}
		detached := call("detach", `{"ops":[{"op":"test.ops/slow","detach":true}]}`)
		m := regexp.MustCompile(`^\{"ok":true,"results":\[\{"ok":true,"op":"test.ops/slow","invocationId":"([0-9a-f]{32})","detached":true\}\]\}$`).FindStringSubmatch(detached)
		if m == nil {
			t.Fatalf("detach: %s", detached)
		}
		waited := call("wait", `{"ops":[{"op":"invocations.wait","args":{"ids":["`+m[1]+`","`+strings.Repeat("f", 32)+`"],"timeoutMs":30000}}]}`)
		for _, want := range []string{`"status":"terminal","terminal":true,"outcome":"succeeded"`, `"status":"unknown"`, `"timedOut":false`, `"terminal":["` + m[1] + `"]`} {
			if !strings.Contains(waited, want) {
				t.Errorf("wait: %s lacks %s", waited, want)
			}
		}
		// Every op is its own recorded invocation.
		list2 := exec.Command(h.Rukh, "invocations", "list", "--json", "-n", "20")
		list2.Env = cmd.Env
		out, err := list2.Output()
		if err != nil {
			t.Fatal(err)
		}
		var invs []struct{ Command, Outcome, Transport string }
		json.Unmarshal(out, &invs)
		var seen []string
		for i := len(invs) - 1; i >= 0; i-- {
			seen = append(seen, invs[i].Command+" "+invs[i].Outcome+" "+invs[i].Transport)
		}
		if want := "[test.ops/status succeeded mcp test.ops/deploy succeeded mcp test.ops/status succeeded mcp test.ops/fail command_failed mcp test.ops/slow succeeded mcp]"; fmt.Sprint(seen) != want {
			t.Errorf("records %v\nwant %s", seen, want)
		}
	})
	same.check(t)
}
