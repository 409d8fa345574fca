package extsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/release/extproto"
)

// childEnv selects the handler the test binary runs with Run when a test
// starts it as an extension.
const childEnv = "EXTSDK_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		Run(childHandlers[mode])
	}
	os.Exit(m.Run())
}

var childHandlers = map[string]Handler{
	// wait reports ready, then waits for its context to end.
	"wait": func(ctx context.Context, inv *Invocation) (Result, error) {
		inv.Progress("ready", -1, -1)
		<-ctx.Done()
		return Result{}, fmt.Errorf("stopped: %w", ctx.Err())
	},
	// stubborn reports ready and cancelled, and ignores cancellation.
	"stubborn": func(ctx context.Context, inv *Invocation) (Result, error) {
		inv.Progress("ready", -1, -1)
		<-ctx.Done()
		inv.Progress("cancelled", -1, -1)
		time.Sleep(time.Minute)
		return Text("too late"), nil
	},
	// env reports what the process sees of the channel.
	"env": func(ctx context.Context, inv *Invocation) (Result, error) {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, extproto.FD, syscall.F_GETFD, 0)
		return Structured(map[string]any{
			"fd":       os.Getenv(extproto.EnvFD),
			"token":    os.Getenv(extproto.EnvToken),
			"id":       os.Getenv(extproto.EnvInvocationID),
			"command":  os.Getenv(extproto.EnvCommand),
			"cloexec":  errno == 0 && flags&syscall.FD_CLOEXEC != 0,
			"greeting": "hello, " + inv.String("name"),
		}), nil
	},
}

type child struct {
	cmd    *exec.Cmd
	host   *os.File
	reader *extproto.Reader
}

// startChild starts the test binary as an extension running mode, with
// the channel on descriptor 3 as rukh does, and sends the invoke frame.
func startChild(t *testing.T, mode string, in *extproto.Invoke) *child {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	h, c := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "child")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), raceQuickExit(), childEnv+"="+mode,
		extproto.EnvFD+"=3", extproto.EnvToken+"="+testToken,
		extproto.EnvInvocationID+"="+in.InvocationID, extproto.EnvCommand+"="+in.Command)
	cmd.ExtraFiles = []*os.File{c}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		h.Close()
		if t.Failed() {
			t.Logf("the child's stderr:\n%s", stderr.String())
		}
	})
	if _, err := h.Write(in.AppendFrame(nil)); err != nil {
		t.Fatal(err)
	}
	return &child{cmd: cmd, host: h, reader: extproto.NewReader(h)}
}

// next returns the next frame, failing the test on anything else.
func (c *child) next(t *testing.T) *extproto.Frame {
	t.Helper()
	c.host.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := c.reader.Next()
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return f
}

func (c *child) wait(t *testing.T) *os.ProcessState {
	t.Helper()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not exit")
	}
	return c.cmd.ProcessState
}

func TestRunStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startChild(t, "wait", invoke(nil, time.Minute))
			if f := c.next(t); f.Progress == nil || f.Progress.Message != "ready" {
				t.Fatalf("first frame %+v", f)
			}
			c.cmd.Process.Signal(sig)
			f := c.next(t)
			if f.Complete == nil || f.Complete.Status != extproto.StatusCommandFailed || f.Complete.Token != testToken {
				t.Fatalf("report %+v", f)
			}
			if _, err := c.reader.Next(); err != io.EOF {
				t.Fatalf("after the report: %v", err)
			}
			if st := c.wait(t); st.ExitCode() != ExitFailed {
				t.Fatalf("exit %v", st)
			}
		})
	}
}

// After the first signal, a handler that ignores its context dies of the
// next one, without a report.
func TestRunSecondSignalKills(t *testing.T) {
	c := startChild(t, "stubborn", invoke(nil, time.Minute))
	if f := c.next(t); f.Progress == nil || f.Progress.Message != "ready" {
		t.Fatalf("first frame %+v", f)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	if f := c.next(t); f.Progress == nil || f.Progress.Message != "cancelled" {
		t.Fatalf("second frame %+v", f)
	}
	// The signal handler is released just after the context ends; keep
	// signalling until the default action applies.
	exited := make(chan struct{})
	go func() { c.cmd.Wait(); close(exited) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
loop:
	for {
		select {
		case <-exited:
			break loop
		case <-tick.C:
			c.cmd.Process.Signal(syscall.SIGTERM)
		case <-deadline:
			t.Fatal("the child ignored SIGTERM")
		}
	}
	ws, _ := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("exit %v; want killed by SIGTERM", c.cmd.ProcessState)
	}
	if _, err := c.reader.Next(); err != io.EOF {
		t.Fatalf("after the kill: %v; want a clean end without a report", err)
	}
}

func TestRunDeadline(t *testing.T) {
	c := startChild(t, "wait", invoke(nil, 200*time.Millisecond))
	c.next(t) // ready
	f := c.next(t)
	if f.Complete == nil || f.Complete.Status != extproto.StatusCommandFailed {
		t.Fatalf("report %+v", f)
	}
	if st := c.wait(t); st.ExitCode() != ExitFailed {
		t.Fatalf("exit %v", st)
	}
}

// Run hides the channel from programs the handler starts: the
// descriptor is close-on-exec and the variables naming it are gone.
func TestRunHidesTheChannel(t *testing.T) {
	in := invoke(testInputs(t), time.Minute)
	c := startChild(t, "env", in)
	f := c.next(t)
	if f.Complete == nil || f.Complete.Status != extproto.StatusSucceeded {
		t.Fatalf("report %+v", f)
	}
	var got struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(f.Complete.CommandResult, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"fd": "", "token": "", "id": in.InvocationID, "command": in.Command, "cloexec": true, "greeting": "hello, wörld \"x\"\n"}
	for k, v := range want {
		if got.Data[k] != v {
			t.Errorf("%s = %#v; want %#v", k, got.Data[k], v)
		}
	}
	if st := c.wait(t); st.ExitCode() != ExitSucceeded {
		t.Fatalf("exit %v", st)
	}
}

// Run started by hand (no channel) says so and exits 2.
func TestRunWithoutRukh(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=wait")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitUsage {
		t.Fatalf("exit %v; output %s", err, out)
	}
	if want := "install its release and run the command through rukh"; !strings.Contains(string(out), want) {
		t.Fatalf("output %q", out)
	}
}

// raceQuickExit keeps a race-enabled child from sleeping a second at exit.
func raceQuickExit() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
