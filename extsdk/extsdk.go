// Package extsdk makes a Go program a Rukh extension: it reads the
// invocation from the private channel, types the inputs and reports
// exactly one completion.
//
// A whole extension:
//
//	func main() {
//		extsdk.Run(func(ctx context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
//			return extsdk.Text("hello, " + inv.String("name") + "\n"), nil
//		})
//	}
//
// The handler's context ends when the host sends SIGTERM or SIGINT (the
// user cancelled, or the host is stopping) and at the invocation's
// deadline; a handler that keeps going after that is killed by the host
// after a short grace period. The result goes to the host only through
// the channel: stdout and stderr are for the person at the terminal (and
// under MCP they are diagnostics), never the result.
//
// The channel is rukh.ipc/1 (package extproto, docs/extensions.md).
package extsdk

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Handler is a command: it does the work for inv and returns its result,
// or an error when the command fails.
type Handler func(ctx context.Context, inv *Invocation) (Result, error)

// The exit statuses of Run and RunMain.
const (
	// ExitSucceeded: the handler returned a result and the host has the
	// succeeded report.
	ExitSucceeded = 0
	// ExitFailed: the handler returned an error (or an unusable result)
	// and the host has the command_failed report. WithExitStatus picks
	// another status.
	ExitFailed = 1
	// ExitUsage: no report was sent: the program was not started by the
	// host (no RUKH_IPC_FD or RUKH_IPC_TOKEN), or the channel failed.
	ExitUsage = 2
)

// Waits on the channel. The host writes the invoke frame as it starts the
// child and reads the child's frames as they come, so these only end a
// child whose host has stopped answering.
const (
	invokeTimeout = 10 * time.Second
	writeTimeout  = 10 * time.Second
)

// Options configure RunMain.
type Options struct {
	// Getenv reads the environment; nil means os.Getenv, and RunMain
	// then removes RUKH_IPC_FD and RUKH_IPC_TOKEN from the process
	// environment once read, so programs the handler starts do not
	// inherit them.
	Getenv func(string) string
	// Stderr receives the handler's error and messages about misuse;
	// nil means os.Stderr.
	Stderr io.Writer
}

// Run runs fn as the command of this process and exits, never returning.
// It reads the invoke frame from the descriptor in RUKH_IPC_FD, calls fn
// with a context that is cancelled on SIGTERM or SIGINT and at the
// invocation's deadline, sends exactly one complete frame and exits:
//
//   - fn returns a Result and nil: status succeeded, exit 0;
//   - fn returns an error: status command_failed, the error on stderr,
//     exit 1 (or the status from WithExitStatus); Failed attaches a
//     result to the report;
//   - not started by rukh, or the channel fails: a message on stderr,
//     no report, exit 2.
//
// A Result that cannot be sent (the zero Result, a Structured value
// encoding/json cannot encode, a frame over extproto.MaxFrame) turns a
// success into command_failed, with the reason on stderr. A panic in fn
// is not recovered: the program dies without a report, and the host
// records an execution failure.
func Run(fn Handler) {
	os.Exit(RunMain(Options{}, fn))
}

// RunMain is Run without the exit: it returns the exit status, so tests
// can run a handler in process. The channel is still the descriptor
// named by RUKH_IPC_FD (read through opts.Getenv), which RunMain closes.
func RunMain(opts Options, fn Handler) int {
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	usage := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "extsdk: "+format+"\n", args...)
		return ExitUsage
	}

	var fdText, token string
	if opts.Getenv != nil {
		fdText, token = opts.Getenv(extproto.EnvFD), opts.Getenv(extproto.EnvToken)
	} else {
		fdText, token = os.Getenv(extproto.EnvFD), os.Getenv(extproto.EnvToken)
		os.Unsetenv(extproto.EnvFD)
		os.Unsetenv(extproto.EnvToken)
	}
	if fdText == "" || token == "" {
		return usage("%s or %s is not set: this program is a Rukh extension; install its release and run the command through rukh", extproto.EnvFD, extproto.EnvToken)
	}
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 3 {
		return usage("%s=%q is not a descriptor number of 3 or more", extproto.EnvFD, fdText)
	}
	ch, err := openChannel(fd)
	if err != nil {
		return usage("%s=%d: %v; the channel must be an open socket from rukh", extproto.EnvFD, fd, err)
	}
	defer ch.Close()

	ch.SetReadDeadline(time.Now().Add(invokeTimeout))
	frame, err := extproto.ReadInvoke(ch)
	received := time.Now()
	if err != nil {
		return usage("reading the invoke frame: %v", err)
	}
	inv, err := newInvocation(frame, received, ch)
	if err != nil {
		return usage("the invoke frame: %v", err)
	}

	sigCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// After the first signal, a second one acts as if the program
		// had no handler.
		<-sigCtx.Done()
		stop()
	}()
	ctx, cancel := context.WithDeadline(sigCtx, inv.Deadline)
	defer cancel()

	res, ferr := fn(ctx, inv)
	c, status := inv.report(token, res, ferr, stderr)
	if err := inv.send(extproto.AppendComplete(nil, c), true); err != nil {
		return usage("sending the completion report: %v", err)
	}
	return status
}

// openChannel makes fd a non-blocking, close-on-exec *os.File, so reads
// and writes can have deadlines and programs the handler starts do not
// inherit the channel.
func openChannel(fd int) (*os.File, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "rukh-ipc"), nil
}

// report builds the complete frame for what the handler returned, and
// the exit status that goes with it.
func (inv *Invocation) report(token string, res Result, ferr error, stderr io.Writer) (extproto.Complete, int) {
	c := extproto.Complete{Token: token, Effects: inv.seal()}
	if ferr == nil {
		c.Status = extproto.StatusSucceeded
		raw, err := fit(c, res)
		if err == nil {
			c.CommandResult = raw
			return c, ExitSucceeded
		}
		fmt.Fprintf(stderr, "extsdk: the command's result cannot be sent: %v\n", err)
		c.Status = extproto.StatusCommandFailed
		return c, ExitFailed
	}
	c.Status = extproto.StatusCommandFailed
	if msg := ferr.Error(); msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	r, status := failureOf(ferr)
	if r != nil {
		raw, err := fit(c, *r)
		if err != nil {
			fmt.Fprintf(stderr, "extsdk: the result attached to the failure is left out: %v\n", err)
		}
		c.CommandResult = raw
	}
	return c, status
}

// fit returns the commandResult of r, checked to fit in the report c.
func fit(c extproto.Complete, r Result) ([]byte, error) {
	raw, err := r.encode()
	if err != nil {
		return nil, err
	}
	c.CommandResult = raw
	if n := len(extproto.AppendComplete(nil, c)) - 1; n > extproto.MaxFrame {
		return nil, fmt.Errorf("with this result of %d bytes the report is %d bytes; it may have at most %d, so return less data", len(raw), n, extproto.MaxFrame)
	}
	return raw, nil
}

// Result is what a command returns: Text or Structured, as its
// declaration (execute.result.kind) says. The host validates it against
// the declared schema; the zero Result is no result.
type Result struct {
	raw []byte // the commandResult object
	err error  // why Structured could not encode its value
}

// Text returns a text result. Invalid UTF-8 in s becomes U+FFFD, as
// encoding/json does.
func Text(s string) Result {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	raw := append([]byte(`{"kind":"text","text":`), strictjson.AppendString(nil, s)...)
	return Result{raw: append(raw, '}')}
}

// Structured returns a structured result: v encoded by encoding/json,
// which must match the declared result schema. A nil slice is encoded as
// an empty array, not null (a Go program's empty list is most often a nil
// slice, and a schema that expects an array refuses null); a nil map,
// pointer or interface stays null. An encoding error is reported when the
// result is sent, as a failure of the command.
func Structured(v any) Result {
	data, err := json.Marshal(emptySlices(reflect.ValueOf(v), 0))
	if err != nil {
		return Result{err: err}
	}
	raw := append([]byte(`{"kind":"structured","data":`), data...)
	return Result{raw: append(raw, '}')}
}

func (r Result) encode() ([]byte, error) {
	switch {
	case r.err != nil:
		return nil, fmt.Errorf("encoding the structured result: %w", r.err)
	case r.raw == nil:
		return nil, errors.New("the handler returned no result; return extsdk.Text(…) or extsdk.Structured(…)")
	}
	return r.raw, nil
}

// failure is an error with what the command's report should carry.
type failure struct {
	err    error
	result *Result
	status int
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// Failed returns an error that makes Run report command_failed with r as
// the command's result, for a command whose declared result describes
// failures too. The report still fails if r cannot be sent; r is then
// left out.
func Failed(err error, r Result) error {
	if err == nil {
		err = errors.New("the command failed")
	}
	return &failure{err: err, result: &r}
}

// WithExitStatus returns an error that makes Run exit with status (1 to
// 125) instead of 1 when the command fails; rukh passes a failed
// command's status on to its caller. Other values mean 1.
func WithExitStatus(err error, status int) error {
	if err == nil {
		err = errors.New("the command failed")
	}
	if status < 1 || status > 125 {
		status = ExitFailed
	}
	return &failure{err: err, status: status}
}

// failureOf finds the outermost result and exit status attached to err.
func failureOf(err error) (*Result, int) {
	var result *Result
	status := 0
	for e := err; ; {
		var f *failure
		if !errors.As(e, &f) {
			break
		}
		if result == nil {
			result = f.result
		}
		if status == 0 {
			status = f.status
		}
		e = f.err
	}
	if status == 0 {
		status = ExitFailed
	}
	return result, status
}

// emptySlices returns v with every nil slice in it (struct fields, map
// values, slice elements, behind pointers and interfaces) made an empty
// one. Values that encode themselves (json.Marshaler,
// encoding.TextMarshaler) are left as they are, and so is anything deeper
// than 64 levels (encoding/json refuses a cycle there).
func emptySlices(v reflect.Value, depth int) any {
	if !v.IsValid() {
		return nil
	}
	return copyEmpty(v, depth).Interface()
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func copyEmpty(v reflect.Value, depth int) reflect.Value {
	t := v.Type()
	if depth > 64 || t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return v
	}
	switch v.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return v // []byte is base64 text, null when nil
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(copyEmpty(v.Index(i), depth+1))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(copyEmpty(v.Index(i), depth+1))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), copyEmpty(it.Value(), depth+1))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(copyEmpty(v.Elem(), depth+1))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(copyEmpty(v.Elem(), depth+1))
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v) // unexported fields, which encoding/json leaves out anyway
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				out.Field(i).Set(copyEmpty(v.Field(i), depth+1))
			}
		}
		return out
	}
	return v
}
