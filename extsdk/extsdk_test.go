package extsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/values"
)

const testToken = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// socketpair returns the host's end and the child's descriptor.
func socketpair(t *testing.T) (*os.File, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(fds[0]), "host")
	t.Cleanup(func() { host.Close() })
	return host, fds[1]
}

// session is what the host saw of one run.
type session struct {
	frames []*extproto.Frame
	end    error // what ended the Reader: io.EOF for a clean end
	status int
	stderr string
}

// complete returns the one complete frame, failing the test unless the
// session has exactly one, last, followed by a clean end.
func (s *session) complete(t *testing.T) *extproto.Complete {
	t.Helper()
	if s.end != io.EOF {
		t.Fatalf("the channel ended with %v", s.end)
	}
	var c *extproto.Complete
	for i, f := range s.frames {
		if f.Complete != nil {
			if c != nil || i != len(s.frames)-1 {
				t.Fatalf("complete frame %d of %d", i, len(s.frames))
			}
			c = f.Complete
		}
	}
	if c == nil {
		t.Fatalf("no complete frame; stderr: %s", s.stderr)
	}
	if c.Token != testToken {
		t.Fatalf("token %q", c.Token)
	}
	return c
}

func invoke(inputs values.Map, deadline time.Duration) *extproto.Invoke {
	return &extproto.Invoke{
		InvocationID: "0123456789abcdef0123456789abcdef",
		Command:      "acme.test/run",
		Transport:    extproto.TransportCLI,
		Interactive:  true,
		DeadlineMs:   deadline.Milliseconds(),
		Inputs:       inputs.AppendJSON(nil),
	}
}

// host plays rukh: it runs fn through RunMain on a socketpair, writes
// line as the invoke frame, and reads the child's frames until the end.
func host(t *testing.T, line []byte, fn Handler) *session {
	t.Helper()
	h, fd := socketpair(t)
	var stderr bytes.Buffer
	env := map[string]string{extproto.EnvFD: strconv.Itoa(fd), extproto.EnvToken: testToken}
	status := make(chan int, 1)
	go func() {
		status <- RunMain(Options{Getenv: func(k string) string { return env[k] }, Stderr: &stderr}, fn)
	}()
	if line != nil {
		if _, err := h.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	s := &session{}
	r := extproto.NewReader(h)
	for {
		f, err := r.Next()
		if err != nil {
			s.end = err
			break
		}
		s.frames = append(s.frames, f)
	}
	select {
	case s.status = <-status:
	case <-time.After(10 * time.Second):
		t.Fatal("RunMain did not return")
	}
	s.stderr = stderr.String()
	return s
}

func testInputs(t *testing.T) values.Map {
	dec, err := values.DecimalValue("12.50")
	if err != nil {
		t.Fatal(err)
	}
	return values.Map{
		"name":   {Value: values.StringValue("wörld \"x\"\n"), Explicit: true},
		"count":  {Value: values.IntegerValue(-9007199254740993), Explicit: false},
		"ratio":  {Value: values.NumberValue(0.1), Explicit: true},
		"whole":  {Value: values.NumberValue(3), Explicit: true},
		"amount": {Value: dec, Explicit: true},
		"force":  {Value: values.BooleanValue(true), Explicit: true},
		"tags":   {Value: values.ListValue(values.String, []values.Value{values.StringValue("a"), values.StringValue("b")}), Explicit: true},
		"ids":    {Value: values.ListValue(values.Integer, []values.Value{values.IntegerValue(1), values.IntegerValue(1 << 62)}), Explicit: true},
		"ws":     {Value: values.ListValue(values.Number, []values.Value{values.NumberValue(1.5), values.NumberValue(-2)}), Explicit: false},
		"none":   {Value: values.ListValue(values.String, nil), Explicit: true},
	}
}

func TestRunMainSucceeds(t *testing.T) {
	inputs := testInputs(t)
	start := time.Now()
	var seen *Invocation
	s := host(t, invoke(inputs, time.Minute).AppendFrame(nil), func(ctx context.Context, inv *Invocation) (Result, error) {
		seen = inv
		got := map[string]any{
			"name": inv.String("name"), "count": inv.Int("count"), "ratio": inv.Float("ratio"),
			"whole": inv.Float("whole"), "wholeInt": inv.Int("whole"), "amount": inv.Decimal("amount"),
			"force": inv.Bool("force"), "tags": inv.Strings("tags"), "ids": inv.Ints("ids"),
			"ws": inv.Floats("ws"), "none": inv.Strings("none"),
			"has":      []bool{inv.Has("name"), inv.Has("missing")},
			"explicit": []bool{inv.Explicit("name"), inv.Explicit("count"), inv.Explicit("missing")},
		}
		if err := inv.Progress("half", 1, 2); err != nil {
			return Result{}, err
		}
		if err := inv.Progress("unknown total", 3, -1); err != nil {
			return Result{}, err
		}
		if err := inv.AddEffect("created", "file:/tmp/x"); err != nil {
			return Result{}, err
		}
		if _, ok := ctx.Deadline(); !ok {
			return Result{}, errors.New("no deadline")
		}
		return Structured(got), nil
	})
	end := time.Now()
	if s.status != ExitSucceeded {
		t.Fatalf("status %d, stderr %q", s.status, s.stderr)
	}
	if s.stderr != "" {
		t.Errorf("stderr %q", s.stderr)
	}
	c := s.complete(t)
	want := `{"kind":"structured","data":{"amount":"12.50","count":-9007199254740993,"explicit":[true,false,false],"force":true,"has":[true,false],"ids":[1,4611686018427387904],"name":"wörld \"x\"\n","none":[],"ratio":0.1,"tags":["a","b"],"whole":3,"wholeInt":3,"ws":[1.5,-2]}}`
	if c.Status != extproto.StatusSucceeded || string(c.CommandResult) != want {
		t.Fatalf("report %s %s\nwant %s", c.Status, c.CommandResult, want)
	}
	if !reflect.DeepEqual(c.Effects, []extproto.Effect{{Kind: "created", Ref: "file:/tmp/x"}}) {
		t.Errorf("effects %v", c.Effects)
	}
	if len(s.frames) != 3 || s.frames[0].Progress == nil || s.frames[1].Progress == nil {
		t.Fatalf("%d frames", len(s.frames))
	}
	p0, p1 := s.frames[0].Progress, s.frames[1].Progress
	if p0.Message != "half" || *p0.Done != 1 || *p0.Total != 2 || p1.Message != "unknown total" || *p1.Done != 3 || p1.Total != nil {
		t.Errorf("progress %+v %+v", p0, p1)
	}
	if seen.ID != "0123456789abcdef0123456789abcdef" || seen.Command != "acme.test/run" || seen.Transport != "cli" || !seen.Interactive {
		t.Errorf("invocation %+v", seen)
	}
	// The deadline is a minute from when the invoke frame was read: no
	// earlier than a minute after the test started, no later than a minute
	// after the call ended (millisecond resolution on the wire).
	if dl := seen.Deadline; dl.Before(start.Add(time.Minute-time.Millisecond)) || dl.After(end.Add(time.Minute)) {
		t.Errorf("deadline %v; want a minute after the call started, between %v and %v", dl, start.Add(time.Minute), end.Add(time.Minute))
	}
	if err := seen.Progress("late", -1, -1); err != ErrReported {
		t.Errorf("Progress after the report = %v", err)
	}
	if err := seen.AddEffect("late", ""); err != ErrReported {
		t.Errorf("AddEffect after the report = %v", err)
	}
}

func TestRunMainText(t *testing.T) {
	s := host(t, invoke(nil, time.Minute).AppendFrame(nil), func(ctx context.Context, inv *Invocation) (Result, error) {
		return Text("line 1\nline \xff2\n"), nil
	})
	c := s.complete(t)
	if s.status != 0 || c.Status != extproto.StatusSucceeded || string(c.CommandResult) != "{\"kind\":\"text\",\"text\":\"line 1\\nline \uFFFD2\\n\"}" {
		t.Fatalf("status %d, report %s %s", s.status, c.Status, c.CommandResult)
	}
}

func TestRunMainFailures(t *testing.T) {
	errNoEnv := errors.New("no environment \"prod\"; use stage")
	cases := []struct {
		name   string
		res    Result
		err    error
		status int
		result string // "" for none
		stderr string // a substring
	}{
		{"error", Text("ignored"), errNoEnv, 1, "", "no environment \"prod\"; use stage\n"},
		{"wrapped error", Result{}, fmt.Errorf("deploy: %w", errNoEnv), 1, "", "deploy: no environment"},
		{"failed with a result", Result{}, Failed(errNoEnv, Text("partial")), 1, `{"kind":"text","text":"partial"}`, "no environment"},
		{"exit status", Result{}, WithExitStatus(errNoEnv, 3), 3, "", "no environment"},
		{"exit status out of range", Result{}, WithExitStatus(errNoEnv, 126), 1, "", "no environment"},
		{"both, nested", Result{}, fmt.Errorf("outer: %w", Failed(WithExitStatus(errNoEnv, 4), Structured([]int{1}))), 4,
			`{"kind":"structured","data":[1]}`, "outer: no environment"},
		{"failed with an oversize result", Result{}, Failed(errNoEnv, Text(strings.Repeat("x", extproto.MaxFrame))), 1, "", "left out"},
		{"failed with nil", Result{}, Failed(nil, Text("r")), 1, `{"kind":"text","text":"r"}`, "the command failed"},
		{"zero result", Result{}, nil, 1, "", "no result; return extsdk.Text"},
		{"unencodable result", Structured(map[string]any{"c": make(chan int)}), nil, 1, "", "encoding the structured result"},
		{"oversize result", Structured(strings.Repeat("x", extproto.MaxFrame)), nil, 1, "", "so return less data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := host(t, invoke(nil, time.Minute).AppendFrame(nil), func(ctx context.Context, inv *Invocation) (Result, error) {
				return tc.res, tc.err
			})
			c := s.complete(t)
			if s.status != tc.status || c.Status != extproto.StatusCommandFailed || string(c.CommandResult) != tc.result {
				t.Fatalf("status %d, report %s %q; want %d, command_failed %q", s.status, c.Status, c.CommandResult, tc.status, tc.result)
			}
			if !strings.Contains(s.stderr, tc.stderr) {
				t.Fatalf("stderr %q; want %q in it", s.stderr, tc.stderr)
			}
		})
	}
}

// A result that just fits in MaxFrame is sent.
func TestRunMainLargestResult(t *testing.T) {
	over := len(extproto.AppendComplete(nil, extproto.Complete{Token: testToken, Status: extproto.StatusSucceeded, CommandResult: Text("").raw})) - 1
	text := strings.Repeat("x", extproto.MaxFrame-over)
	s := host(t, invoke(nil, time.Minute).AppendFrame(nil), func(ctx context.Context, inv *Invocation) (Result, error) {
		return Text(text), nil
	})
	if c := s.complete(t); s.status != 0 || c.Status != extproto.StatusSucceeded {
		t.Fatalf("status %d %s; stderr %s", s.status, c.Status, s.stderr)
	}
}

func TestRunMainDeadline(t *testing.T) {
	start := time.Now()
	s := host(t, invoke(nil, 100*time.Millisecond).AppendFrame(nil), func(ctx context.Context, inv *Invocation) (Result, error) {
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("stopped: %w", ctx.Err())
		case <-time.After(10 * time.Second):
			return Text("too late"), nil
		}
	})
	elapsed := time.Since(start)
	c := s.complete(t) // before the handler's 10 s: the deadline ended it
	if s.status != 1 || c.Status != extproto.StatusCommandFailed || !strings.Contains(s.stderr, "stopped: context deadline exceeded") {
		t.Fatalf("status %d, %s, stderr %q", s.status, c.Status, s.stderr)
	}
	// Not before the deadline (a lower bound cannot flake; what ended the
	// call is the handler's error above, not a clock).
	if elapsed < 100*time.Millisecond {
		t.Fatalf("ended after %v, before its 100 ms deadline", elapsed)
	}
}

func TestRunMainUsage(t *testing.T) {
	never := func(ctx context.Context, inv *Invocation) (Result, error) {
		t.Error("the handler ran")
		return Text(""), nil
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"not started by rukh", nil, "RUKH_IPC_FD or RUKH_IPC_TOKEN is not set: this program is a Rukh extension"},
		{"no token", map[string]string{extproto.EnvFD: "3"}, "is not set"},
		{"not a number", map[string]string{extproto.EnvFD: "three", extproto.EnvToken: testToken}, `RUKH_IPC_FD="three" is not a descriptor number`},
		{"stdin", map[string]string{extproto.EnvFD: "0", extproto.EnvToken: testToken}, "of 3 or more"},
		{"not open", map[string]string{extproto.EnvFD: "999999", extproto.EnvToken: testToken}, "the channel must be an open socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			status := RunMain(Options{Getenv: func(k string) string { return tc.env[k] }, Stderr: &stderr}, never)
			if status != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("status %d, stderr %q; want 2 and %q", status, stderr.String(), tc.want)
			}
		})
	}
}

// A broken invoke frame ends the child with status 2 and no report.
func TestRunMainBadInvoke(t *testing.T) {
	never := func(ctx context.Context, inv *Invocation) (Result, error) {
		t.Error("the handler ran")
		return Text(""), nil
	}
	for _, tc := range []struct {
		name string
		line string
		want string
	}{
		{"not JSON", "hello\n", "invalid_json"},
		{"other protocol", strings.Replace(string(invoke(nil, time.Second).AppendFrame(nil)), "rukh.ipc/1", "rukh.ipc/9", 1), "invalid_frame"},
		{"truncated", `{"type":"invoke"`, "truncated"},
		{"nothing", "", "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, fd := socketpair(t)
			var stderr bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- RunMain(Options{Getenv: func(k string) string {
					return map[string]string{extproto.EnvFD: strconv.Itoa(fd), extproto.EnvToken: testToken}[k]
				}, Stderr: &stderr}, never)
			}()
			h.WriteString(tc.line)
			syscall.Shutdown(int(h.Fd()), syscall.SHUT_WR)
			rest, err := io.ReadAll(h)
			if err != nil || len(rest) != 0 {
				t.Errorf("the child wrote %q (%v)", rest, err)
			}
			if status := <-done; status != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("status %d, stderr %q; want 2 and %q", status, stderr.String(), tc.want)
			}
		})
	}
}

// Progress and AddEffect from goroutines of the handler race with each
// other and with the report without corrupting a frame.
func TestRunMainConcurrentProgress(t *testing.T) {
	s := host(t, invoke(nil, time.Minute).AppendFrame(nil), func(ctx context.Context, inv *Invocation) (Result, error) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for j := range 50 {
					inv.Progress(strings.Repeat("p", 2000), int64(j), 50)
				}
				inv.AddEffect("worker", strconv.Itoa(i))
			})
		}
		wg.Wait()
		return Text("done"), nil
	})
	c := s.complete(t)
	if len(s.frames) != 401 || len(c.Effects) != 8 {
		t.Fatalf("%d frames, %d effects", len(s.frames), len(c.Effects))
	}
	if m := s.frames[0].Progress.Message; len(m) != extproto.MaxMessage {
		t.Fatalf("message of %d bytes", len(m))
	}
}

func TestAddEffectLimits(t *testing.T) {
	inv := &Invocation{ch: os.Stdout}
	if err := inv.AddEffect(strings.Repeat("k", extproto.MaxEffectField+1), ""); err == nil {
		t.Error("long kind accepted")
	}
	if err := inv.AddEffect("k", "\xff"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	for i := range extproto.MaxEffects {
		if err := inv.AddEffect("k", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := inv.AddEffect("k", "one more"); err == nil {
		t.Error("effect 65 accepted")
	}
}

func TestGettersPanicOnMistakes(t *testing.T) {
	in, err := extproto.ParseInvoke(invoke(testInputs(t), time.Minute).AppendFrame(nil))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := newInvocation(in, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		get  func()
		want string
	}{
		{"missing", func() { inv.String("nmae") }, `extsdk: String("nmae"): the command has no value for input "nmae" (not given, no default); check Has("nmae") first`},
		{"string as int", func() { inv.Int("name") }, `extsdk: Int("name"): input "name" is a JSON string, not an integer`},
		{"int as string", func() { inv.String("count") }, `input "count" is a JSON number, not a string`},
		{"fraction as int", func() { inv.Int("ratio") }, `extsdk: Int("ratio"): 0.1 is not an integer of input "ratio"; read it with Float`},
		{"bool as string", func() { inv.Decimal("force") }, `input "force" is a JSON boolean, not a decimal`},
		{"list as scalar", func() { inv.String("tags") }, `input "tags" is a JSON array, not a string`},
		{"scalar as list", func() { inv.Strings("name") }, `input "name" is a JSON string, not a list of strings`},
		{"strings as ints", func() { inv.Ints("tags") }, `item 0 of input "tags" is a JSON string, not one of the integers Ints reads`},
		{"numbers as ints", func() { inv.Ints("ws") }, `1.5 is not an integer of input "ws"`},
		{"missing list", func() { inv.Floats("nothing") }, `Floats("nothing"): the command has no value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q; want %q", msg, tc.want)
				}
			}()
			tc.get()
		})
	}
}

// A nil slice, wherever it is, is encoded as an empty array (a schema
// that expects an array refuses null); nil maps, pointers, interfaces and
// []byte stay null, and values that encode themselves are left alone.
func TestStructuredNilSlices(t *testing.T) {
	type inner struct{ L []int }
	var nilInts []int
	v := struct {
		Items  []string
		M      map[string][]int
		NilMap map[string]int
		P      *inner
		NilP   *inner
		B      []byte
		Any    any
		Arr    [1][]string
		Raw    json.RawMessage
		hidden []int
	}{M: map[string][]int{"a": nil}, P: &inner{}, Any: nilInts}
	raw, err := Structured(v).encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"structured","data":{"Items":[],"M":{"a":[]},"NilMap":null,"P":{"L":[]},"NilP":null,"B":null,"Any":[],"Arr":[[]],"Raw":null}}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
	if raw, _ := Structured(nil).encode(); string(raw) != `{"kind":"structured","data":null}` {
		t.Errorf("nil: %s", raw)
	}
}
