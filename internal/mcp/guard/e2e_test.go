package guard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/mcp/guard"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "guard-test", Version: "v0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Echo: in.Text}, nil
		})
	return srv
}

// TestEndToEnd serves a go-sdk server through the guard and drives it with
// the go-sdk client over a second pipe pair: normal traffic is untouched.
func TestEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))

	ss, err := newServer().Connect(ctx, guard.Stdio(c2sR, s2cW, guard.DefaultLimits(), log), nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
		t.Fatalf("tools = %+v", tools.Tools)
	}
	// Non-ASCII, escapes and a payload of 512 KiB: well within 1 MiB.
	for _, text := range []string{"héllo \u2028 \"quoted\" 😀", strings.Repeat("x", 512<<10)} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatal(err)
		}
		var out echoOut
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &out); err != nil || out.Echo != text || res.IsError {
			t.Fatalf("call result = %s (isError %v)", raw, res.IsError)
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("server session ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the server session did not end after the client closed")
	}
}

// TestEndToEndRefusal writes raw lines to a real server through the guard:
// a refused request gets its error, and the session goes on.
func TestEndToEndRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	defer s2cR.Close()
	ss, err := newServer().Connect(ctx, guard.Stdio(c2sR, s2cW, guard.DefaultLimits(), slog.New(slog.NewTextHandler(t.Output(), nil))), nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		br := bufio.NewReader(s2cR)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case l := <-lines:
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("output line %q: %v", l, err)
			}
			return m
		case <-ctx.Done():
			t.Fatal("no response")
		}
		return nil
	}
	go func() {
		_, _ = io.WriteString(c2sW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","text":"b"}}}`+"\n"+
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c"}}}`+"\n")
	}()
	// Refusals are answered as they are read, so the order of the
	// answers is not the order of the requests.
	byID := map[float64]map[string]any{}
	for range 3 {
		m := next()
		id, _ := m["id"].(float64)
		byID[id] = m
	}
	if m := byID[1]; m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	if m := byID[2]; m["error"].(map[string]any)["code"] != -32700.0 {
		t.Fatalf("duplicate key: %v", m)
	}
	m := byID[3]
	if sc, _ := m["result"].(map[string]any)["structuredContent"].(map[string]any); sc["echo"] != "c" {
		t.Fatalf("the call after a refusal: %v", m)
	}
	c2sW.Close() // EOF: the session ends
	if err := ss.Wait(); err != nil {
		t.Errorf("server session ended with %v", err)
	}
}
