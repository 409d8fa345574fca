// Command acmed is the core of the example embedder acme, with three Go
// built-ins: status (a structured result), purge (destructive) and boom
// (which panics).
package main

import (
	"context"
	_ "embed"
	"os"

	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/extsdk"
)

// The publisher acme trusts out of the box (its private key, for the
// tests only, is ../../test-release.key), and the profile a new store
// starts with: the built-ins exposed, destructive calls of agents kept
// for the owner.
var (
	//go:embed release.key.pub
	releaseKey []byte
	//go:embed profile.json
	profile []byte
)

var cfg = app.Config{
	Name:       "acme",
	Version:    "1.2.0",
	Publishers: []app.Publisher{{Name: "acme-release", Key: releaseKey}},
	Profile:    profile,
	Builtins: []app.Builtin{
		{Declaration: `{"id":"status","path":["status"],"summary":"Show the service's status",
			"inputs":[{"id":"service","positional":0,"type":"string","maxLength":32,"default":"web"}],
			"result":{"kind":"structured","schema":{"type":"object","properties":{"service":{"type":"string"},"healthy":{"type":"boolean"}},
				"required":["service","healthy"],"additionalProperties":false}},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"read"}}`,
			Run: status},
		{Declaration: `{"id":"purge","path":["purge"],"summary":"Purge a cache",
			"inputs":[{"id":"cache","positional":0,"type":"string","maxLength":32,"required":true}],
			"result":{"kind":"text"},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"destructive"}}`,
			Run: purge},
		{Declaration: `{"id":"boom","path":["boom"],"summary":"Panic",
			"result":{"kind":"text"},
			"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}`,
			Run: func(context.Context, *extsdk.Invocation) (extsdk.Result, error) { panic("boom") }},
	},
}

func status(_ context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
	return extsdk.Structured(map[string]any{"service": inv.String("service"), "healthy": true}), nil
}

func purge(_ context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
	return extsdk.Text("purged " + inv.String("cache")), nil
}

func main() { os.Exit(app.Main(cfg, os.Args[1:])) }
