package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// dispatchProfile exposes test.ops and test.hidden under the dispatch
// projection; the agent task sees test.ops only.
const dispatchProfile = `{"endpointNamespace":"team","cli":{"task":"owner"},
	"mcp":{"expose":["test.ops/*","test.hidden/*"],"task":"agent","projection":"dispatch"},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"},
	         "agent":{"commands":["test.ops/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"}}}`

// dispatchHome installs the dispatch fixture:
//
//	test.ops/status  read, env (stage|prod) required; echoes {"env": ENV}
//	test.ops/deploy  write, env required, count 1..5; "deployed"
//	test.ops/wipe    destructive; "wiped"
//	test.ops/plain   external; "plain"
//	test.ops/fail    read; command_failed, exit 3
//	test.hidden/secret  read; exposed, but not visible to the agent task
func dispatchHome(t *testing.T) (string, *admin.Admin) {
	t.Helper()
	dir := testhome.TempDir(t)
	complete := func(result string) string {
		return `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":` + result + `}\n' "$RUKH_IPC_TOKEN" >&3`
	}
	text := func(s string) string { return "#!/bin/sh\n" + complete(`{"kind":"text","text":"`+s+`"}`) + "\n" }
	managed := func(program, result string) string {
		return `"execute":{"mapping":"managed","program":"bin/` + program + `","result":` + result + `},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]}`
	}
	env := `{"id":"env","type":"string","enum":["stage","prod"],"required":true}`
	testhome.WriteFiles(t, filepath.Join(dir, "ops"), map[string]string{
		// status reports its progress, 1 to 3 of 3, and then (wrongly) 1
		// again.
		"bin/status": "#!/bin/sh\nIFS= read -r frame <&3\n" +
			"for i in 1 2 3 1; do printf '{\"type\":\"progress\",\"message\":\"step %d\",\"done\":%d,\"total\":3}\\n' $i $i >&3; done\n" +
			`env=$(printf '%s' "$frame" | sed -n 's/.*"env":{"value":"\([a-z]*\)".*/\1/p')` + "\n" +
			`printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"structured","data":{"env":"%s"}}}\n' "$RUKH_IPC_TOKEN" "$env" >&3` + "\n",
		"bin/deploy": text("deployed"),
		"bin/wipe":   text("wiped"),
		"bin/plain":  text("plain"),
		"bin/fail":   "#!/bin/sh\nprintf '{\"type\":\"complete\",\"token\":\"%s\",\"status\":\"command_failed\"}\\n' \"$RUKH_IPC_TOKEN\" >&3\nexit 3\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.ops","version":"1.0.0","publisher":"test","commands":[
		{"id":"status","path":["status"],"summary":"Show status","inputs":[` + env + `],` +
			managed("status", `{"kind":"structured","schema":{"type":"object","properties":{"env":{"type":"string"}},"required":["env"],"additionalProperties":false}}`) + `,"effects":{"class":"read"}},
		{"id":"deploy","path":["deploy"],"summary":"Deploy","inputs":[` + env + `,{"id":"count","type":"integer","minimum":1,"maximum":5,"default":1}],` +
			managed("deploy", `{"kind":"text"}`) + `,"effects":{"class":"write"}},
		{"id":"wipe","path":["wipe"],"summary":"Wipe",` + managed("wipe", `{"kind":"text"}`) + `,"effects":{"class":"destructive"}},
		{"id":"plain","path":["plain"],"summary":"Plain",` + managed("plain", `{"kind":"text"}`) + `,"effects":{"class":"external"}},
		{"id":"fail","path":["fail"],"summary":"Fail",` + managed("fail", `{"kind":"text"}`) + `,"effects":{"class":"read"}}]}`,
	})
	testhome.WriteFiles(t, filepath.Join(dir, "hidden"), map[string]string{
		"bin/secret": text("secret"),
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.hidden","version":"1.0.0","publisher":"test","commands":[
		{"id":"secret","path":["secret"],"summary":"Secret",` + managed("secret", `{"kind":"text"}`) + `,"effects":{"class":"read"}}]}`,
	})
	testhome.InstallPinned(t, filepath.Join(dir, "data"), filepath.Join(dir, "ops"))
	a := testhome.InstallPinned(t, filepath.Join(dir, "data"), filepath.Join(dir, "hidden"))
	testhome.Apply(t, a, dispatchProfile)
	return dir, a
}

// dispatchTool lists the endpoint and returns its one tool.
func dispatchTool(t *testing.T, cs *sdk.ClientSession) *sdk.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.NextCursor != "" {
		t.Fatalf("the dispatch projection lists %d tools (next cursor %q), want exactly one", len(res.Tools), res.NextCursor)
	}
	return res.Tools[0]
}

// dcall calls the dispatch tool with args and returns the answer and
// whether the result was an error.
func dcall(t *testing.T, cs *sdk.ClientSession, name, args string) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	return envelopeOf(t, res), res.IsError
}

func results(t *testing.T, ans map[string]any) []map[string]any {
	t.Helper()
	rs, _ := ans["results"].([]any)
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = r.(map[string]any)
	}
	return out
}

// fingerprint asks help for identity's schemaFingerprint.
func fingerprint(t *testing.T, cs *sdk.ClientSession, name, identity string) string {
	t.Helper()
	ans, isErr := dcall(t, cs, name, `{"help":"`+identity+`"}`)
	if isErr {
		t.Fatalf("help %s: %v", identity, ans)
	}
	return ans["help"].(map[string]any)["schemaFingerprint"].(string)
}

var reDispatchName = regexp.MustCompile(`^request__[0-9a-f]{64}$`)

func TestDispatchListAndHelp(t *testing.T) {
	dir, _ := dispatchHome(t)
	cs := connect(t, dir)
	tool := dispatchTool(t, cs)
	if !reDispatchName.MatchString(tool.Name) || tool.Annotations != nil {
		t.Errorf("the dispatch tool is %q with annotations %+v", tool.Name, tool.Annotations)
	}

	ans, isErr := dcall(t, cs, tool.Name, `{"help":true}`)
	got, _ := json.Marshal(ans)
	want := `{"help":{"commands":[` +
		`"test.ops/deploy(env:stage|prod, …) write, needs fingerprint — Deploy",` +
		`"test.ops/fail() read — Fail",` +
		`"test.ops/plain() external, needs fingerprint — Plain",` +
		`"test.ops/status(env:stage|prod) read — Show status",` +
		`"test.ops/wipe() destructive, needs fingerprint — Wipe"],` +
		`"maxOps":16,"verbs":["invocations.wait(ids:array, …) read — Wait until invocations end, at most timeoutMs (0 looks once); expiry is no error"]},"ok":true}`
	if isErr || string(got) != want {
		t.Errorf("help true:\n got %s\nwant %s", got, want)
	}

	ans, isErr = dcall(t, cs, tool.Name, `{"help":"test.ops/deploy"}`)
	h, _ := ans["help"].(map[string]any)
	if isErr || h["op"] != "test.ops/deploy" || h["effects"] != "write" || h["fingerprintRequired"] != true ||
		!regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(fmt.Sprint(h["schemaFingerprint"])) {
		t.Errorf("help test.ops/deploy: %v", ans)
	}
	in, _ := json.Marshal(h["inputSchema"])
	if !strings.Contains(string(in), `"count"`) || !strings.Contains(string(in), `"required":["env"]`) {
		t.Errorf("help test.ops/deploy inputSchema %s", in)
	}
	out, _ := json.Marshal(h["resultSchema"])
	if !strings.Contains(string(out), `"invocationId"`) {
		t.Errorf("help test.ops/deploy resultSchema %s", out)
	}

	// A hidden command and an unknown one get the same answer.
	hidden, isErr1 := dcall(t, cs, tool.Name, `{"help":"test.hidden/secret"}`)
	unknown, isErr2 := dcall(t, cs, tool.Name, `{"help":"test.nosuch/secret"}`)
	hm, _ := json.Marshal(hidden)
	um, _ := json.Marshal(unknown)
	if !isErr1 || !isErr2 || strings.Replace(string(hm), "test.hidden", "test.nosuch", 1) != string(um) ||
		!strings.Contains(string(um), `"code":"unknown_op"`) {
		t.Errorf("help on a hidden command %s (isError %v), on an unknown one %s (isError %v)", hm, isErr1, um, isErr2)
	}
}

// TestDispatchBadInput: every refusal, with its exact answer. Nothing of
// a refused call runs; a refused op does not stop the others.
func TestDispatchBadInput(t *testing.T) {
	dir, a := dispatchHome(t)
	cs := connect(t, dir)
	name := dispatchTool(t, cs).Name
	deployFP := fingerprint(t, cs, name, "test.ops/deploy")
	seventeen := strings.TrimSuffix(strings.Repeat(`{"op":"test.ops/status","args":{"env":"stage"}},`, 17), ",")

	tests := []struct {
		name, args string
		isError    bool
		want       string   // the answer, with invocation ids as ID and schemas as SCHEMA
		records    []string // the invocations recorded, oldest first: "command outcome/reason"
	}{
		{"unknown op", `{"ops":[{"op":"test.ops/nosuch"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/nosuch","error":{"code":"unknown_op","message":"unknown op \"test.ops/nosuch\"; {\"help\":true} lists the commands this endpoint runs"}}]}`, nil},
		{"op not visible to the task", `{"ops":[{"op":"test.hidden/secret"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.hidden/secret","error":{"code":"unknown_op","message":"unknown op \"test.hidden/secret\"; {\"help\":true} lists the commands this endpoint runs"}}]}`, nil},
		{"a built-in command is no op", `{"ops":[{"op":"profile apply"},{"op":"trust/add"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"profile apply","error":{"code":"unknown_op","message":"unknown op \"profile apply\"; {\"help\":true} lists the commands this endpoint runs"}},` +
				`{"ok":false,"op":"trust/add","error":{"code":"unknown_op","message":"unknown op \"trust/add\"; {\"help\":true} lists the commands this endpoint runs"}}]}`, nil},
		{"unknown argument", `{"ops":[{"op":"test.ops/status","args":{"env":"stage","colour":"red"}}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/status","invocationId":"ID","outcome":"rejected","reason":"invalid_input","error":{"code":"invalid_input","message":"property \"colour\": there is no input \"colour\"; the inputs are env"},"schema":SCHEMA}]}`,
			[]string{"test.ops/status rejected/invalid_input"}},
		{"missing fingerprint", `{"ops":[{"op":"test.ops/deploy","args":{"env":"stage"}}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/deploy","error":{"code":"fingerprint_required","message":"test.ops/deploy declares effects \"write\": its op needs \"fingerprint\", the schemaFingerprint of its schema (below, or from {\"help\":\"test.ops/deploy\"}); nothing ran"},"schema":SCHEMA}]}`, nil},
		{"missing fingerprint, external", `{"ops":[{"op":"test.ops/plain"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/plain","error":{"code":"fingerprint_required","message":"test.ops/plain declares effects \"external\": its op needs \"fingerprint\", the schemaFingerprint of its schema (below, or from {\"help\":\"test.ops/plain\"}); nothing ran"},"schema":SCHEMA}]}`, nil},
		{"stale fingerprint", `{"ops":[{"op":"test.ops/deploy","args":{"env":"stage"},"fingerprint":"sha256:0000"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/deploy","error":{"code":"fingerprint_stale","message":"the fingerprint \"sha256:0000\" is not the current schemaFingerprint of test.ops/deploy: its schema is below; check the args against it and send its fingerprint; nothing ran"},"schema":SCHEMA}]}`, nil},
		{"another command's fingerprint", `{"ops":[{"op":"test.ops/wipe","fingerprint":"` + deployFP + `"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/wipe","error":{"code":"fingerprint_stale","message":"the fingerprint \"` + deployFP + `\" is not the current schemaFingerprint of test.ops/wipe: its schema is below; check the args against it and send its fingerprint; nothing ran"},"schema":SCHEMA}]}`, nil},
		{"batch over the cap", `{"ops":[` + seventeen + `]}`, true,
			`{"ok":false,"error":{"code":"too_many_ops","message":"17 ops; a call takes at most 16: split the batch; nothing ran"}}`, nil},
		{"identity field in an op", `{"ops":[{"op":"test.ops/status","args":{"env":"stage"},"task":"owner"}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/status","error":{"code":"invalid_op","message":"op #0: unknown member \"task\" (an op has only op, args, fingerprint, detach: who runs it and with which rights is the server's launch binding); an op is {\"op\": \"pkg/cmd\", \"args\": {...}, \"fingerprint\"?: \"sha256:…\", \"detach\"?: true}; nothing ran"}}]}`, nil},
		{"identity field in args", `{"ops":[{"op":"test.ops/status","args":{"env":"stage","task":"owner"}}]}`, false,
			`{"ok":false,"results":[{"ok":false,"op":"test.ops/status","invocationId":"ID","outcome":"rejected","reason":"invalid_input","error":{"code":"invalid_input","message":"property \"task\": there is no input \"task\"; the inputs are env"},"schema":SCHEMA}]}`,
			[]string{"test.ops/status rejected/invalid_input"}},
		{"identity field in the call", `{"ops":[],"subject":"root"}`, true,
			`{"ok":false,"error":{"code":"invalid_request","message":"unknown member \"subject\"; call with {\"help\":true}, {\"help\":\"pkg/cmd\"} or {\"ops\":[{\"op\":\"pkg/cmd\",\"args\":{...}}]}; nothing ran"}}`, nil},
		{"duplicate ops run once each, in order", `{"ops":[{"op":"test.ops/status","args":{"env":"stage"}},{"op":"test.ops/status","args":{"env":"prod"}}]}`, false,
			`{"ok":true,"results":[{"ok":true,"op":"test.ops/status","invocationId":"ID","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"stage"}}},` +
				`{"ok":true,"op":"test.ops/status","invocationId":"ID","outcome":"succeeded","commandResult":{"kind":"structured","data":{"env":"prod"}}}]}`,
			[]string{"test.ops/status succeeded/", "test.ops/status succeeded/"}},
		{"nothing to do", `{}`, true,
			`{"ok":false,"error":{"code":"invalid_request","message":"there is nothing to do; call with {\"help\":true}, {\"help\":\"pkg/cmd\"} or {\"ops\":[{\"op\":\"pkg/cmd\",\"args\":{...}}]}; nothing ran"}}`, nil},
		{"ops not an array", `{"ops":{"op":"test.ops/status"}}`, true,
			`{"ok":false,"error":{"code":"invalid_request","message":"ops is a JSON object, not an array; call with {\"help\":true}, {\"help\":\"pkg/cmd\"} or {\"ops\":[{\"op\":\"pkg/cmd\",\"args\":{...}}]}; nothing ran"}}`, nil},
		{"duplicate member", `{"ops":[],"ops":[]}`, true,
			`{"ok":false,"error":{"code":"invalid_request","message":"the arguments are not valid JSON: json_duplicate_key at /ops (byte 10): member \"ops\" appears more than once; call with {\"help\":true}, {\"help\":\"pkg/cmd\"} or {\"ops\":[{\"op\":\"pkg/cmd\",\"args\":{...}}]}; nothing ran"}}`, nil},
	}
	schema := regexp.MustCompile(`"schema":\{"op":.*?"schemaFingerprint":"sha256:[0-9a-f]{64}"\}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := records(t, a)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(tt.args)})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			got := schema.ReplaceAllString(invocationIDs.ReplaceAllString(text, `"invocationId":"ID"`), `"schema":SCHEMA`)
			if res.IsError != tt.isError || got != tt.want {
				t.Errorf("isError %v, answer\n%s\nwant isError %v,\n%s", res.IsError, got, tt.isError, tt.want)
			}
			if added := records(t, a)[len(before):]; fmt.Sprint(added) != fmt.Sprint(tt.records) {
				t.Errorf("recorded %v, want %v", added, tt.records)
			}
		})
	}
}

var invocationIDs = regexp.MustCompile(`"invocationId":"[0-9a-f]{32}"`)

// records lists the recorded invocations, oldest first, as "command
// outcome/reason".
func records(t *testing.T, a *admin.Admin) []string {
	t.Helper()
	h := local.New(a.DataDir)
	invs, err := h.Core().Invocations(1000)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for i := len(invs) - 1; i >= 0; i-- {
		out = append(out, invs[i].Identity+" "+invs[i].Outcome+"/"+invs[i].Reason)
	}
	return out
}

// TestDispatchBatch: a read op, a fingerprinted write op and a failing op
// in one call; each is its own invocation, the failed one carries its
// schema, and the call is no error.
func TestDispatchBatch(t *testing.T) {
	dir, a := dispatchHome(t)
	cs := connect(t, dir)
	name := dispatchTool(t, cs).Name
	fp := fingerprint(t, cs, name, "test.ops/deploy")
	ans, isErr := dcall(t, cs, name, `{"ops":[
		{"op":"test.ops/status","args":{"env":"prod"}},
		{"op":"test.ops/deploy","args":{"env":"stage","count":2},"fingerprint":"`+fp+`"},
		{"op":"test.ops/fail"}]}`)
	rs := results(t, ans)
	if isErr || ans["ok"] != false || len(rs) != 3 {
		t.Fatalf("isError %v, answer %v", isErr, ans)
	}
	for i, want := range []struct {
		ok      bool
		outcome string
	}{{true, "succeeded"}, {true, "succeeded"}, {false, "command_failed"}} {
		if rs[i]["ok"] != want.ok || rs[i]["outcome"] != want.outcome {
			t.Errorf("op %d: %v, want ok %v outcome %s", i, rs[i], want.ok, want.outcome)
		}
	}
	if rs[2]["schema"] == nil || rs[0]["schema"] != nil {
		t.Errorf("the failed op carries no schema, or a succeeded one does: %v", rs)
	}
	if got := records(t, a); fmt.Sprint(got) != "[test.ops/status succeeded/ test.ops/deploy succeeded/ test.ops/fail command_failed/]" {
		t.Errorf("records %v", got)
	}
	ids := map[any]bool{rs[0]["invocationId"]: true, rs[1]["invocationId"]: true, rs[2]["invocationId"]: true}
	if len(ids) != 3 {
		t.Errorf("the ops share invocation ids: %v", rs)
	}
}

// TestDispatchMatchesToolCall: an op answers with the envelope a per-tool
// call of the same command gives, member for member (one mapping).
func TestDispatchMatchesToolCall(t *testing.T) {
	dir, a := dispatchHome(t)
	cs := connect(t, dir)
	name := dispatchTool(t, cs).Name
	ans, _ := dcall(t, cs, name, `{"ops":[{"op":"test.ops/status","args":{"env":"prod"}},{"op":"test.ops/status","args":{"env":"dev"}}]}`)
	rs := results(t, ans)

	testhome.Apply(t, a, strings.Replace(dispatchProfile, `"projection":"dispatch"`, `"projection":"tools"`, 1))
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var status string
	for _, tl := range list.Tools {
		if tl.Title == "Show status" {
			status = tl.Name
		}
	}
	if len(list.Tools) != 5 || status == "" {
		t.Fatalf("the tools projection lists %d tools", len(list.Tools))
	}
	for i, args := range []string{`{"env":"prod"}`, `{"env":"dev"}`} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: status, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		env := envelopeOf(t, res)
		op := rs[i]
		for k, v := range env {
			if k == "invocationId" {
				continue
			}
			if fmt.Sprint(op[k]) != fmt.Sprint(v) {
				t.Errorf("%s: the op's %s is %v, the tool call's %v", args, k, op[k], v)
			}
		}
		for k := range op {
			if _, ok := env[k]; !ok && k != "ok" && k != "op" && k != "error" && k != "schema" {
				t.Errorf("%s: the op has %s, the tool call's envelope does not", args, k)
			}
		}
	}
	// The old dispatch name is stale in the new revision.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(`{"help":true}`)}); err == nil ||
		!strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("the dispatch name of an older revision: %v", err)
	}
}

// dispatchBudget is the most the dispatch projection may advertise,
// whatever the number of commands (seed gate "advertised-schema budget").
const dispatchBudget = 2048

// TestDispatchBudget lists the dispatch projection of 10, 200 and 2,000
// commands and measures its one tool as listed: the same bytes each time,
// and at most dispatchBudget.
func TestDispatchBudget(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{10, 200, 2000} {
		dir := manyCommands(t, n, "dispatch")
		cs := connect(t, dir)
		tool := dispatchTool(t, cs)
		data, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		sizes[n] = len(data)
		if len(data) > dispatchBudget {
			t.Errorf("%d commands: the dispatch tool advertises %d bytes, more than %d", n, len(data), dispatchBudget)
		}
		wt := &wire.Tool{Name: tool.Name, Title: tool.Title, Description: tool.Description}
		wt.InputSchema, _ = json.Marshal(tool.InputSchema)
		wt.OutputSchema, _ = json.Marshal(tool.OutputSchema)
		if got := mcp.AdvertisedBytes(wt); got != len(data) {
			t.Errorf("AdvertisedBytes %d, as listed %d", got, len(data))
		}
	}
	if sizes[10] != sizes[200] || sizes[200] != sizes[2000] {
		t.Errorf("the advertised size grows with the commands: %v", sizes)
	}
	t.Logf("advertised bytes by commands: %v", sizes)
}

// manyCommands installs n eligible commands in packages of at most 500
// (the descriptor allows 512) and exposes them all under projection.
func manyCommands(t testing.TB, n int, projection string) string {
	t.Helper()
	dir := testhome.TempDir(t)
	var a *admin.Admin
	var expose []string
	for p := 0; p*500 < n; p++ {
		pkg := fmt.Sprintf("test.many%d", p)
		var cmds []string
		for i := p * 500; i < min(n, (p+1)*500); i++ {
			cmds = append(cmds, fmt.Sprintf(`{"id":"c%d","path":["m%d","c%d"],"summary":"Command %d",
			"inputs":[{"id":"count","type":"integer","minimum":1,"maximum":5,"default":1},{"id":"env","type":"string","enum":["stage","prod"],"required":true}],
			"execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"read"}}`, i, p, i, i))
		}
		rel := filepath.Join(dir, pkg)
		testhome.WriteFiles(t, rel, map[string]string{
			"bin/ok":              "#!/bin/sh\n" + reportText + "\n",
			"rukh-extension.json": `{"schema":"rukh.extension/2","package":"` + pkg + `","version":"1.0.0","publisher":"test","commands":[` + strings.Join(cmds, ",") + `]}`,
		})
		a = testhome.InstallPinned(t, filepath.Join(dir, "data"), rel)
		expose = append(expose, `"`+pkg+`/*"`)
	}
	testhome.Apply(t, a, `{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":[`+strings.Join(expose, ",")+`],"task":"agent","projection":"`+projection+`"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["*/*"],"deadlineMs":5000,"maxConcurrent":16,"enforcement":"host"}}}`)
	return dir
}

// TestDispatchDetachAndWait: a detached op answers with its invocation id
// at once; invocations.wait observes it to its outcome, with one entry per
// id in order and an id that does not exist as unknown, not as an error.
func TestDispatchDetachAndWait(t *testing.T) {
	dir, a := dispatchHome(t)
	cs := connect(t, dir)
	name := dispatchTool(t, cs).Name
	ans, isErr := dcall(t, cs, name, `{"ops":[{"op":"test.ops/status","args":{"env":"prod"},"detach":true}]}`)
	rs := results(t, ans)
	if isErr || len(rs) != 1 || rs[0]["ok"] != true || rs[0]["detached"] != true || len(fmt.Sprint(rs[0]["invocationId"])) != 32 || rs[0]["outcome"] != nil {
		t.Fatalf("detached op: %v", ans)
	}
	id := rs[0]["invocationId"].(string)
	missing := strings.Repeat("0", 32)
	ans, isErr = dcall(t, cs, name, `{"ops":[{"op":"invocations.wait","args":{"ids":["`+id+`","`+missing+`"],"timeoutMs":20000}}]}`)
	rs = results(t, ans)
	if isErr || len(rs) != 1 || rs[0]["ok"] != true {
		t.Fatalf("wait: %v", ans)
	}
	w, _ := json.Marshal(rs[0]["wait"])
	var wait struct {
		Entries []struct {
			ID, Status, Outcome string
			Terminal            bool
		}
		AllTerminal, TimedOut               bool
		Terminal, Pending, Stopped, Unknown []string
	}
	if err := json.Unmarshal(w, &wait); err != nil {
		t.Fatal(err)
	}
	if len(wait.Entries) != 2 || wait.Entries[0].ID != id || wait.Entries[0].Outcome != "succeeded" || !wait.Entries[0].Terminal ||
		wait.Entries[1].Status != "unknown" || fmt.Sprint(wait.Terminal) != "["+id+"]" || fmt.Sprint(wait.Unknown) != "["+missing+"]" || wait.TimedOut {
		t.Errorf("wait answered %s", w)
	}
	if got := records(t, a); fmt.Sprint(got) != "[test.ops/status succeeded/]" {
		t.Errorf("records %v", got)
	}

	// Bad waits are refused per op, with the verb's schema.
	for _, tt := range []struct{ args, want string }{
		{`{"ids":[]}`, "invalid_argument"},
		{`{"ids":["` + id + `"],"timeoutMs":-1}`, `property \"timeoutMs\": give an integer from 0 to 600000; nothing was observed`},
		{`{"ids":["` + id + `"],"task":"owner"}`, `property \"task\": there is no such argument; the arguments are ids and timeoutMs; nothing was observed`},
	} {
		ans, _ := dcall(t, cs, name, `{"ops":[{"op":"invocations.wait","args":`+tt.args+`}]}`)
		got, _ := json.Marshal(ans)
		rs := results(t, ans)
		if len(rs) != 1 || rs[0]["ok"] != false || rs[0]["schema"] == nil || !strings.Contains(string(got), tt.want) {
			t.Errorf("wait %s: %s, want %s", tt.args, got, tt.want)
		}
	}
}

// TestDispatchProgress: with a progressToken, a batch reports one
// sequence, ops done over ops, with each command's own progress a
// fraction of its op ("op i of n (op): its message"), and each op as it
// is done ("op i of n (op) done"); the progress never goes back, and a
// report that would not increase it (the command's own going back, its
// op's end once the command reached it) is not sent.
func TestDispatchProgress(t *testing.T) {
	dir, _ := dispatchHome(t)
	ctx := context.Background()
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var mu sync.Mutex
	var got []string
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%v/%v %s", req.Params.Progress, req.Params.Total, req.Params.Message))
		},
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: dispatchTool(t, cs).Name,
		Arguments: json.RawMessage(`{"ops":[{"op":"test.ops/status","args":{"env":"stage"}},{"op":"test.ops/fail"}]}`)}
	params.SetProgressToken("batch-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0.3333333333333333/2 op 1 of 2 (test.ops/status): step 1",
		"0.6666666666666666/2 op 1 of 2 (test.ops/status): step 2",
		"1/2 op 1 of 2 (test.ops/status): step 3",
		"2/2 op 2 of 2 (test.ops/fail) done",
	}
	// Notifications may trail the answer by a moment; wait for them by
	// steps, not by a clock budget.
	for range 200 {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("progress %q, want %q", got, want)
	}
}

// TestDispatchApproval: an op of a command the task keeps for the owner's
// approval is refused approval_required with the approval's id in its
// envelope (the same one when repeated before the answer); once the owner
// approved it, the same op runs once, and the next asks anew (ADR 0007).
func TestDispatchApproval(t *testing.T) {
	dir, a := dispatchHome(t)
	// Approval needs a task that is not host (a host command could
	// approve its own call), so the helper that applies restricted.
	profile := strings.Replace(dispatchProfile,
		`"agent":{"commands":["test.ops/*"],`, `"agent":{"requireApproval":["destructive"],"commands":["test.ops/*"],`, 1)
	testhome.Apply(t, a, strings.Replace(profile, `"maxConcurrent":4,"enforcement":"host"}}}`, `"maxConcurrent":4,"enforcement":"restricted"}}}`, 1))
	helper := filepath.Join(t.TempDir(), "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		t.Fatalf("build the enforcement helper: %v", err)
	}
	core := invoke.New(filepath.Join(dir, "data"))
	core.Sandbox = helper
	srv := mcp.NewServer(mcp.Options{Host: local.NewCore(core), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	cs := connectTo(t, srv, nil, nil, nil)
	name := dispatchTool(t, cs).Name
	op := `{"ops":[{"op":"test.ops/wipe","fingerprint":"` + fingerprint(t, cs, name, "test.ops/wipe") + `"}]}`
	first := firstOp(t, cs, name, op)
	id, _ := first["approvalId"].(string)
	if first["ok"] != false || first["reason"] != "approval_required" || len(id) != 32 {
		t.Fatalf("first op: %v", first)
	}
	if again := firstOp(t, cs, name, op); again["approvalId"] != id {
		t.Errorf("the op repeated before the answer: %v, want approval %s", again, id)
	}
	if _, err := local.New(filepath.Join(dir, "data")).Core().Approve(id); err != nil {
		t.Fatal(err)
	}
	if ran := firstOp(t, cs, name, op); ran["ok"] != true || ran["outcome"] != "succeeded" {
		t.Errorf("the approved op: %v", ran)
	}
	if next := firstOp(t, cs, name, op); next["reason"] != "approval_required" || next["approvalId"] == id {
		t.Errorf("the op after the approval was used: %v, want a new approval", next)
	}
	if got := records(t, a); fmt.Sprint(got) != "[test.ops/wipe rejected/approval_required test.ops/wipe rejected/approval_required test.ops/wipe succeeded/ test.ops/wipe rejected/approval_required]" {
		t.Errorf("records %v", got)
	}
}

// firstOp makes a dispatch call that must not fail as a whole and returns
// its first op's result.
func firstOp(t *testing.T, cs *sdk.ClientSession, name, args string) map[string]any {
	t.Helper()
	ans, isErr := dcall(t, cs, name, args)
	if rs := results(t, ans); isErr || len(rs) == 0 {
		t.Fatalf("%s: the call failed as a whole: %v", args, ans)
	}
	return results(t, ans)[0]
}
