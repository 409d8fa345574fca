package guard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/rukh-cli/rukh/internal/testhome"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wait bounds every wait of these tests; nothing should come near it.
const wait = 5 * time.Second

// harness drives one guarded connection through two io.Pipe pairs: the
// test writes the client's lines to inW and reads the server's from outR.
type harness struct {
	t     *testing.T
	c     *conn
	inW   *io.PipeWriter
	outR  *io.PipeReader
	lines chan string // the output, line by line, once readOutput ran
}

func testLimits() Limits {
	lim := DefaultLimits()
	lim.Stall = wait // tests of the stall set their own
	return lim
}

func newHarness(t *testing.T, lim Limits) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := Stdio(inR, outW, lim, slog.New(slog.NewTextHandler(t.Output(), nil)))
	mc, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, c: mc.(*conn), inW: inW, outR: outR}
	t.Cleanup(func() {
		// Unblock a writer nobody reads, close, and prove both loops end.
		outR.Close()
		h.c.Close()
		inW.Close()
		for name, done := range map[string]chan struct{}{"read": h.c.readDone, "write": h.c.writeDone} {
			select {
			case <-done:
			case <-time.After(wait):
				t.Errorf("the %s goroutine did not end after Close", name)
			}
		}
	})
	return h
}

// send writes b to the guard's input without waiting for it to be read.
func (h *harness) send(b []byte) {
	go func() { _, _ = h.inW.Write(b) }()
}

func (h *harness) sendLine(s string) { h.send([]byte(s + "\n")) }

// readOutput starts collecting the output lines.
func (h *harness) readOutput() {
	h.lines = make(chan string, 64)
	go func() {
		defer close(h.lines)
		br := bufio.NewReader(h.outR)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			h.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
}

func (h *harness) out() string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatal("the output ended")
		}
		return l
	case <-time.After(wait):
		h.t.Fatal("no output line")
	}
	return ""
}

func (h *harness) read() (jsonrpc.Message, error) {
	ctx, cancel := context.WithTimeout(h.t.Context(), wait)
	defer cancel()
	return h.c.Read(ctx)
}

// marker writes a response the test recognises and returns the lines
// written before it.
func (h *harness) untilMarker() []string {
	h.t.Helper()
	if err := h.c.Write(h.t.Context(), &jsonrpc.Response{ID: mkID("marker"), Result: []byte(`{}`)}); err != nil {
		h.t.Fatal(err)
	}
	var before []string
	for {
		l := h.out()
		if l == `{"jsonrpc":"2.0","id":"marker","result":{}}` {
			return before
		}
		before = append(before, l)
	}
}

func mustDecode(t *testing.T, line string) jsonrpc.Message {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func mkID(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

const ping = `{"jsonrpc":"2.0","id":100,"method":"ping"}`

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func TestRefusedMessages(t *testing.T) {
	lim := testLimits()
	// 1 MiB + 1 bytes in all.
	head := `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"`
	tail := `"}}`
	oversize := head + strings.Repeat("a", lim.MaxMessage+1-len(head)-len(tail)) + tail
	// A top-level object (depth 1) and params (2) hold 31 arrays: depth 33.
	deep := `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + nested(31) + `}}`
	// Four top-level members and 4,093 elements: 4,097.
	wide := `{"jsonrpc":"2.0","id":6,"method":"ping","params":[` + strings.TrimSuffix(strings.Repeat("0,", 4093), ",") + `]}`
	// As wide, one element fewer: exactly at the limit, accepted.
	atLimit := `{"jsonrpc":"2.0","id":6,"method":"ping","params":[` + strings.TrimSuffix(strings.Repeat("0,", 4092), ",") + `]}`
	okDepth := `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + nested(30) + `}}`

	tests := []struct {
		name string
		line string
		want string // the answer, or "" for none
	}{
		{"over 1 MiB", oversize,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"json_too_large: message is 1048577 bytes; the limit is 1048576","data":{"code":"json_too_large"}}}`},
		{"invalid UTF-8", `{"jsonrpc":"2.0","id":"a","method":"ping","params":{"x":"` + "\xff" + `"}}`,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32700,"message":"json_invalid_utf8 at document root (byte 57): document is not valid UTF-8","data":{"code":"json_invalid_utf8"}}}`},
		{"unpaired surrogate", `{"jsonrpc":"2.0","id":12,"method":"ping","params":{"s":"\ud800"}}`,
			`{"jsonrpc":"2.0","id":12,"error":{"code":-32700,"message":"json_invalid_unicode at /params/s (byte 62): unpaired UTF-16 surrogate \\uD800","data":{"code":"json_invalid_unicode"}}}`},
		{"duplicate key", `{"jsonrpc":"2.0","id":3,"method":"ping","method":"ping"}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32700,"message":"json_duplicate_key at /method (byte 40): member \"method\" appears more than once","data":{"code":"json_duplicate_key"}}}`},
		{"duplicate id", `{"jsonrpc":"2.0","id":3,"id":4,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"json_duplicate_key at /id (byte 24): member \"id\" appears more than once","data":{"code":"json_duplicate_key"}}}`},
		{"NaN", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":NaN}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32700,"message":"json_syntax at /params/x (byte 54): unexpected character 'N'; expected a value","data":{"code":"json_syntax"}}}`},
		{"depth 33", deep,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"json_too_deep at /params/a/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0 (byte 84): nesting is deeper than 32","data":{"code":"json_too_deep"}}}`},
		{"4,097 members", wide,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"json_too_many_members at /params/4092 (byte 8234): document has more than 4096 members and elements","data":{"code":"json_too_many_members"}}}`},
		{"trailing garbage", `{"jsonrpc":"2.0","id":8,"method":"ping"} x`,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32700,"message":"json_trailing_data at document root (byte 41): unexpected data after the JSON value","data":{"code":"json_trailing_data"}}}`},
		{"truncated", `{"jsonrpc":"2.0","id":9,"method":"pi`,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32700,"message":"json_syntax at /method (byte 36): unterminated string","data":{"code":"json_syntax"}}}`},
		{"batch", `[` + ping + `]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"jsonrpc_batch: batches are not supported; send one message a line","data":{"code":"jsonrpc_batch"}}}`},
		{"not an object", `42`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"jsonrpc_not_object: a message must be a JSON object, not number","data":{"code":"jsonrpc_not_object"}}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"jsonrpc_invalid_id: id must be a string or an integer within ±(2^53−1)","data":{"code":"jsonrpc_invalid_id"}}}`},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"jsonrpc_invalid_id: id must be a string or an integer within ±(2^53−1)","data":{"code":"jsonrpc_invalid_id"}}}`},
		{"id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"jsonrpc_invalid_id: id must be a string or an integer within ±(2^53−1)","data":{"code":"jsonrpc_invalid_id"}}}`},
		{"wrong version", `{"jsonrpc":"1.0","id":11,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":11,"error":{"code":-32600,"message":"jsonrpc_invalid: invalid message version tag \"1.0\"; expected \"2.0\"","data":{"code":"jsonrpc_invalid"}}}`},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":1}`,
			`{"jsonrpc":"2.0","id":"m","error":{"code":-32600,"message":"jsonrpc_invalid: unmarshaling jsonrpc message: json: cannot unmarshal \"1\" into Go value of type string","data":{"code":"jsonrpc_invalid"}}}`},
		// A refused response is logged, never answered.
		{"response with null id", `{"jsonrpc":"2.0","id":null,"result":{}}`, ""},
		{"response with a duplicate key", `{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`, ""},
		// Not refusals: blank lines are skipped, limits are inclusive.
		{"blank line", " \t\r", ""},
		{"empty line", "", ""},
	}
	h := newHarness(t, lim)
	h.readOutput()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			// The connection goes on with the next message.
			h.send([]byte(tc.line + "\n" + ping + "\n"))
			msg, err := h.read()
			if err != nil {
				t.Fatalf("Read after the refused line: %v", err)
			}
			if want := mustDecode(t, ping); !reflect.DeepEqual(msg, want) {
				t.Fatalf("Read = %#v, want the ping", msg)
			}
			got := h.untilMarker()
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("answer:\n got %q\nwant %q", got, want)
			}
		})
	}
	for _, line := range []string{atLimit, okDepth} {
		h.t = t
		h.sendLine(line)
		msg, err := h.read()
		if err != nil {
			t.Fatal(err)
		}
		if want := mustDecode(t, line); !reflect.DeepEqual(msg, want) {
			t.Errorf("a message at the limits: Read = %#v", msg)
		}
	}
}

func TestValidMessagesPassUnchanged(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"p-1","method":"ping"}`,
		`  {"jsonrpc":"2.0","id":-9007199254740991,"method":"tools/call","params":{"name":"x","arguments":{"n":12345678901234567890,"s":"\u00e9\ud83d\ude00"}}}  `,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}`,
	}
	h := newHarness(t, testLimits())
	var in strings.Builder
	for i, l := range lines {
		in.WriteString(l)
		if i == 2 {
			in.WriteString("\r\n\n") // CRLF and a blank line
		} else {
			in.WriteString("\n")
		}
	}
	h.send([]byte(in.String()))
	for _, l := range lines {
		msg, err := h.read()
		if err != nil {
			t.Fatal(err)
		}
		if want := mustDecode(t, l); !reflect.DeepEqual(msg, want) {
			t.Errorf("Read = %#v\nwant %#v", msg, want)
		}
	}
}

func TestEOF(t *testing.T) {
	t.Run("after a line", func(t *testing.T) {
		h := newHarness(t, testLimits())
		h.sendLine(ping)
		if _, err := h.read(); err != nil {
			t.Fatal(err)
		}
		h.inW.Close()
		if _, err := h.read(); err != io.EOF {
			t.Fatalf("Read at EOF = %v, want io.EOF", err)
		}
		if _, err := h.read(); err != io.EOF {
			t.Fatalf("Read after EOF = %v, want io.EOF", err)
		}
	})
	t.Run("last line without newline", func(t *testing.T) {
		h := newHarness(t, testLimits())
		go func() {
			_, _ = h.inW.Write([]byte(ping))
			h.inW.Close()
		}()
		msg, err := h.read()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(msg, mustDecode(t, ping)) {
			t.Errorf("Read = %#v", msg)
		}
		if _, err := h.read(); err != io.EOF {
			t.Fatalf("Read at EOF = %v, want io.EOF", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		h := newHarness(t, testLimits())
		boom := errors.New("boom")
		h.inW.CloseWithError(boom)
		if _, err := h.read(); !errors.Is(err, boom) {
			t.Fatalf("Read = %v, want %v", err, boom)
		}
	})
}

func TestStalledPartialLine(t *testing.T) {
	lim := testLimits()
	lim.Stall = 100 * time.Millisecond

	t.Run("partial line", func(t *testing.T) {
		h := newHarness(t, lim)
		start := time.Now()
		h.send([]byte(`{"jsonrpc":"2.0",`))
		_, err := h.read()
		if !errors.Is(err, ErrReadStalled) {
			t.Fatalf("Read = %v, want ErrReadStalled", err)
		}
		if d := time.Since(start); d < lim.Stall {
			t.Errorf("closed after %v, before its limit %v", d, lim.Stall)
		}
		waitDone(t, h.c.readDone, "read") // Close of the pipe ended the read
	})
	// A trickle that reset the limit at every byte would be read whole
	// after 420 ms; it must stall instead.
	t.Run("trickle is not an extension", func(t *testing.T) {
		h := newHarness(t, lim)
		go func() {
			for _, b := range []byte(ping) {
				if _, err := h.inW.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(10 * time.Millisecond) // 42 bytes: 420 ms in all
			}
		}()
		_, err := h.read()
		if !errors.Is(err, ErrReadStalled) {
			t.Fatalf("Read = %v, want ErrReadStalled", err)
		}
	})
	t.Run("idle between lines is fine", func(t *testing.T) {
		h := newHarness(t, lim)
		h.sendLine(ping)
		if _, err := h.read(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * lim.Stall)
		h.sendLine(ping)
		if _, err := h.read(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("line in two pieces within the limit", func(t *testing.T) {
		h := newHarness(t, lim)
		go func() {
			_, _ = h.inW.Write([]byte(ping[:10]))
			time.Sleep(lim.Stall / 4)
			_, _ = h.inW.Write([]byte(ping[10:] + "\n"))
		}()
		if _, err := h.read(); err != nil {
			t.Fatal(err)
		}
	})
}

func waitDone(t *testing.T, done chan struct{}, name string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("the %s goroutine did not end", name)
	}
}

func TestOversizeResponse(t *testing.T) {
	t.Run("default limit", func(t *testing.T) {
		h := newHarness(t, testLimits())
		h.readOutput()
		big := `{"s":"` + strings.Repeat("x", 2<<20) + `"}`
		if err := h.c.Write(t.Context(), &jsonrpc.Response{ID: mkID(float64(9)), Result: []byte(big)}); err != nil {
			t.Fatal(err)
		}
		n := len(`{"jsonrpc":"2.0","id":9,"result":}`) + len(big)
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"response too large: %d bytes; the limit is 2097152"}}`, n)
		if got := h.out(); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("at the limit and over it", func(t *testing.T) {
		lim := testLimits()
		lim.MaxResponse = 100
		lim.QueueBytes = 1000
		h := newHarness(t, lim)
		h.readOutput()
		fill := func(n int) []byte { // a result that encodes to n bytes in all
			pad := n - len(`{"jsonrpc":"2.0","id":"s","result":""}`)
			return []byte(`"` + strings.Repeat("y", pad) + `"`)
		}
		if err := h.c.Write(t.Context(), &jsonrpc.Response{ID: mkID("s"), Result: fill(100)}); err != nil {
			t.Fatal(err)
		}
		if got := h.out(); len(got) != 100 || !strings.Contains(got, `"result"`) {
			t.Errorf("a response of exactly the limit was changed: %s", got)
		}
		if err := h.c.Write(t.Context(), &jsonrpc.Response{ID: mkID("s"), Result: fill(101)}); err != nil {
			t.Fatal(err)
		}
		want := `{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"response too large: 101 bytes; the limit is 100"}}`
		if got := h.out(); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		// An oversize notification is not sent; the SDK sees "rejected by
		// transport" and the connection stays up.
		note := &jsonrpc.Request{Method: "notifications/message", Params: []byte(`{"data":"` + strings.Repeat("z", 200) + `"}`)}
		err := h.c.Write(t.Context(), note)
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != codeRejected {
			t.Fatalf("Write of an oversize notification = %v, want code %d", err, codeRejected)
		}
		if got := h.untilMarker(); len(got) != 0 {
			t.Errorf("sent %q", got)
		}
	})
}

func TestQueueFull(t *testing.T) {
	lim := testLimits()
	lim.QueueMessages = 4
	small := &jsonrpc.Response{ID: mkID(float64(1)), Result: []byte(`{}`)}

	t.Run("messages", func(t *testing.T) {
		h := newHarness(t, lim) // nobody reads the output
		for i := range lim.QueueMessages {
			if err := h.c.Write(t.Context(), small); err != nil {
				t.Fatalf("Write %d: %v", i, err)
			}
		}
		if err := h.c.Write(t.Context(), small); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("Write over the queue = %v, want ErrQueueFull", err)
		}
		if _, err := h.read(); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("Read after the queue filled = %v", err)
		}
		if err := h.c.Write(t.Context(), small); !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Fatalf("Write after close = %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		lim := lim
		lim.MaxResponse = 1000
		lim.QueueBytes = 2500
		h := newHarness(t, lim)
		big := &jsonrpc.Response{ID: mkID(float64(1)), Result: []byte(`"` + strings.Repeat("b", 900) + `"`)}
		for i := range 2 {
			if err := h.c.Write(t.Context(), big); err != nil {
				t.Fatalf("Write %d: %v", i, err)
			}
		}
		if err := h.c.Write(t.Context(), big); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("Write over the byte bound = %v, want ErrQueueFull", err)
		}
	})
	t.Run("refusals count too", func(t *testing.T) {
		h := newHarness(t, lim)
		for range lim.QueueMessages + 1 {
			h.sendLine(`{"jsonrpc":"2.0","id":1,"method":"ping",}`)
		}
		if _, err := h.read(); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("Read = %v, want ErrQueueFull", err)
		}
	})
}

func TestBlockedWrite(t *testing.T) {
	lim := testLimits()
	lim.Stall = 100 * time.Millisecond
	h := newHarness(t, lim) // nobody reads the output
	start := time.Now()
	if err := h.c.Write(t.Context(), &jsonrpc.Response{ID: mkID(float64(1)), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.read(); !errors.Is(err, ErrWriteStalled) {
		t.Fatalf("Read = %v, want ErrWriteStalled", err)
	}
	if d := time.Since(start); d < lim.Stall {
		t.Errorf("closed after %v, before its limit %v", d, lim.Stall)
	}
}

func TestClose(t *testing.T) {
	t.Run("unblocks Read", func(t *testing.T) {
		h := newHarness(t, testLimits())
		errc := make(chan error, 1)
		go func() { _, err := h.read(); errc <- err }()
		h.c.Close()
		select {
		case err := <-errc:
			if err != io.EOF {
				t.Errorf("Read after Close = %v, want io.EOF", err)
			}
		case <-time.After(wait):
			t.Fatal("Close did not unblock Read")
		}
		waitDone(t, h.c.readDone, "read")
		waitDone(t, h.c.writeDone, "write")
	})
	t.Run("delivers what was queued", func(t *testing.T) {
		h := newHarness(t, testLimits())
		for i := range 3 {
			if err := h.c.Write(t.Context(), &jsonrpc.Response{ID: mkID(float64(i)), Result: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		closed := make(chan struct{})
		go func() { h.c.Close(); close(closed) }()
		h.readOutput()
		for i := range 3 {
			if got, want := h.out(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		}
		select {
		case <-closed:
		case <-time.After(wait):
			t.Fatal("Close did not return")
		}
	})
	t.Run("is bounded when nobody reads", func(t *testing.T) {
		lim := testLimits()
		lim.Stall = 100 * time.Millisecond
		h := newHarness(t, lim)
		if err := h.c.Write(t.Context(), &jsonrpc.Response{ID: mkID(float64(1)), Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { h.c.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(wait):
			t.Fatalf("Close of a connection nobody reads did not return within %v (its stall limit is %v)", wait, lim.Stall)
		}
	})
	t.Run("one connection per transport", func(t *testing.T) {
		tr := Stdio(strings.NewReader(""), io.Discard, Limits{}, nil)
		c, err := tr.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := tr.Connect(t.Context()); err == nil {
			t.Error("a second Connect succeeded")
		}
	})
}

func TestLimits(t *testing.T) {
	if got := (Limits{}).withDefaults(); got != DefaultLimits() {
		t.Errorf("zero limits = %+v", got)
	}
	for _, lim := range []Limits{{MaxDepth: -1}, {MaxResponse: 4 << 20}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Stdio accepted %+v", lim)
				}
			}()
			Stdio(strings.NewReader(""), io.Discard, lim, nil)
		}()
	}
}

func TestPeek(t *testing.T) {
	tests := []struct {
		in       string
		id       string
		response bool
	}{
		{`{"id":1,"method":"x","params":{"a":NaN}}`, "1", false},
		{`{"params":{"id":2,"b":[1,{"c":"}"}]},"id":"s\u0041","x":` + "\xff", `"sA"`, false},
		{`{"id":1,"id":2,"a":NaN}`, "", false},
		{`{"\u0069d":1,"id":2,"a":NaN}`, "", false},
		{`{"id":12`, "", false}, // cut: the number may go on
		{`{"id":"` + "\xff" + `"}x`, "", false},
		{`{"id":{"a":1}}x`, "", false},
		{`{"id":1e2}x`, "", false},
		{`{"id":3,"result":{}}x`, "3", true},
		{`{"id":3,"error":{},"method":"m"}x`, "3", false},
		{`[{"id":1}]`, "", false},
		{`{"a":` + nested(100000) + `,"id":4}x`, "4", false},
	}
	for _, tc := range tests {
		id, response := peek([]byte(tc.in))
		if string(id) != tc.id || response != tc.response {
			t.Errorf("peek(%.60q) = %s, %v; want %s, %v", tc.in, id, response, tc.id, tc.response)
		}
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got := truncate(s, 10)
	if len(got) > 10 || !strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
		t.Errorf("truncate = %q", got)
	}
	if truncate("abc", 3) != "abc" {
		t.Error("truncate cut a short string")
	}
}

// TestRefusalLog checks that refusals go to the logger, never to the
// output, and that a flood of them is counted rather than logged line by
// line.
func TestRefusalLog(t *testing.T) {
	var logs testhome.Buffer
	var out testhome.Buffer
	lim := testLimits()
	lim.QueueMessages = 1000
	in := strings.Repeat("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}\n", maxLoggedRefusals+10)
	mc, err := Stdio(strings.NewReader(in), &out, lim, slog.New(slog.NewTextHandler(&logs, nil))).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*conn)
	if _, err := c.Read(t.Context()); err != io.EOF {
		t.Fatalf("Read = %v, want io.EOF", err)
	}
	c.Close()
	waitDone(t, c.writeDone, "write")
	if n := strings.Count(out.String(), `"error":{"code":-32700`); n != maxLoggedRefusals+10 {
		t.Errorf("%d answers, want %d", n, maxLoggedRefusals+10)
	}
	if strings.Contains(out.String(), "level=") {
		t.Error("a log entry reached the output")
	}
	l := logs.String()
	if n := strings.Count(l, "refused an incoming message"); n != maxLoggedRefusals {
		t.Errorf("%d refusals logged one by one, want %d", n, maxLoggedRefusals)
	}
	if !strings.Contains(l, "without logging each") || !strings.Contains(l, fmt.Sprintf("total=%d", maxLoggedRefusals+10)) {
		t.Errorf("no summary in the log:\n%s", l)
	}
}
