// Command toughd is the core of a test embedder whose built-ins misbehave
// as an extension's program may: wrong returns a result its schema
// refuses, hang ignores cancellation and SIGTERM. Its starting profile
// gives every call a deadline of one second.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/extsdk"
)

var cfg = app.Config{
	Name: "tough",
	Builtins: []app.Builtin{
		{Declaration: `{"id":"wrong","path":["wrong"],"summary":"A result its schema refuses",
			"result":{"kind":"structured","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}`,
			Run: func(context.Context, *extsdk.Invocation) (extsdk.Result, error) {
				return extsdk.Structured(map[string]any{"n": "not a number"}), nil
			}},
		{Declaration: `{"id":"hang","path":["hang"],"summary":"Never end",
			"result":{"kind":"text"},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}`,
			Run: func(context.Context, *extsdk.Invocation) (extsdk.Result, error) {
				signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
				time.Sleep(time.Hour)
				return extsdk.Text("late"), nil
			}},
	},
	Profile: []byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":1000,"maxConcurrent":4,"enforcement":"host"}}}`),
}

func main() { os.Exit(app.Main(cfg, os.Args[1:])) }
