package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/core/local"
	"github.com/rukh-cli/rukh/internal/mcp"
)

// BenchmarkListAdvertised lists every page of the tools and the dispatch
// projections of 10, 200 and 2,000 commands and reports what an agent is
// sent: advertised-bytes, the JSON of every listed tool (docs/benchmarks.md).
func BenchmarkListAdvertised(b *testing.B) {
	for _, proj := range []string{"tools", "dispatch"} {
		for _, n := range []int{10, 200, 2000} {
			b.Run(fmt.Sprintf("%s/%d", proj, n), func(b *testing.B) {
				cs := connectB(b, manyCommands(b, n, proj))
				bytes := 0
				for b.Loop() {
					bytes = 0
					cursor := ""
					for {
						res, err := cs.ListTools(context.Background(), &sdk.ListToolsParams{Cursor: cursor})
						if err != nil {
							b.Fatal(err)
						}
						for _, t := range res.Tools {
							data, _ := json.Marshal(t)
							bytes += len(data)
						}
						if cursor = res.NextCursor; cursor == "" {
							break
						}
					}
				}
				b.ReportMetric(float64(bytes), "advertised-bytes")
			})
		}
	}
}

// BenchmarkCallBatch16 is one dispatch call of 16 read ops;
// BenchmarkCall16Separate is the same 16 invocations as 16 tool calls.
func BenchmarkCallBatch16(b *testing.B) {
	cs := connectB(b, manyCommands(b, 16, "dispatch"))
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var ops []string
	for i := range 16 {
		ops = append(ops, fmt.Sprintf(`{"op":"test.many0/c%d","args":{"env":"stage"}}`, i))
	}
	args := json.RawMessage(`{"ops":[` + strings.Join(ops, ",") + `]}`)
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: list.Tools[0].Name, Arguments: args})
		if err != nil || res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, `{"ok":true`) {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

func BenchmarkCall16Separate(b *testing.B) {
	cs := connectB(b, manyCommands(b, 16, "tools"))
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 16 {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"env":"stage"}`)
	for b.Loop() {
		for _, t := range list.Tools {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: t.Name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%v %+v", err, res)
			}
		}
	}
}

// connectB is connect for a benchmark.
func connectB(b *testing.B, dir string) *sdk.ClientSession {
	b.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(mcp.Options{Host: local.New(filepath.Join(dir, "data")), Binding: mcp.Binding{Task: "agent"}, Name: "rukh", Version: "test"})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}
