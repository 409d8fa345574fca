package invoke

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Bounds of the diagnostics log.
const (
	// diagnosticsKeep is how much drained output is logged per stream of
	// one invocation; the rest is counted as dropped.
	diagnosticsKeep = 64 << 10
	// diagnosticsLine is the longest line logged as one; a longer one is
	// cut into pieces, each marked as continued.
	diagnosticsLine = 4 << 10
)

// DiagnosticsLog is where a host writes what its commands print when
// nobody is shown it (an agent's call has no terminal), and what became of
// each invocation. Every line names its invocation, so the lines of calls
// running at once can be told apart:
//
//	2026-12-01T03:04:05.123Z 9f2c…  start acme.deploy/status (mcp, task agent)
//	2026-12-01T03:04:05.125Z 9f2c…  stdout| deploying to stage
//	2026-12-01T03:04:05.126Z 9f2c…  stderr| warning: slow disk
//	2026-12-01T03:04:05.130Z 9f2c…  stdout: cut after 65536 bytes; 1200 more bytes dropped
//	2026-12-01T03:04:05.131Z 9f2c…  end succeeded (exit 0; stdout 66736 bytes, 1200 dropped; stderr 18 bytes)
//
// A line of output that did not end in a newline is marked "(no newline)";
// one longer than 4 KiB is logged in pieces marked "(continued)". It is
// safe for concurrent use: each line is one Write to the underlying
// writer, under a lock.
type DiagnosticsLog struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewDiagnosticsLog returns a log that writes to w.
func NewDiagnosticsLog(w io.Writer) *DiagnosticsLog {
	return &DiagnosticsLog{w: w, now: time.Now}
}

func (l *DiagnosticsLog) printf(id, format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	line := fmt.Sprintf("%s %s  %s\n", l.now().UTC().Format("2006-01-02T15:04:05.000Z"), id, fmt.Sprintf(format, args...))
	l.w.Write([]byte(line))
}

// start logs that an admitted invocation is starting.
func (l *DiagnosticsLog) start(id string, t *Target, req *Request, task string) {
	l.printf(id, "start %s (%s, task %s)", t.Command.Identity, req.Transport, task)
}

// end logs an invocation's outcome, and whether it could be recorded.
func (l *DiagnosticsLog) end(out *Outcome, recordErr error) {
	if l == nil {
		return
	}
	var b strings.Builder
	b.WriteString(out.Outcome)
	if out.Reason != "" {
		b.WriteString("/" + out.Reason)
	}
	d := out.Diagnostics
	if d.StdoutBytes+d.StderrBytes > 0 || out.Outcome == Succeeded || out.Outcome == CommandFailed {
		fmt.Fprintf(&b, " (exit %d; stdout %d bytes, %d dropped; stderr %d bytes, %d dropped)",
			out.ExitStatus, d.StdoutBytes, d.StdoutDropped, d.StderrBytes, d.StderrDropped)
	}
	if out.Message != "" {
		b.WriteString(": " + oneLine(out.Message))
	}
	id := out.InvocationID
	if id == "" {
		id = "-"
	}
	l.printf(id, "end %s", b.String())
	if recordErr != nil {
		l.printf(id, "not recorded: %s", oneLine(recordErr.Error()))
	}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ⏎ ") }

// lineLogger turns one stream of a command's output into log lines: it
// keeps a partial line until its newline, logs at most keep bytes, and
// says how much it dropped when the stream ends.
type lineLogger struct {
	log     *DiagnosticsLog
	id, tag string // the invocation; "stdout" or "stderr"
	partial []byte
	logged  int64
	keep    int64
	cut     bool
}

func newLineLogger(log *DiagnosticsLog, id, tag string) *lineLogger {
	return &lineLogger{log: log, id: id, tag: tag, keep: diagnosticsKeep}
}

// write logs p and returns how many of its bytes were kept; the rest is
// over the stream's bound and dropped.
func (g *lineLogger) write(p []byte) int64 {
	room := g.keep - g.logged
	if int64(len(p)) > room {
		p = p[:max(room, 0)]
		g.cut = true
	}
	kept := int64(len(p))
	g.logged += kept
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			g.partial = append(g.partial, p...)
			g.flushLong()
			break
		}
		g.partial = append(g.partial, p[:i]...)
		g.flushLine("")
		p = p[i+1:]
	}
	return kept
}

// flushLong logs the pieces of a partial line longer than one log line.
func (g *lineLogger) flushLong() {
	for len(g.partial) > diagnosticsLine {
		g.log.printf(g.id, "%s| %s (continued)", g.tag, g.partial[:diagnosticsLine])
		g.partial = append(g.partial[:0], g.partial[diagnosticsLine:]...)
	}
}

func (g *lineLogger) flushLine(mark string) {
	g.flushLong()
	g.log.printf(g.id, "%s| %s%s", g.tag, g.partial, mark)
	g.partial = g.partial[:0]
}

// close logs what is left of the stream: a last line without a newline,
// and how much was dropped.
func (g *lineLogger) close(total int64) {
	if len(g.partial) > 0 {
		mark := " (no newline)"
		if g.cut {
			mark = " (cut)"
		}
		g.flushLine(mark)
	}
	if g.cut {
		g.log.printf(g.id, "%s: cut after %d bytes; %d more bytes dropped", g.tag, g.logged, total-g.logged)
	}
}
