package guard

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rukh-cli/rukh/internal/strictjson"
	"github.com/rukh-cli/rukh/internal/testhome"
)

var integerID = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// admissible is the fuzz oracle, written from the package doc rather than
// from the code: the message a line must become, or false when the line
// must never reach the SDK.
func admissible(line []byte, lim Limits) (jsonrpc.Message, bool) {
	if len(line) > lim.MaxMessage {
		return nil, false
	}
	v, err := strictjson.Parse(line, strictjson.Limits{MaxBytes: lim.MaxMessage, MaxDepth: lim.MaxDepth, MaxMembers: lim.MaxMembers})
	if err != nil || v.Kind != strictjson.Object {
		return nil, false
	}
	if id := v.Get("id"); id != nil {
		switch {
		case id.Kind == strictjson.String:
		case id.Kind == strictjson.Number && integerID.MatchString(id.Text):
			n, err := strconv.ParseInt(id.Text, 10, 64)
			if err != nil || n > 1<<53-1 || n < -(1<<53-1) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, false
	}
	return msg, true
}

// FuzzGuardRead feeds random bytes as stdin. The guard must not panic, must
// hand the SDK exactly the admissible lines, in order, and must write
// nothing but JSON-RPC error responses, at most one per refused line.
func FuzzGuardRead(f *testing.F) {
	for _, s := range []string{
		ping + "\n",
		ping + "\r\n\n  \n" + ping,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
		`{"jsonrpc":"2.0","id":"x","result":{"a":[1,2,{"b":null}]}}` + "\n",
		`{"jsonrpc":"2.0","id":3,"method":"ping","method":"ping"}` + "\n" + ping,
		`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":NaN}}` + "\n",
		`{"jsonrpc":"2.0","id":"` + "\xff" + `","method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + nested(10) + "}\n",
		`[` + ping + `]` + "\n" + `42` + "\n" + `"s"` + "\n",
		`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}` + "\n",
		`{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":2}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}` + "\n" + `{"jsonrpc":"2.0"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"ping"} x` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"p`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + string(bytes.Repeat([]byte("a"), 600)) + `"}}` + "\n",
		`{"JSONRPC":"2.0","jsonrpc":"2.0","ID":1,"Method":"x","id":2,"method":"ping"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxMessage: 512, MaxResponse: 4096, MaxDepth: 6, MaxMembers: 24,
		QueueMessages: 1 << 20, QueueBytes: 1 << 30, Stall: time.Minute}
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out testhome.Buffer
		mc, err := Stdio(bytes.NewReader(in), &out, lim, nil).Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := mc.(*conn)
		var got []jsonrpc.Message
		for {
			msg, err := c.Read(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got = append(got, msg)
		}
		c.Close()
		<-c.readDone
		<-c.writeDone

		var want []jsonrpc.Message
		refused := 0
		lines := bytes.Split(in, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for _, l := range lines {
			if len(l) <= lim.MaxMessage && len(bytes.Trim(l, " \t\r")) == 0 {
				continue
			}
			if msg, ok := admissible(l, lim); ok {
				want = append(want, msg)
			} else {
				refused++
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("handed to the SDK:\n%#v\nwant\n%#v", got, want)
		}

		answers := bytes.Split(out.Bytes(), []byte("\n"))
		if n := len(answers) - 1; n > refused || len(answers[n]) != 0 {
			t.Fatalf("%d answers (last %q) to %d refused lines", n, answers[n], refused)
		}
		for _, a := range answers[:len(answers)-1] {
			if _, err := strictjson.Parse(a, strictjson.Limits{MaxBytes: 4096, MaxDepth: 3, MaxMembers: 16}); err != nil {
				t.Fatalf("answer %q: %v", a, err)
			}
			msg, err := jsonrpc.DecodeMessage(a)
			if err != nil {
				// An answer with a null id: DecodeMessage does not take
				// responses without an id, so check it by hand.
				if !bytes.HasPrefix(a, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32`)) {
					t.Fatalf("answer %q: %v", a, err)
				}
				continue
			}
			resp, ok := msg.(*jsonrpc.Response)
			if !ok {
				t.Fatalf("answer %q is not a response", a)
			}
			we, ok := resp.Error.(*jsonrpc.Error)
			if !ok || (we.Code != jsonrpc.CodeParseError && we.Code != jsonrpc.CodeInvalidRequest) {
				t.Fatalf("answer %q is not a parse or request error", a)
			}
		}
	})
}
