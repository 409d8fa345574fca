package extproto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"type":"progress","message":"m","done":1,"total":2}` + "\n",
		`{"type":"complete","token":"t","status":"succeeded","commandResult":{"kind":"text","text":"x"},"effects":[{"kind":"k","ref":"r"}]}` + "\n",
		`{"type":"complete","token":"t","status":"command_failed"}` + "\n" + `{"type":"progress"}`,
		`{"type":"complete","token":"t","token":"t"}` + "\n",
		"{\"type\":\"progress\",\"message\":\"\xff\"}\n",
		"\n\n[]\n{}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for range len(data) + 2 {
			fr, err := r.Next()
			if err == io.EOF {
				return
			}
			var e *Error
			if errors.As(err, &e) {
				if e.Reason == ReasonFrameTooLarge || e.Reason == ReasonTruncated {
					return
				}
				continue
			}
			if err != nil {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			var line []byte
			switch {
			case fr.Progress != nil && fr.Complete == nil:
				line = AppendProgress(nil, *fr.Progress)
			case fr.Complete != nil && fr.Progress == nil:
				line = AppendComplete(nil, *fr.Complete)
			default:
				t.Fatalf("frame with %v progress and %v complete", fr.Progress != nil, fr.Complete != nil)
			}
			r2 := NewReader(bytes.NewReader(line))
			again, err := r2.Next()
			if err != nil {
				t.Fatalf("re-encoded frame %q refused: %v", line, err)
			}
			if !reflect.DeepEqual(again, fr) {
				t.Fatalf("re-encoded frame %q reads back as %s", line, dump(again))
			}
			if _, err := r2.Next(); err != io.EOF {
				t.Fatalf("after the re-encoded frame: %v", err)
			}
		}
		t.Fatalf("Next did not reach the end of %d bytes", len(data))
	})
}

func FuzzParseInvoke(f *testing.F) {
	f.Add([]byte((&Invoke{InvocationID: "i", Command: "p/c", Transport: TransportCLI, DeadlineMs: 1,
		Inputs: sampleInputs().AppendJSON(nil)}).AppendFrame(nil)))
	f.Add([]byte(`{"type":"invoke","protocol":"rukh.ipc/1","invocationId":"","command":"","transport":"mcp","interactive":true,"deadlineMs":0,"inputs":{"a":{"value":[{}],"explicit":false}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseInvoke(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		line := in.AppendFrame(nil)
		again, err := ParseInvoke(line)
		if err != nil {
			t.Fatalf("re-encoded frame %q refused: %v", line, err)
		}
		if !reflect.DeepEqual(again, in) {
			t.Fatalf("re-encoded frame %q reads back as %+v", line, again)
		}
	})
}
