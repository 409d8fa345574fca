package extproto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func i64(n int64) *int64 { return &n }

// step is what one call of Reader.Next returns: a frame, or an *Error
// with reason, or io.EOF when both are empty.
type step struct {
	frame  *Frame
	reason string
}

var eof = step{}

func progress(msg string, done, total *int64) step {
	return step{frame: &Frame{Progress: &Progress{Message: msg, Done: done, Total: total}}}
}

func complete(c Complete) step { return step{frame: &Frame{Complete: &c}} }

func refused(reason string) step { return step{reason: reason} }

const textResult = `{"kind":"text","text":"hi"}`

// nested returns a commandResult whose data nests n arrays.
func nested(n int) string {
	return `{"kind":"structured","data":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
}

// padded returns a complete frame line of exactly n bytes (without newline).
func padded(n int) string {
	head := `{"type":"complete","token":"t","status":"succeeded","commandResult":{"kind":"text","text":"`
	tail := `"}}`
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

func effectsJSON(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"kind":"k","ref":"` + strconv.Itoa(i) + `"}`)
	}
	b.WriteString("]")
	return b.String()
}

func manyEffects(n int) []Effect {
	out := make([]Effect, n)
	for i := range out {
		out[i] = Effect{Kind: "k", Ref: strconv.Itoa(i)}
	}
	return out
}

func TestReader(t *testing.T) {
	okComplete := `{"type":"complete","token":"tok","status":"succeeded","commandResult":` + textResult + "}\n"
	cases := []struct {
		name  string
		input string
		want  []step
	}{
		{"empty channel", "", []step{eof}},
		{"progress in full", `{"type":"progress","message":"copying","done":3,"total":10}` + "\n",
			[]step{progress("copying", i64(3), i64(10)), eof}},
		{"progress without members", `{"type":"progress"}` + "\n", []step{progress("", nil, nil), eof}},
		{"progress largest count", `{"type":"progress","done":9223372036854775807,"total":0}` + "\n",
			[]step{progress("", i64(1<<63-1), i64(0)), eof}},
		{"succeeded", okComplete, []step{complete(Complete{Token: "tok", Status: StatusSucceeded, CommandResult: []byte(textResult)}), eof}},
		{"command_failed without result", `{"type":"complete","token":"tok","status":"command_failed"}` + "\n",
			[]step{complete(Complete{Token: "tok", Status: StatusCommandFailed}), eof}},
		{"command_failed with result", `{"type":"complete","token":"tok","status":"command_failed","commandResult":` + textResult + "}\n",
			[]step{complete(Complete{Token: "tok", Status: StatusCommandFailed, CommandResult: []byte(textResult)}), eof}},
		{"result bytes kept exactly", `{"type":"complete","token":"t","status":"succeeded","commandResult":{ "kind" : "structured", "data":{"n":1.50e0}} }` + "\n",
			[]step{complete(Complete{Token: "t", Status: StatusSucceeded, CommandResult: []byte(`{ "kind" : "structured", "data":{"n":1.50e0}}`)}), eof}},
		{"result content is not checked", `{"type":"complete","token":"t","status":"succeeded","commandResult":{"whatever":[1]}}` + "\n",
			[]step{complete(Complete{Token: "t", Status: StatusSucceeded, CommandResult: []byte(`{"whatever":[1]}`)}), eof}},
		{"effects", `{"type":"complete","token":"t","status":"succeeded","commandResult":{},"effects":[{"kind":"file","ref":"/tmp/x"},{"ref":"","kind":""}]}` + "\n",
			[]step{complete(Complete{Token: "t", Status: StatusSucceeded, CommandResult: []byte(`{}`), Effects: []Effect{{"file", "/tmp/x"}, {"", ""}}}), eof}},
		{"no effects is nil", `{"type":"complete","token":"t","status":"command_failed","effects":[]}` + "\n",
			[]step{complete(Complete{Token: "t", Status: StatusCommandFailed}), eof}},
		{"64 effects", `{"type":"complete","token":"t","status":"command_failed","effects":` + effectsJSON(64) + "}\n",
			[]step{complete(Complete{Token: "t", Status: StatusCommandFailed, Effects: manyEffects(64)}), eof}},
		{"effect fields of 256 bytes", `{"type":"complete","token":"t","status":"command_failed","effects":[{"kind":"` + strings.Repeat("k", 256) + `","ref":"` + strings.Repeat("é", 128) + `"}]}` + "\n",
			[]step{complete(Complete{Token: "t", Status: StatusCommandFailed, Effects: []Effect{{strings.Repeat("k", 256), strings.Repeat("é", 128)}}}), eof}},
		{"message of 1024 bytes", `{"type":"progress","message":"` + strings.Repeat("€", 341) + "a" + `"}` + "\n",
			[]step{progress(strings.Repeat("€", 341)+"a", nil, nil), eof}},
		{"progress then complete", `{"type":"progress","done":1}` + "\n" + okComplete,
			[]step{progress("", i64(1), nil), complete(Complete{Token: "tok", Status: StatusSucceeded, CommandResult: []byte(textResult)}), eof}},
		{"space and CR around the object", " \t{\"type\":\"progress\"} \r\n", []step{progress("", nil, nil), eof}},
		{"a frame of exactly MaxFrame bytes", padded(MaxFrame) + "\n",
			[]step{complete(Complete{Token: "t", Status: StatusSucceeded, CommandResult: []byte(padded(MaxFrame)[len(`{"type":"complete","token":"t","status":"succeeded","commandResult":`) : MaxFrame-1])}), eof}},
		{"result 38 levels inside the frame", `{"type":"complete","token":"t","status":"succeeded","commandResult":` + nested(38) + "}\n",
			[]step{complete(Complete{Token: "t", Status: StatusSucceeded, CommandResult: []byte(nested(38))}), eof}},

		// frame_too_large and truncated end the channel.
		{"MaxFrame+1 bytes", padded(MaxFrame+1) + "\n" + okComplete,
			[]step{refused(ReasonFrameTooLarge), refused(ReasonFrameTooLarge)}},
		{"MaxFrame+1 bytes at the end", padded(MaxFrame + 1), []step{refused(ReasonFrameTooLarge), refused(ReasonFrameTooLarge)}},
		{"truncated last line", okComplete + `{"type":"progress"}`,
			[]step{complete(Complete{Token: "tok", Status: StatusSucceeded, CommandResult: []byte(textResult)}), refused(ReasonTruncated), refused(ReasonTruncated)}},
		{"truncated only line", `{"type":"compl`, []step{refused(ReasonTruncated), refused(ReasonTruncated)}},
		{"MaxFrame bytes without a newline", padded(MaxFrame), []step{refused(ReasonTruncated), refused(ReasonTruncated)}},

		// invalid_json.
		{"empty line", "\n", []step{refused(ReasonInvalidJSON), eof}},
		{"syntax", "{\"type\":\"progress\",}\n", []step{refused(ReasonInvalidJSON), eof}},
		{"duplicate key", `{"type":"complete","token":"a","token":"b","status":"command_failed"}` + "\n", []step{refused(ReasonInvalidJSON), eof}},
		{"duplicate key in the result", `{"type":"complete","token":"a","status":"succeeded","commandResult":{"kind":"text","kind":"text"}}` + "\n", []step{refused(ReasonInvalidJSON), eof}},
		{"invalid UTF-8", "{\"type\":\"progress\",\"message\":\"\xff\"}\n", []step{refused(ReasonInvalidJSON), eof}},
		{"unpaired surrogate", `{"type":"progress","message":"\ud800"}` + "\n", []step{refused(ReasonInvalidJSON), eof}},
		{"two frames on one line", `{"type":"progress"}{"type":"progress"}` + "\n", []step{refused(ReasonInvalidJSON), eof}},
		{"too deep", `{"type":"complete","token":"t","status":"succeeded","commandResult":` + nested(39) + "}\n", []step{refused(ReasonInvalidJSON), eof}},
		{"too many members", `{"type":"complete","token":"t","status":"succeeded","commandResult":{"kind":"structured","data":[` + strings.Repeat("0,", MaxMembers) + "0]}}\n",
			[]step{refused(ReasonInvalidJSON), eof}},
		{"the channel goes on after invalid_json", "nonsense\n" + `{"type":"progress"}` + "\n", []step{refused(ReasonInvalidJSON), progress("", nil, nil), eof}},

		// unknown_type.
		{"unknown type", `{"type":"hello"}` + "\n", []step{refused(ReasonUnknownType), eof}},
		{"invoke from the child", `{"type":"invoke"}` + "\n", []step{refused(ReasonUnknownType), eof}},
		{"type is case-sensitive", `{"type":"Complete","token":"t","status":"command_failed"}` + "\n", []step{refused(ReasonUnknownType), eof}},

		// invalid_frame.
		{"not an object", "[]\n", []step{refused(ReasonInvalidFrame), eof}},
		{"a string", `"complete"` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"no type", `{"token":"t","status":"command_failed"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"type not a string", `{"type":1}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"missing token", `{"type":"complete","status":"succeeded","commandResult":` + textResult + "}\n", []step{refused(ReasonInvalidFrame), eof}},
		{"token not a string", `{"type":"complete","token":1,"status":"command_failed"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"missing status", `{"type":"complete","token":"t"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"unknown status", `{"type":"complete","token":"t","status":"failed"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"succeeded without commandResult", `{"type":"complete","token":"t","status":"succeeded"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"commandResult null", `{"type":"complete","token":"t","status":"command_failed","commandResult":null}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"commandResult a string", `{"type":"complete","token":"t","status":"succeeded","commandResult":"hi"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"unknown complete member", `{"type":"complete","token":"t","status":"command_failed","error":"x"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"unknown progress member", `{"type":"progress","percent":5}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"effects null", `{"type":"complete","token":"t","status":"command_failed","effects":null}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"effects an object", `{"type":"complete","token":"t","status":"command_failed","effects":{}}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"65 effects", `{"type":"complete","token":"t","status":"command_failed","effects":` + effectsJSON(65) + "}\n", []step{refused(ReasonInvalidFrame), eof}},
		{"effect without ref", `{"type":"complete","token":"t","status":"command_failed","effects":[{"kind":"k"}]}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"effect with another member", `{"type":"complete","token":"t","status":"command_failed","effects":[{"kind":"k","ref":"r","at":1}]}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"effect ref a number", `{"type":"complete","token":"t","status":"command_failed","effects":[{"kind":"k","ref":1}]}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"effect kind of 257 bytes", `{"type":"complete","token":"t","status":"command_failed","effects":[{"kind":"` + strings.Repeat("k", 257) + `","ref":""}]}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"message of 1025 bytes", `{"type":"progress","message":"` + strings.Repeat("a", 1025) + `"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"message not a string", `{"type":"progress","message":null}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"done negative", `{"type":"progress","done":-1}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"done minus zero", `{"type":"progress","done":-0}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"done with a fraction", `{"type":"progress","done":1.0}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"done with an exponent", `{"type":"progress","done":1e2}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"total over int64", `{"type":"progress","total":9223372036854775808}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
		{"total a string", `{"type":"progress","total":"10"}` + "\n", []step{refused(ReasonInvalidFrame), eof}},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"byte by byte", iotest.OneByteReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, tc := range cases {
		for _, rd := range readers {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				r := NewReader(rd.wrap(strings.NewReader(tc.input)))
				for i, want := range tc.want {
					f, err := r.Next()
					checkStep(t, i, f, err, want)
				}
			})
		}
	}
}

func checkStep(t *testing.T, i int, f *Frame, err error, want step) {
	t.Helper()
	switch {
	case want.frame != nil:
		if err != nil {
			t.Fatalf("call %d: error %v; want a frame", i, err)
		}
		if !reflect.DeepEqual(f, want.frame) {
			t.Fatalf("call %d: frame\n%s\nwant\n%s", i, dump(f), dump(want.frame))
		}
	case want.reason != "":
		var e *Error
		if !errors.As(err, &e) || e.Reason != want.reason {
			t.Fatalf("call %d: got %v, %v; want reason %s", i, dump(f), err, want.reason)
		}
		if len(e.Message) > maxMessage || e.Message == "" {
			t.Fatalf("call %d: message of %d bytes: %q", i, len(e.Message), e.Message)
		}
	default:
		if err != io.EOF || f != nil {
			t.Fatalf("call %d: got %v, %v; want io.EOF", i, dump(f), err)
		}
	}
}

func dump(f *Frame) string {
	switch {
	case f == nil:
		return "<nil>"
	case f.Progress != nil:
		return string(AppendProgress(nil, *f.Progress))
	case f.Complete != nil:
		return string(AppendComplete(nil, *f.Complete))
	}
	return "<empty frame>"
}

// endless yields 'a' up to limit bytes and counts what it gave.
type endless struct {
	limit, read int
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.limit {
		return 0, io.EOF
	}
	n := min(len(p), e.limit-e.read)
	for i := range n {
		p[i] = 'a'
	}
	e.read += n
	return n, nil
}

// A child that writes 50 MB without a newline is refused after MaxFrame
// bytes: the Reader neither reads nor keeps the rest.
func TestReaderHugeLineIsBounded(t *testing.T) {
	src := &endless{limit: 50 << 20}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := NewReader(src).Next()
	runtime.ReadMemStats(&after)

	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonFrameTooLarge {
		t.Fatalf("Next = %v; want frame_too_large", err)
	}
	if src.read > MaxFrame+2*readBuffer {
		t.Errorf("read %d bytes of the line; want at most %d", src.read, MaxFrame+2*readBuffer)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("allocated %d bytes; want at most 2 MiB", alloc)
	}
}

// A read error that is not io.EOF is returned as it is, and again later.
func TestReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader(`{"type":"progress"}`+"\n{\"ty"), iotest.ErrReader(boom)))
	if f, err := r.Next(); err != nil || f.Progress == nil {
		t.Fatalf("first Next = %v, %v", f, err)
	}
	for range 2 {
		if _, err := r.Next(); err != boom {
			t.Fatalf("Next = %v; want the read error", err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	frames := []*Frame{
		{Progress: &Progress{}},
		{Progress: &Progress{Message: "step \"2\"\n\tof\\3 \u2028 \x00 é 😀", Done: i64(2), Total: i64(3)}},
		{Progress: &Progress{Message: strings.Repeat("x", MaxMessage), Total: i64(0)}},
		{Complete: &Complete{Token: strings.Repeat("ab", 32), Status: StatusSucceeded, CommandResult: []byte(`{"kind":"text","text":"line 1\nline 2"}`)}},
		{Complete: &Complete{Token: "t", Status: StatusCommandFailed}},
		{Complete: &Complete{Token: "t", Status: StatusSucceeded, CommandResult: []byte(`{"kind":"structured","data":{"a":[1,2.5,-3e10,"x",true,null,{}]}}`),
			Effects: []Effect{{Kind: "created", Ref: "file:/tmp/a b"}, {Kind: "ünïcode", Ref: "\"q\""}}}},
		{Complete: &Complete{Token: "t", Status: StatusCommandFailed, Effects: manyEffects(MaxEffects)}},
	}
	var stream []byte
	for _, f := range frames {
		if f.Progress != nil {
			stream = AppendProgress(stream, *f.Progress)
		} else {
			stream = AppendComplete(stream, *f.Complete)
		}
	}
	if n := bytes.Count(stream, []byte("\n")); n != len(frames) {
		t.Fatalf("%d newlines for %d frames:\n%s", n, len(frames), stream)
	}
	r := NewReader(bytes.NewReader(stream))
	for i, want := range frames {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame %d:\n%s\nwant\n%s", i, dump(got), dump(want))
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the frames: %v", err)
	}
}

// The append functions always write one line of valid JSON, whatever
// their strings hold.
func TestAppendKeepsFramesValid(t *testing.T) {
	line := AppendComplete(nil, Complete{Token: "t\xff", Status: StatusCommandFailed,
		CommandResult: []byte("{\"kind\":\n\"text\",\"text\":\"x\"}"), Effects: []Effect{{Kind: "\xc3", Ref: "\n"}}})
	f, err := NewReader(bytes.NewReader(line)).Next()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	want := &Complete{Token: "t\uFFFD", Status: StatusCommandFailed,
		CommandResult: []byte(`{"kind": "text","text":"x"}`), Effects: []Effect{{Kind: "\uFFFD", Ref: "\n"}}}
	if !reflect.DeepEqual(f.Complete, want) {
		t.Fatalf("got %s", dump(f))
	}
}
