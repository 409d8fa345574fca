package invoke

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

// Bounds of the execute phase.
const (
	// channelGrace bounds how long the host waits for the channel to close
	// once the command's process group is gone (a process that escaped the
	// group may still hold fd 3).
	channelGrace = 500 * time.Millisecond
	// sendTimeout bounds writing the invoke frame.
	sendTimeout = 2 * time.Second
	// killGrace bounds how long a supervising helper has to end a call
	// once asked to kill it (spawn.Kill) before it is itself killed with
	// SIGKILL (Process.Kill): ending every process of the call takes it
	// milliseconds, unless the command stopped or traces it.
	killGrace = time.Second
)

// abortKey carries the channel WithAbort gives.
type abortKey struct{}

// WithAbort returns a context whose calls are killed at once, without
// the grace their stop otherwise has, when abort is closed: the second
// Ctrl-C of a command line, after the first cancelled ctx.
func WithAbort(ctx context.Context, abort <-chan struct{}) context.Context {
	return context.WithValue(ctx, abortKey{}, abort)
}

func abortOf(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(abortKey{}).(<-chan struct{})
	return ch
}

// EnvAllowlist is the caller's environment a command sees
// (envpolicy.Allowlist).
var EnvAllowlist = envpolicy.Allowlist

// childEnv is the environment a command starts with: the caller's that
// the policy allows, then extra.
func childEnv(caller []string, extra ...string) []string {
	var env []string
	for _, kv := range caller {
		if name, _, _ := strings.Cut(kv, "="); envpolicy.Allowed(name) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// channelResult is what the host read from the private channel.
type channelResult struct {
	complete *extproto.Complete
	err      error // a protocol violation
}

var errTwoReports = errors.New("the command sent a second completion report")

// fileWriter is a writer over a file that its host watches, as rukhd
// watches a client's stream for a reader that went away: the command is
// given the file itself, as a command in-process is given the terminal,
// and only the host's own writes go through the writer.
type fileWriter interface {
	io.Writer
	File() *os.File
}

// drain copies a child's output stream: to the caller's writer when it
// gave one, else into the diagnostics log as lines, bounded per stream,
// counting the rest as dropped. It always reads to the end so the child
// never blocks on a full pipe.
type drain struct {
	total, dropped atomic.Int64
	out            io.Writer   // the caller's writer: gets everything
	log            *lineLogger // else: the diagnostics log
}

// drainBufs are the drains' read buffers, reused across calls: two a
// call, which a daemon would otherwise allocate (and collect) for every
// call it runs.
var drainBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (d *drain) run(r *os.File, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	b := drainBufs.Get().(*[32 << 10]byte)
	defer drainBufs.Put(b)
	buf := b[:]
	for {
		n, err := r.Read(buf)
		if n > 0 {
			d.total.Add(int64(n))
			if d.out != nil {
				d.out.Write(buf[:n])
			} else {
				d.dropped.Add(int64(n) - d.log.write(buf[:n]))
			}
		}
		if err != nil {
			if d.log != nil {
				d.log.close(d.total.Load())
			}
			return
		}
	}
}

// run executes an admitted invocation and decides its outcome.
// It commits the call's begin record (b) before the command runs, and
// returns nil when that was refused (the refusal is b's).
func (c *Core) run(ctx context.Context, t *Target, req *Request, id string, ad *admission, b *beginning) *Outcome {
	cmd := t.Command
	// The program's path comes from trust, not from a record: the data
	// dir's content-addressed release directory and the declared program.
	releaseDir := filepath.Join(c.DataDir, "releases", strings.TrimPrefix(t.Release.Digest, "sha256:"))
	prog := filepath.Join(releaseDir, filepath.FromSlash(cmd.Execute.Program))
	if fi, err := os.Lstat(prog); err != nil || !fi.Mode().IsRegular() {
		return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed,
			Message: fmt.Sprintf("cannot run %s: its program %s is missing or not a regular file; reinstall %s %s", cmd.Identity, prog, t.Package.Package, t.Package.Version)}
	}
	managed := cmd.Execute.Mapping == descriptor.Managed
	var frame []byte
	if managed {
		frame = (&extproto.Invoke{
			InvocationID: id, Command: cmd.Identity, Transport: req.Transport, Interactive: req.Interactive,
			DeadlineMs: ad.deadline.Milliseconds(), Inputs: ad.inputs.AppendJSON(nil),
		}).AppendFrame(nil)
		if len(frame) > extproto.MaxFrame {
			return rejected(ReasonInvalidInput, "the inputs of %s take %d bytes, more than one rukh.ipc/1 frame holds (%d); give shorter values",
				cmd.Identity, len(frame), extproto.MaxFrame)
		}
	}
	token := newToken()
	args := append([]string{prog}, cmd.Execute.Args...)
	env := childEnv(req.Env)
	// Every command carries its invocation id, so that what it leaves
	// running can be found if its host dies (hostAlive).
	env = append(env, extproto.EnvInvocationID+"="+id)
	if !managed {
		args = append(args, req.Argv...)
	} else {
		env = append(env, extproto.EnvFD+"=3", extproto.EnvToken+"="+token, extproto.EnvCommand+"="+cmd.Identity)
	}
	// The enforcement helper supervises the command: it ends everything
	// the command started when the command exits, when the call is
	// killed and when the host dies (a kill -9 of rukh or rukhd
	// included; package spawn, Job). A command an agent called (MCP) gets a
	// session of its own: no controlling terminal, so it can neither read
	// the owner's terminal nor ask on it (nor pass for the owner at `rukh
	// approve`). A CLI command gets a group of its own, or joins its
	// host's job in the foreground of the caller's terminal (package
	// spawn).
	iso := spawn.Group
	if req.Transport == TransportMCP {
		iso = spawn.Session
	}
	ex := &exec.Cmd{Path: prog, Args: args, Dir: req.Dir, Env: env}
	if req.Stdin != nil {
		ex.Stdin = req.Stdin
		ex.WaitDelay = channelGrace // a stdin copy must not outlive the command
	}
	enf, refused := c.prepareEnforcement(ad.task, releaseDir, id, ad.grants)
	if refused != nil {
		return refused
	}
	defer enf.cleanup()

	var closeAfterStart []*os.File
	var drains sync.WaitGroup
	var outDrain, errDrain drain
	var readEnds []*os.File
	for _, s := range []struct {
		given io.Writer
		set   *io.Writer
		d     *drain
		tag   string
	}{{req.Stdout, &ex.Stdout, &outDrain, "stdout"}, {req.Stderr, &ex.Stderr, &errDrain, "stderr"}} {
		switch w := s.given.(type) {
		case *os.File:
			*s.set = w
			continue
		case fileWriter:
			*s.set = w.File()
			continue
		case nil:
			s.d.log = newLineLogger(req.Diagnostics, id, s.tag)
		default:
			s.d.out = w
		}
		r, w, err := os.Pipe()
		if err != nil {
			return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: err.Error()}
		}
		*s.set = w
		closeAfterStart = append(closeAfterStart, w)
		readEnds = append(readEnds, r)
		drains.Add(1)
		go s.d.run(r, &drains)
	}

	var conn net.Conn
	if managed {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll(closeAfterStart)
			return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: "socketpair: " + err.Error()}
		}
		parent := os.NewFile(uintptr(fds[0]), "rukh-ipc")
		child := os.NewFile(uintptr(fds[1]), "rukh-ipc-child")
		conn, err = net.FileConn(parent)
		parent.Close()
		if err != nil {
			child.Close()
			closeAll(closeAfterStart)
			return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: err.Error()}
		}
		defer conn.Close()
		ex.ExtraFiles = []*os.File{child}
		closeAfterStart = append(closeAfterStart, child)
	}
	if w, err := enf.wrap(ex); err != nil {
		closeAll(closeAfterStart)
		closeAll(readEnds)
		return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: err.Error()}
	} else {
		closeAfterStart = append(closeAfterStart, w...)
	}

	if ctx.Err() != nil {
		// Cancelled while it waited to be admitted: nothing is started.
		closeAll(closeAfterStart)
		closeAll(readEnds)
		return cancelledBeforeStart(cmd, req)
	}
	// The begin record is durable before the command runs. A helper that
	// holds the command at its gate is started while the record commits
	// (by the client that forwarded the call, once asked: Spawner, or
	// here in a goroutine of its own: startWhileCommitting), and the gate
	// opens once it is durable; else the record comes first.
	if !enf.gated() {
		if refused, _ := b.wait(); refused != nil {
			closeAll(closeAfterStart)
			closeAll(readEnds)
			return nil
		}
		b.started()
	}
	job := spawn.Job{Isolation: iso, Supervised: enf.supervised()}
	var proc Process
	var err error
	switch {
	case req.Spawner != nil:
		proc, err = req.Spawner.Spawn(ex, job, func() { b.wait() })
	case enf.gated():
		proc, err = startWhileCommitting(ex, job, b)
	default:
		proc, err = startLocal(ex, job)
	}
	closeAll(closeAfterStart)
	if err != nil {
		closeAll(readEnds)
		if errors.Is(err, ErrSpawnerGone) {
			// A helper the client started exits at its closed gate
			// with its parent: nothing ran.
			return cancelledBeforeStart(cmd, req)
		}
		return enf.startError(cmd.Identity, err)
	}
	if enf.gated() {
		refused, _ := b.wait()
		if refused == nil && ctx.Err() == nil {
			b.started()
			enf.open()
		} else {
			// Refused, or cancelled while the record committed: the
			// helper exits at its closed gate, and nothing ran.
			enf.closeGate()
			proc.Wait()
			closeAll(readEnds)
			drains.Wait()
			if refused != nil {
				return nil
			}
			return cancelledBeforeStart(cmd, req)
		}
	}
	signal := proc.Signal

	reports := make(chan channelResult, 1)
	if managed {
		go readChannel(conn, frame, req.OnProgress, reports)
	}
	waited := make(chan int, 1)
	go func() { waited <- proc.Wait() }()

	// Wait for the process, stopping it on cancellation or at the deadline:
	// SIGTERM to the group, then SIGKILL when the grace period (which
	// never renews) runs out — which a supervising helper carries out for
	// the whole call (spawn.Kill) — and, should the helper not have ended
	// it within killGrace (a command that stops or traces its helper
	// keeps it from acting on any signal but SIGKILL), SIGKILL of the
	// helper itself (Process.Kill). A second cancellation (the second
	// Ctrl-C) goes straight to the SIGKILL. The first accepted cause is
	// the one kept. started is the start of the deadline's clock.
	started := time.Now()
	deadline := time.NewTimer(ad.deadline)
	defer deadline.Stop()
	var cause string
	var kill, destroy <-chan time.Time
	done, abort := ctx.Done(), abortOf(ctx)
	killed := false // Process.Kill was sent
	escalate := func() {
		kill = nil
		if !killed && destroy == nil {
			signal(syscall.SIGKILL)
			destroy = time.After(killGrace)
		}
	}
	destroyNow := func() {
		kill, destroy, killed = nil, nil, true
		signal(syscall.SIGKILL)
		proc.Kill()
	}
	stop := func(reason string) {
		if cause == "" {
			cause = reason
			signal(syscall.SIGTERM)
			kill = time.After(c.Grace)
		}
	}
	var status int
wait:
	for {
		select {
		case status = <-waited:
			break wait
		case <-done:
			done = nil
			reason := ReasonInterrupted
			if req.CancelReason != nil {
				reason = req.CancelReason()
			}
			stop(reason)
		case <-abort:
			// The second Ctrl-C: no grace for a call asked twice.
			abort = nil
			if cause == "" {
				stop(ReasonInterrupted)
			}
			destroyNow()
		case <-deadline.C:
			stop(ReasonDeadline)
		case <-kill:
			escalate()
		case <-destroy:
			destroyNow()
		}
	}
	// In the foreground, Ctrl-C reaches the command and this host at once,
	// and the command may end first: it was interrupted all the same.
	if proc.InForeground() && cause == "" && (ctx.Err() != nil || status == 128+int(syscall.SIGINT)) {
		cause = ReasonInterrupted
		if ctx.Err() != nil && req.CancelReason != nil {
			cause = req.CancelReason()
		}
	}
	// A call that ended after its deadline did not end in time, whatever
	// it reports: its host (or the helper) was held up past it — stopped,
	// say — and the deadline never saw its moment.
	if cause == "" && time.Since(started) > ad.deadline {
		cause = ReasonDeadline
	}
	// Cleanup: whatever is left of the group (grandchildren) dies now,
	// and in a host of one call every process below it, whatever its
	// group or session.
	signal(syscall.SIGKILL)
	spawn.KillOrphans()
	if killed || status == 128+int(syscall.SIGKILL) {
		// The helper was killed (by the host, or by a host command):
		// what it supervised went to this process, if it hosts many
		// calls (spawn.AdoptStrays).
		spawn.KillStrays()
	}

	var rep channelResult
	if managed {
		select {
		case rep = <-reports:
		case <-time.After(channelGrace):
			conn.Close() // a process outside the group still holds fd 3
			rep = <-reports
		}
	}
	drained := make(chan struct{})
	go func() { drains.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(channelGrace):
		closeAll(readEnds) // a process outside the group still holds the pipe
		<-drained
	}

	if msg := enf.failure(); msg != "" {
		// The helper could not confine the command, or not exec it: the
		// command never ran.
		if path, ok := strings.CutPrefix(msg, sandbox.ErrGrantSymlink.Error()+": "); ok {
			return grantChanged(cmd.Identity, ad.grants, path)
		}
		if strings.Contains(msg, sandbox.ErrUnavailable.Error()) {
			return rejected(ReasonEnforcementUnavailable, "cannot apply enforcement %q to %s: %s; nothing was run", enf.profile, cmd.Identity, msg)
		}
		return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: fmt.Sprintf("cannot start %s: %s", cmd.Identity, msg)}
	}
	out := finalize(cmd, managed, token, cause, ad, rep, status)
	out.Diagnostics = Diagnostics{
		StdoutBytes: outDrain.total.Load(), StderrBytes: errDrain.total.Load(),
		StdoutDropped: outDrain.dropped.Load(), StderrDropped: errDrain.dropped.Load(),
	}
	return out
}

// cancelledBeforeStart is the outcome of a call cancelled before its
// command was started.
func cancelledBeforeStart(cmd *descriptor.Command, req *Request) *Outcome {
	reason := ReasonInterrupted
	if req.CancelReason != nil {
		reason = req.CancelReason()
	}
	return &Outcome{Outcome: Cancelled, Reason: reason, Message: fmt.Sprintf("%s was cancelled before it started (%s)", cmd.Identity, reason)}
}

func readChannel(conn net.Conn, frame []byte, onProgress func(extproto.Progress), reports chan<- channelResult) {
	var res channelResult
	defer func() { reports <- res }()
	conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	if _, err := conn.Write(frame); err != nil {
		// The command may have finished without reading; what it sent
		// still counts, so keep reading.
		_ = err
	}
	r := extproto.NewReader(conn)
	for {
		f, err := r.Next()
		// A command that exits without reading its invoke frame makes the
		// kernel reset the socket; what it sent before is still counted.
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
			return
		}
		if err != nil {
			res.err = err
			return
		}
		if f.Progress != nil {
			if res.complete == nil && onProgress != nil {
				onProgress(*f.Progress)
			}
			continue
		}
		if res.complete != nil {
			res.err = errTwoReports
			return
		}
		res.complete = f.Complete
	}
}

// finalize decides the outcome from the cause of stopping, the channel and
// the exit status: success needs a valid succeeded report, exit status 0
// and the group cleaned up (which run has done).
func finalize(cmd *descriptor.Command, managed bool, token, cause string, ad *admission, rep channelResult, status int) *Outcome {
	fail := func(reason, format string, args ...any) *Outcome {
		return &Outcome{Outcome: ExecutionFailed, Reason: reason, ExitStatus: status, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case cause == ReasonDeadline:
		return &Outcome{Outcome: Cancelled, Reason: cause, ExitStatus: status,
			Message: fmt.Sprintf("%s was stopped: its deadline of %s passed", cmd.Identity, ad.deadline)}
	case cause != "":
		return &Outcome{Outcome: Cancelled, Reason: cause, ExitStatus: status, Message: fmt.Sprintf("%s was stopped (%s)", cmd.Identity, cause)}
	case status < 0:
		// Its client went away or misreported it (rukhd): no report
		// decides what an exit nobody saw means.
		return fail(ReasonProtocolError, "the exit status of %s could not be known; its outcome is unknown", cmd.Identity)
	case !managed && status == 0:
		return &Outcome{Outcome: Succeeded}
	case !managed:
		return &Outcome{Outcome: CommandFailed, ExitStatus: status, Message: fmt.Sprintf("%s exited with status %d", cmd.Identity, status)}
	case rep.err != nil:
		return fail(ReasonProtocolError, "%s broke the rukh.ipc/1 protocol: %v", cmd.Identity, rep.err)
	case rep.complete == nil:
		return fail(ReasonProtocolError, "%s exited with status %d without a completion report", cmd.Identity, status)
	case subtle.ConstantTimeCompare([]byte(rep.complete.Token), []byte(token)) != 1:
		return fail(ReasonProtocolError, "%s sent a completion report with the wrong token", cmd.Identity)
	}
	c := rep.complete
	var result *resultschema.CommandResult
	if c.CommandResult != nil {
		decl := cmd.Execute.Result
		if decl == nil {
			return fail(ReasonResultInvalid, "%s returned a result but declares none", cmd.Identity)
		}
		res, verr := decl.Validate(c.CommandResult, resultschema.DefaultLimits())
		if verr != nil {
			reason := ReasonResultInvalid
			if verr.Code == resultschema.CodeResultTooLarge {
				reason = ReasonResultTooLarge
			}
			return fail(reason, "%s returned a result that does not match its declaration: %v", cmd.Identity, verr)
		}
		result = res
	}
	switch c.Status {
	case Succeeded:
		if status != 0 {
			return fail(ReasonProtocolError, "%s reported success but exited with status %d", cmd.Identity, status)
		}
		if cmd.Execute.Result != nil && result == nil {
			return fail(ReasonResultInvalid, "%s reported success without the result it declares", cmd.Identity)
		}
		return &Outcome{Outcome: Succeeded, Result: result, Effects: c.Effects}
	default: // command_failed
		if status == 0 {
			status = 1
		}
		return &Outcome{Outcome: CommandFailed, ExitStatus: status, Result: result, Effects: c.Effects,
			Message: fmt.Sprintf("%s failed (exit status %d)", cmd.Identity, status)}
	}
}

func newToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("invoke: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// startWhileCommitting starts the helper, which holds the command at its
// gate, in a goroutine of its own while the begin record commits on the
// call's goroutine. The commit is the longer of the two (0.4-0.6 ms
// against 0.25 ms for the fork and exec), so it is the one that does not
// wait for a new goroutine to be scheduled: that took 0.1 ms here when
// the commit was the new goroutine (docs/benchmarks.md, "Eighth pass").
func startWhileCommitting(ex *exec.Cmd, job spawn.Job, b *beginning) (Process, error) {
	type result struct {
		p   Process
		err error
	}
	started := make(chan result, 1)
	go func() {
		p, err := startLocal(ex, job)
		started <- result{p, err}
	}()
	b.wait()
	r := <-started
	return r.p, r.err
}
