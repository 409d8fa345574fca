// Command mcpdemo is a minimal MCP client for `make demo`: it starts
// `rukh mcp` as a subprocess over stdio (the official go-sdk client,
// protocol 2026-07-28), lists every tool page and calls one tool, printing
// what an agent sees. Under the dispatch projection (one tool, named
// request__…) it asks for help, then runs the command as one op.
//
// With --then-apply PROFILE, it then has the owner apply PROFILE (`rukh
// profile apply -f`, another process), waits until the server says the
// tool list changed (notifications/tools/list_changed), and lists and
// calls again: what an agent that stays connected sees.
//
//	go run ./tests/mcpdemo [--then-apply PROFILE] RUKH_BINARY TOOL_IDENTITY ARGUMENTS_JSON
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	args := os.Args[1:]
	profile := ""
	if len(args) > 1 && args[0] == "--then-apply" {
		profile, args = args[1], args[2:]
	}
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mcpdemo [--then-apply PROFILE] RUKH_BINARY TOOL_IDENTITY ARGUMENTS_JSON")
		os.Exit(2)
	}
	if err := run(args[0], args[1], args[2], profile); err != nil {
		fmt.Fprintln(os.Stderr, "mcpdemo:", err)
		os.Exit(1)
	}
}

func run(rukh, identity, args, profile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(rukh, "mcp")
	cmd.Stderr = os.Stderr
	changed := make(chan struct{}, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "mcpdemo", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	if err := listAndCall(ctx, cs, identity, args); err != nil || profile == "" {
		return err
	}
	fmt.Printf("\n(the owner, in another process: %s profile apply -f %s)\n", rukh, profile)
	apply := exec.Command(rukh, "profile", "apply", "-f", profile)
	apply.Stdout, apply.Stderr = os.Stdout, os.Stderr
	if err := apply.Run(); err != nil {
		return err
	}
	select {
	case <-changed:
		fmt.Println("\nnotifications/tools/list_changed: the tool names changed; listing again")
	case <-ctx.Done():
		return fmt.Errorf("the server never said the tool list changed")
	}
	return listAndCall(ctx, cs, identity, args)
}

// listAndCall lists every page and calls the tool of identity.
func listAndCall(ctx context.Context, cs *sdk.ClientSession, identity, args string) error {
	var name, dispatch string
	cursor := ""
	for {
		res, err := cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return err
		}
		for _, t := range res.Tools {
			fmt.Printf("tool %s\n  title: %s\n", t.Name, t.Title)
			schema, _ := json.Marshal(t.InputSchema)
			fmt.Printf("  inputSchema: %s\n", schema)
			if len(t.Name) > len(identity) && t.Title != "" && name == "" && matches(t, identity) {
				name = t.Name
			}
			if strings.HasPrefix(t.Name, "request__") {
				dispatch = t.Name
			}
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if name == "" && dispatch != "" {
		return callOps(ctx, cs, dispatch, identity, args)
	}
	if name == "" {
		return fmt.Errorf("no tool for %s is listed", identity)
	}
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args), &arguments); err != nil {
		return err
	}
	return call(ctx, cs, name, arguments)
}

func call(ctx context.Context, cs *sdk.ClientSession, name string, arguments any) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	in, _ := json.Marshal(arguments)
	fmt.Printf("\ntools/call %s %s\n%s\n", name, in, out)
	return nil
}

// callOps drives the dispatch tool: the catalog, then the command as an
// op (a read command needs no fingerprint).
func callOps(ctx context.Context, cs *sdk.ClientSession, dispatch, identity, args string) error {
	if err := call(ctx, cs, dispatch, map[string]any{"help": true}); err != nil {
		return err
	}
	return call(ctx, cs, dispatch, json.RawMessage(`{"ops":[{"op":"`+identity+`","args":`+args+`}]}`))
}

// matches reports whether t is the tool of identity: tool names begin
// with the identity's slug.
func matches(t *sdk.Tool, identity string) bool {
	slug := []byte(identity)
	for i, c := range slug {
		if c == '.' || c == '/' {
			slug[i] = '_'
		}
	}
	return len(t.Name) > len(slug) && t.Name[:len(slug)] == string(slug)
}
