package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// rawSession is a server run as `rukh mcp` runs it (Run over pipes), with
// the client side written and read as raw JSON-RPC lines, so a test sees
// exactly the bytes a client gets.
type rawSession struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	ran   chan error
	stop  context.CancelFunc
}

func newRawSession(t *testing.T, dir string) *rawSession {
	t.Helper()
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	s := &rawSession{t: t, in: fromClient, lines: make(chan string, 64), ran: make(chan error, 1), stop: stop}
	go func() { s.ran <- srv.Run(ctx, &sdk.IOTransport{Reader: toServer, Writer: fromServer}) }()
	go func() {
		sc := bufio.NewScanner(toClient)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		fromClient.Close()
		stop()
		<-s.ran
		toClient.Close()
	})
	return s
}

func (s *rawSession) send(msg string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, msg+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// response returns the response to id, skipping notifications.
func (s *rawSession) response(id int) map[string]json.RawMessage {
	s.t.Helper()
	return s.responseTo(fmt.Sprint(id))
}

// responseTo waits for the response whose id is, as JSON, id.
func (s *rawSession) responseTo(id string) map[string]json.RawMessage {
	s.t.Helper()
	timeout := time.After(30 * time.Second) // a hang guard, not a speed check
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("the server closed its output before answering request %s", id)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				s.t.Fatalf("not JSON: %q", line)
			}
			if string(m["id"]) == id {
				return m
			}
		case <-timeout:
			s.t.Fatalf("no response to request %s", id)
		}
	}
}

// meta2026 is the per-request _meta of protocol 2026-07-28.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// initialize opens a 2025-11-25 session.
func (s *rawSession) initialize() {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := s.response(0); r["error"] != nil {
		s.t.Fatalf("initialize: %s", r["error"])
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// firstTool lists the tools (with meta, if any) and returns the first name.
func (s *rawSession) firstTool(meta string) string {
	s.t.Helper()
	params := "{}"
	if meta != "" {
		params = "{" + meta + "}"
	}
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + params + `}`)
	r := s.response(1)
	var res struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(r["result"], &res); err != nil || len(res.Tools) == 0 {
		s.t.Fatalf("tools/list: %s %s", r["result"], r["error"])
	}
	return res.Tools[0].Name
}

// Under 2026-07-28 every tools/call result says "resultType": "complete" —
// success and refusal alike — as tools/list does; under 2025-11-25 the
// member does not exist. Clients that enforce the 2026-07-28 result shape
// (the Python SDK 2.0, the MCP Inspector 2.12) reject a result without it.
func TestCallResultType(t *testing.T) {
	dir, _ := home(t, 1, "test.*/*")
	for _, tc := range []struct {
		protocol string
		meta     string
		want     string // the resultType member, raw; "" for none
	}{
		{"2026-07-28", meta2026, `"complete"`},
		{"2025-11-25", "", ""},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			s := newRawSession(t, dir)
			if tc.meta == "" {
				s.initialize()
			}
			name := s.firstTool(tc.meta)
			sep := ""
			if tc.meta != "" {
				sep = ","
			}
			for i, args := range []struct{ args, outcome string }{
				{`{"count":2}`, "succeeded"},
				{`{"count":9}`, "rejected"},    // invalid input: a refusal is a result
				{`{"env":"prod"}`, "rejected"}, // denied
			} {
				id := 10 + i
				s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s%s}}`, id, name, args.args, sep, tc.meta))
				r := s.response(id)
				var res map[string]json.RawMessage
				if err := json.Unmarshal(r["result"], &res); err != nil {
					t.Fatalf("call %s: no result: %s", args.args, r["error"])
				}
				if got := string(res["resultType"]); got != tc.want {
					t.Errorf("call %s: resultType %q, want %q", args.args, got, tc.want)
				}
				if !strings.Contains(string(res["structuredContent"]), `"outcome":"`+args.outcome+`"`) {
					t.Errorf("call %s: %s, want outcome %s", args.args, res["structuredContent"], args.outcome)
				}
			}
		})
	}
}

// Continuation input that the server never asked for is refused before
// dispatch, whatever its value: a JSON-RPC error, and no invocation.
func TestUnsolicitedContinuationRefused(t *testing.T) {
	dir, _ := home(t, 1, "test.*/*")
	for _, tc := range []struct{ name, member, field string }{
		{"inputResponses empty", `"inputResponses":{}`, "inputResponses"},
		{"inputResponses null", `"inputResponses":null`, "inputResponses"},
		{"inputResponses answer", `"inputResponses":{"q1":{"action":"accept","content":{"ok":true}}}`, "inputResponses"},
		{"requestState empty", `"requestState":""`, "requestState"},
		{"requestState", `"requestState":"opaque"`, "requestState"},
		{"both", `"requestState":"x","inputResponses":{}`, "inputResponses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawSession(t, dir)
			name := s.firstTool(meta2026)
			s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":{},%s,%s}}`, name, tc.member, meta2026))
			r := s.response(7)
			var e struct {
				Code    int
				Message string
			}
			if err := json.Unmarshal(r["error"], &e); err != nil || r["result"] != nil {
				t.Fatalf("want a JSON-RPC error, got %s %s", r["result"], r["error"])
			}
			if e.Code != -32602 || !strings.Contains(e.Message, `"`+tc.field+`"`) || !strings.Contains(e.Message, "continuation input is not supported") {
				t.Errorf("error %d %q", e.Code, e.Message)
			}
			// The session goes on, and the next plain call runs.
			s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":%q,"arguments":{},%s}}`, name, meta2026))
			if r := s.response(8); !strings.Contains(string(r["result"]), `"outcome":"succeeded"`) {
				t.Errorf("the next call: %s %s", r["result"], r["error"])
			}
		})
	}
	// Nothing ran for the refused calls: one invocation per subtest, the
	// plain call after the refusal.
	invs, err := local.New(filepath.Join(dir, "data")).Core().Invocations(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(invs) != 6 {
		t.Errorf("%d invocations recorded, want 6 (only the plain calls)", len(invs))
	}
}

// When `rukh mcp` is told to stop (SIGTERM or Ctrl-C end Run's context)
// with a call running, the call is stopped at once and recorded as
// cancelled/interrupted — never left to finish as succeeded — and Run
// returns only once it is finalized.
func TestStopInterruptsCalls(t *testing.T) {
	dir := slowSleepHome(t)
	s := newRawSession(t, dir)
	name := s.firstTool(meta2026)
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":%q,"arguments":{},%s}}`, name, meta2026))
	host := local.New(filepath.Join(dir, "data"))
	waitOpen(t, host)
	s.stop() // what SIGTERM does to `rukh mcp`
	select {
	case <-s.ran:
	case <-time.After(30 * time.Second): // a hang guard; the command sleeps 60 s
		t.Fatal("Run did not return after its context ended")
	}
	invs, err := host.Core().Invocations(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(invs) != 1 || invs[0].Open() || invs[0].Outcome != "cancelled" || invs[0].Reason != "interrupted" {
		t.Fatalf("recorded %+v, want one finalized cancelled/interrupted", invs)
	}
	s.ran <- nil // for the cleanup
}

// slowSleepHome is a home whose agent task exposes one tool that sleeps
// for 60 s (longer than any test waits).
func slowSleepHome(t *testing.T) string {
	t.Helper()
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "slow")
	write(t, filepath.Join(rel, "bin", "slow"), "#!/bin/sh\nsleep 60\n"+reportText+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.slow","version":"1.0.0","publisher":"test","commands":[
		{"id":"slow","path":["slow"],"summary":"Slow","execute":{"mapping":"managed","program":"bin/slow","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(dir, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":["test.slow/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":120000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":120000,"maxConcurrent":4,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitOpen waits until the newest invocation is recorded and still open.
func waitOpen(t *testing.T, host *local.Host) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second) // a hang guard
	for {
		invs, _ := host.Core().Invocations(1)
		if len(invs) == 1 && invs[0].Open() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A diagnostics log nobody reads (a stderr pipe the MCP host never
// drains) never holds up a call: lines past the queue are dropped, and the
// call completes and is answered.
func TestUnreadDiagnosticsLogDoesNotBlock(t *testing.T) {
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "rel")
	write(t, filepath.Join(rel, "bin", "noisy"), "#!/bin/sh\ni=0\nwhile [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done\n"+reportText+"\n", 0o755)
	write(t, filepath.Join(rel, "rukh-extension.json"), `{"schema":"rukh.extension/2","package":"test.noisy","version":"1.0.0","publisher":"test","commands":[
		{"id":"noisy","path":["noisy"],"summary":"Noisy","execute":{"mapping":"managed","program":"bin/noisy","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`, 0o644)
	a := testhome.InstallPinned(t, filepath.Join(dir, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"team","cli":{"task":"owner"},"mcp":{"expose":["test.noisy/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":20000,"maxConcurrent":4,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}
	_, never := io.Pipe() // a log whose reader never reads
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test", Diagnostics: never})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names, _ := listAll(t, cs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names[0]})
	if err != nil || res.IsError {
		t.Fatalf("the call did not complete: %v %+v", err, res)
	}
}

// A tools/call whose request id the session already used runs nothing:
// it is answered with a JSON-RPC error naming the id, whether the first
// call is finished or not, and ids of another type (1 and "1") stay
// distinct (invariant I10: a repeated request never re-runs a command).
func TestRepeatedRequestIDRunsOnce(t *testing.T) {
	dir, _ := home(t, 1, "test.*/*")
	s := newRawSession(t, dir)
	name := s.firstTool(meta2026)
	call := func(id string) map[string]json.RawMessage {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{},%s}}`, id, name, meta2026))
		return s.responseTo(id)
	}
	if r := call("11"); !strings.Contains(string(r["result"]), `"outcome":"succeeded"`) {
		t.Fatalf("first call: %s %s", r["result"], r["error"])
	}
	r := call("11")
	var e struct {
		Code    int
		Message string
	}
	if err := json.Unmarshal(r["error"], &e); err != nil || r["result"] != nil || e.Code != -32600 || !strings.Contains(e.Message, "request id 11 was already used") {
		t.Errorf("the repeated id: %s %s", r["result"], r["error"])
	}
	if r := call(`"11"`); !strings.Contains(string(r["result"]), `"outcome":"succeeded"`) {
		t.Errorf(`id "11" after 11: %s %s`, r["result"], r["error"])
	}
	invs, err := local.New(filepath.Join(dir, "data")).Core().Invocations(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(invs) != 2 {
		t.Errorf("%d invocations recorded, want 2 (11 once, \"11\" once)", len(invs))
	}
}
