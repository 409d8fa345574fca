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
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// echo returns the typed inputs it received ({id: {value, explicit}}) as
// its structured result, so both doors can be compared on what the
// command actually got.
const echoProgram = `#!/bin/sh
exec python3 -c '
import json, os
ch = os.fdopen(3, "r+b", buffering=0)
frame = json.loads(ch.readline())
report = {"type": "complete", "token": os.environ["RUKH_IPC_TOKEN"], "status": "succeeded",
          "commandResult": {"kind": "structured", "data": frame["inputs"]}}
ch.write(json.dumps(report).encode() + b"\n")
'
`

func inputSchema(valueSchema string) string {
	return `{"type":"object","properties":{"value":` + valueSchema + `,"explicit":{"type":"boolean"}},"required":["value","explicit"],"additionalProperties":false}`
}

var echoDescriptor = `{"schema":"rukh.extension/2","package":"test.echo","version":"1.0.0","publisher":"test","commands":[
 {"id":"echo","path":["echo"],"summary":"Echo the typed inputs",
  "inputs":[
   {"id":"count","type":"integer","minimum":-5,"maximum":9007199254740993,"default":1},
   {"id":"ratio","type":"number"},
   {"id":"amount","type":"decimal","minimum":"0"},
   {"id":"tags","flag":"tag","type":"list","items":{"type":"string","maxLength":8},"maxItems":3},
   {"id":"verbose","type":"boolean","default":false},
   {"id":"env","type":"string","enum":["stage","prod"],"required":true},
   {"id":"name","positional":0,"type":"string","maxLength":5}],
  "execute":{"mapping":"managed","program":"bin/echo","result":{"kind":"structured","schema":
   {"type":"object","properties":{
     "count":` + inputSchema(`{"type":"integer"}`) + `,
     "ratio":` + inputSchema(`{"type":"number"}`) + `,
     "amount":` + inputSchema(`{"type":"string"}`) + `,
     "tags":` + inputSchema(`{"type":"array","items":{"type":"string"},"maxItems":3}`) + `,
     "verbose":` + inputSchema(`{"type":"boolean"}`) + `,
     "env":` + inputSchema(`{"type":"string"}`) + `,
     "name":` + inputSchema(`{"type":"string"}`) + `},
    "additionalProperties":false}}},
  "machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`

// TestParity runs one table of intents through the CLI, through MCP tools
// and through the dispatch projection's op (the op's envelope must be the
// tool call's, member for member), and requires the same outcome and, on success, the same typed inputs as
// the command received them (invariant I3, docs/invariants.md). Both
// doors are what a person and an agent run — the rukh binary and a
// `rukh mcp` process driven by the go-sdk client — in process and through
// rukhd (forEachHost); both hosts must give each case the same result,
// exit status, output and messages alike.
func TestParity(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the echo extension needs python3 (.ci/run installs it)")
	}
	rel := filepath.Join(testhome.TempDir(t), "src")
	testhome.WriteFiles(t, rel, map[string]string{"bin/echo": echoProgram, "rukh-extension.json": echoDescriptor})

	var same acrossHosts // what both doors said of each case
	forEachHost(t, func(t *testing.T, h *testHost) {
		home := filepath.Join(testhome.TempDir(t), "home")
		a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
		if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.echo/*"],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
			t.Fatal(err)
		}
		h.serve(t, home)
		env := []string{"RUKH_HOME=" + home, "PATH=" + os.Getenv("PATH")}
		// The dispatch door: the same release under the dispatch projection.
		dhome := filepath.Join(testhome.TempDir(t), "home-dispatch")
		da := testhome.InstallPinned(t, filepath.Join(dhome, "data"), rel)
		if _, _, err := da.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.echo/*"],"task":"owner","projection":"dispatch"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
			t.Fatal(err)
		}
		h.serve(t, dhome)

		// The MCP door.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		server := exec.Command(h.Rukh, "mcp")
		server.Env = env
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "parity", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: server}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		list, err := cs.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 1 {
			t.Fatalf("tools: %v %v", list, err)
		}
		tool := list.Tools[0].Name
		dserver := exec.Command(h.Rukh, "mcp")
		dserver.Env = []string{"RUKH_HOME=" + dhome, "PATH=" + os.Getenv("PATH")}
		ds, err := sdk.NewClient(&sdk.Implementation{Name: "parity", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: dserver}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ds.Close()
		dlist, err := ds.ListTools(ctx, nil)
		if err != nil || len(dlist.Tools) != 1 {
			t.Fatalf("dispatch tools: %v %v", dlist, err)
		}
		dtool := dlist.Tools[0].Name

		for _, tt := range parityCases {
			t.Run(tt.name, func(t *testing.T) {
				// The CLI door.
				cmd := exec.CommandContext(ctx, h.Rukh, append([]string{"echo", "--json"}, tt.cli...)...)
				cmd.Env = env
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				status := 0
				if err := cmd.Run(); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						t.Fatal(err)
					}
					status = ee.ExitCode()
				}

				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(tt.mcp)})
				if err != nil {
					t.Fatal(err)
				}
				// The text block carries the envelope's exact bytes; the SDK
				// client decodes structuredContent into float64s.
				raw := []byte(res.Content[0].(*sdk.TextContent).Text)
				var env struct {
					Outcome       string `json:"outcome"`
					Reason        string `json:"reason"`
					CommandResult *struct {
						Data json.RawMessage `json:"data"`
					} `json:"commandResult"`
				}
				if err := json.Unmarshal(raw, &env); err != nil {
					t.Fatal(err)
				}
				// The dispatch door: one op whose args are the tool's arguments
				// must answer with the tool call's envelope, member for member.
				dres, err := ds.CallTool(ctx, &sdk.CallToolParams{Name: dtool, Arguments: json.RawMessage(`{"ops":[{"op":"test.echo/echo","args":` + tt.mcp + `}]}`)})
				if err != nil {
					t.Fatal(err)
				}
				var dans struct {
					Results []map[string]json.RawMessage `json:"results"`
				}
				if err := json.Unmarshal([]byte(dres.Content[0].(*sdk.TextContent).Text), &dans); err != nil || len(dans.Results) != 1 {
					t.Fatalf("dispatch answered %s (%v)", dres.Content[0].(*sdk.TextContent).Text, err)
				}
				var tenv map[string]json.RawMessage
				json.Unmarshal(raw, &tenv)
				for k, v := range tenv {
					if k != "invocationId" && !sameJSON(t, v, dans.Results[0][k]) {
						t.Errorf("dispatch op's %s is %s, the tool call's %s", k, dans.Results[0][k], v)
					}
				}
				if _, ok := dans.Results[0]["invocationId"]; !ok || dres.IsError {
					t.Errorf("the dispatch op has no invocation, or the call is an error: %s", dres.Content[0].(*sdk.TextContent).Text)
				}

				said := fmt.Sprintf("CLI exit %d, stdout %q, stderr %q\nMCP", status, out.Bytes(), errOut.Bytes())
				for _, c := range res.Content {
					said += fmt.Sprintf(" %q", c.(*sdk.TextContent).Text)
				}
				same.record(h, tt.name, said)

				if tt.outcome == "succeeded" {
					if status != 0 || env.Outcome != "succeeded" {
						t.Fatalf("CLI exit %d (%s), MCP %s/%s", status, &errOut, env.Outcome, env.Reason)
					}
					if !sameJSON(t, out.Bytes(), env.CommandResult.Data) {
						t.Errorf("the command received different inputs:\nCLI %s\nMCP %s", out.Bytes(), env.CommandResult.Data)
					}
					return
				}
				if status != exitcode.Usage || env.Outcome != "rejected" || env.Reason != tt.outcome {
					t.Errorf("CLI exit %d (%s), MCP %s/%s; want exit 2 and rejected/%s", status, &errOut, env.Outcome, env.Reason, tt.outcome)
				}
			})
		}
	})
	same.check(t)
}

// parityCases are TestParity's intents: the CLI arguments and the MCP
// arguments of each, and the outcome both must have.
var parityCases = []struct {
	name    string
	cli     []string
	mcp     string
	outcome string // "succeeded" or the refusal reason
}{
	{"defaults", []string{"--env", "stage"}, `{"env":"stage"}`, "succeeded"},
	{"every type", []string{"--env", "prod", "--count", "7", "--ratio", "0.25", "--amount", "12.50", "--tag", "a", "--tag", "b", "--verbose", "ana"},
		`{"env":"prod","count":7,"ratio":0.25,"amount":"12.50","tags":["a","b"],"verbose":true,"name":"ana"}`, "succeeded"},
	{"integer past 2^53", []string{"--env", "stage", "--count", "9007199254740993"}, `{"env":"stage","count":9007199254740993}`, "succeeded"},
	{"integral 5.0", []string{"--env", "stage", "--count", "5.0"}, `{"env":"stage","count":5.0}`, "succeeded"},
	{"explicit default", []string{"--env", "stage", "--count", "1", "--verbose=false"}, `{"env":"stage","count":1,"verbose":false}`, "succeeded"},
	{"unicode length", []string{"--env", "stage", "ééééé"}, `{"env":"stage","name":"ééééé"}`, "succeeded"},
	{"not an integer", []string{"--env", "stage", "--count", "1.5"}, `{"env":"stage","count":1.5}`, "invalid_input"},
	{"out of range", []string{"--env", "stage", "--count", "9223372036854775808"}, `{"env":"stage","count":9223372036854775808}`, "invalid_input"},
	{"below minimum", []string{"--env", "stage", "--count", "-6"}, `{"env":"stage","count":-6}`, "invalid_input"},
	{"number overflow", []string{"--env", "stage", "--ratio", "1e400"}, `{"env":"stage","ratio":1e400}`, "invalid_input"},
	{"bad decimal", []string{"--env", "stage", "--amount", "1e5"}, `{"env":"stage","amount":"1e5"}`, "invalid_input"},
	{"negative decimal", []string{"--env", "stage", "--amount", "-0.01"}, `{"env":"stage","amount":"-0.01"}`, "invalid_input"},
	{"not in enum", []string{"--env", "dev"}, `{"env":"dev"}`, "invalid_input"},
	{"missing required", []string{}, `{}`, "invalid_input"},
	{"string too long", []string{"--env", "stage", "abcdef"}, `{"env":"stage","name":"abcdef"}`, "invalid_input"},
	{"too many items", []string{"--env", "stage", "--tag", "a", "--tag", "b", "--tag", "c", "--tag", "d"}, `{"env":"stage","tags":["a","b","c","d"]}`, "invalid_input"},
	{"item too long", []string{"--env", "stage", "--tag", "abcdefghi"}, `{"env":"stage","tags":["abcdefghi"]}`, "invalid_input"},
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	dx := json.NewDecoder(bytes.NewReader(a))
	dx.UseNumber()
	dy := json.NewDecoder(bytes.NewReader(b))
	dy.UseNumber()
	if err := dx.Decode(&x); err != nil {
		t.Fatalf("CLI output %q: %v", a, err)
	}
	if err := dy.Decode(&y); err != nil {
		t.Fatalf("MCP data %q: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
