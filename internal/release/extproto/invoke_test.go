package extproto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/values"
)

func sampleInputs() values.Map {
	dec, err := values.DecimalValue("12.50")
	if err != nil {
		panic(err)
	}
	return values.Map{
		"env":    {Value: values.StringValue("stage \"β\"\n"), Explicit: true},
		"limit":  {Value: values.IntegerValue(-9007199254740993), Explicit: false},
		"ratio":  {Value: values.NumberValue(1e-7), Explicit: true},
		"amount": {Value: dec, Explicit: true},
		"force":  {Value: values.BooleanValue(false), Explicit: false},
		"tags":   {Value: values.ListValue(values.String, []values.Value{values.StringValue("a"), values.StringValue("b")}), Explicit: true},
		"none":   {Value: values.ListValue(values.Integer, nil), Explicit: true},
	}
}

func TestInvokeRoundTrip(t *testing.T) {
	in := &Invoke{
		InvocationID: "0123456789abcdef0123456789abcdef",
		Command:      "acme.deploy/status",
		Transport:    TransportMCP,
		Interactive:  true,
		DeadlineMs:   30000,
		Inputs:       sampleInputs().AppendJSON(nil),
	}
	line := in.AppendFrame(nil)
	if !bytes.HasSuffix(line, []byte("}\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	want := `{"type":"invoke","protocol":"rukh.ipc/1","invocationId":"0123456789abcdef0123456789abcdef","command":"acme.deploy/status","transport":"mcp","interactive":true,"deadlineMs":30000,"inputs":{"amount":{"value":"12.50","explicit":true},"env":{"value":"stage \"β\"\n","explicit":true},"force":{"value":false,"explicit":false},"limit":{"value":-9007199254740993,"explicit":false},"none":{"value":[],"explicit":true},"ratio":{"value":1e-7,"explicit":true},"tags":{"value":["a","b"],"explicit":true}}}` + "\n"
	if string(line) != want {
		t.Fatalf("frame\n%s\nwant\n%s", line, want)
	}
	for _, l := range [][]byte{line, bytes.TrimSuffix(line, []byte("\n"))} {
		got, err := ParseInvoke(l)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("ParseInvoke = %+v; want %+v", got, in)
		}
	}
	got, err := ReadInvoke(bytes.NewReader(line))
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("ReadInvoke = %+v, %v", got, err)
	}
}

func TestInvokeEmptyInputs(t *testing.T) {
	for _, inputs := range [][]byte{nil, []byte("{\n}")} {
		line := (&Invoke{InvocationID: "i", Command: "p/c", Transport: TransportCLI, Inputs: inputs}).AppendFrame(nil)
		in, err := ParseInvoke(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if len(in.Inputs) < 2 || in.Inputs[0] != '{' {
			t.Fatalf("inputs %q", in.Inputs)
		}
	}
}

func TestParseInvokeRefuses(t *testing.T) {
	const good = `"protocol":"rukh.ipc/1","invocationId":"i","command":"p/c","transport":"cli","interactive":false,"deadlineMs":5`
	cases := []struct {
		name, line, reason string
	}{
		{"too large", `{"type":"invoke",` + good + `,"inputs":{"a":{"value":"` + strings.Repeat("a", MaxFrame) + `","explicit":true}}}`, ReasonFrameTooLarge},
		{"two lines", "{\"type\":\"invoke\",\n" + good + `,"inputs":{}}`, ReasonInvalidFrame},
		{"not JSON", `{"type":"invoke",` + good, ReasonInvalidJSON},
		{"duplicate", `{"type":"invoke",` + good + `,"inputs":{},"inputs":{}}`, ReasonInvalidJSON},
		{"trailing", `{"type":"invoke",` + good + `,"inputs":{}}{}`, ReasonInvalidJSON},
		{"other type", `{"type":"complete",` + good + `,"inputs":{}}`, ReasonUnknownType},
		{"no type", `{` + good + `,"inputs":{}}`, ReasonInvalidFrame},
		{"unknown member", `{"type":"invoke",` + good + `,"inputs":{},"cwd":"/"}`, ReasonInvalidFrame},
		{"other protocol", `{"type":"invoke",` + strings.Replace(good, "rukh.ipc/1", "rukh.ipc/2", 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"no protocol", `{"type":"invoke",` + strings.Replace(good, `"protocol":"rukh.ipc/1",`, "", 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"other transport", `{"type":"invoke",` + strings.Replace(good, `"cli"`, `"http"`, 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"interactive a string", `{"type":"invoke",` + strings.Replace(good, "false", `"no"`, 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"no interactive", `{"type":"invoke",` + strings.Replace(good, `"interactive":false,`, "", 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"negative deadline", `{"type":"invoke",` + strings.Replace(good, ":5", ":-5", 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"fractional deadline", `{"type":"invoke",` + strings.Replace(good, ":5", ":5.5", 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"no deadline", `{"type":"invoke",` + strings.Replace(good, `,"deadlineMs":5`, "", 1) + `,"inputs":{}}`, ReasonInvalidFrame},
		{"no inputs", `{"type":"invoke",` + good + `}`, ReasonInvalidFrame},
		{"inputs an array", `{"type":"invoke",` + good + `,"inputs":[]}`, ReasonInvalidFrame},
		{"input not an entry", `{"type":"invoke",` + good + `,"inputs":{"a":1}}`, ReasonInvalidFrame},
		{"input without value", `{"type":"invoke",` + good + `,"inputs":{"a":{"explicit":true}}}`, ReasonInvalidFrame},
		{"input null", `{"type":"invoke",` + good + `,"inputs":{"a":{"value":null,"explicit":true}}}`, ReasonInvalidFrame},
		{"input an object", `{"type":"invoke",` + good + `,"inputs":{"a":{"value":{},"explicit":true}}}`, ReasonInvalidFrame},
		{"input without explicit", `{"type":"invoke",` + good + `,"inputs":{"a":{"value":1}}}`, ReasonInvalidFrame},
		{"input with more", `{"type":"invoke",` + good + `,"inputs":{"a":{"value":1,"explicit":true,"source":"cli"}}}`, ReasonInvalidFrame},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ParseInvoke([]byte(tc.line))
			var e *Error
			if !errors.As(err, &e) || e.Reason != tc.reason {
				t.Fatalf("ParseInvoke = %+v, %v; want reason %s", in, err, tc.reason)
			}
		})
	}
}

func TestReadInvokeEnds(t *testing.T) {
	if _, err := ReadInvoke(strings.NewReader("")); err != io.EOF {
		t.Fatalf("empty: %v", err)
	}
	var e *Error
	if _, err := ReadInvoke(strings.NewReader(`{"type":"invoke"`)); !errors.As(err, &e) || e.Reason != ReasonTruncated {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := ReadInvoke(&endless{limit: 10 << 20}); !errors.As(err, &e) || e.Reason != ReasonFrameTooLarge {
		t.Fatalf("endless: %v", err)
	}
}
