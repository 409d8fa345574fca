// Command mcpdemo is a minimal MCP client for `make demo`: it starts
// `rukh mcp` as a subprocess over stdio (the official go-sdk client,
// protocol 2026-07-28), lists every tool page and calls one tool, printing
// what an agent sees.
//
//	go run ./tests/mcpdemo RUKH_BINARY TOOL_IDENTITY ARGUMENTS_JSON
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: mcpdemo RUKH_BINARY TOOL_IDENTITY ARGUMENTS_JSON")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "mcpdemo:", err)
		os.Exit(1)
	}
}

func run(rukh, identity, args string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(rukh, "mcp")
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcpdemo", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	var name string
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
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if name == "" {
		return fmt.Errorf("no tool for %s is listed", identity)
	}
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args), &arguments); err != nil {
		return err
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Printf("\ntools/call %s %s\n%s\n", name, args, out)
	return nil
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
