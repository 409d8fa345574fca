package invoke

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func testLog() (*DiagnosticsLog, *bytes.Buffer) {
	var buf bytes.Buffer
	l := NewDiagnosticsLog(&buf)
	l.now = func() time.Time { return time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC) }
	return l, &buf
}

// Each chunk sequence gives exactly these log lines (timestamp and id
// stripped) and keeps exactly so many bytes.
func TestLineLogger(t *testing.T) {
	long := strings.Repeat("x", diagnosticsLine+10)
	for _, tc := range []struct {
		name   string
		chunks []string
		keep   int64
		want   []string
		kept   int64
	}{
		{"lines", []string{"a\nb\n"}, 100, []string{"stdout| a", "stdout| b"}, 4},
		{"split across reads", []string{"he", "llo\nwor", "ld\n"}, 100, []string{"stdout| hello", "stdout| world"}, 12},
		{"no final newline", []string{"a\nb"}, 100, []string{"stdout| a", "stdout| b (no newline)"}, 3},
		{"empty line", []string{"\n"}, 100, []string{"stdout| "}, 1},
		{"cut mid-line", []string{"abc\ndefgh\n"}, 6, []string{"stdout| abc", "stdout| de (cut)", "stdout: cut after 6 bytes; 4 more bytes dropped"}, 6},
		{"cut at a line end", []string{"abc\n", "def\n"}, 4, []string{"stdout| abc", "stdout: cut after 4 bytes; 4 more bytes dropped"}, 4},
		{"long line", []string{long + "\n"}, 1 << 20, []string{"stdout| " + long[:diagnosticsLine] + " (continued)", "stdout| xxxxxxxxxx"}, int64(len(long)) + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, buf := testLog()
			g := newLineLogger(l, "ID", "stdout")
			g.keep = tc.keep
			var kept, total int64
			for _, c := range tc.chunks {
				kept += g.write([]byte(c))
				total += int64(len(c))
			}
			g.close(total)
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				got = append(got, strings.TrimPrefix(line, "2026-12-01T03:04:05.000Z ID  "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if kept != tc.kept {
				t.Errorf("kept %d, want %d", kept, tc.kept)
			}
		})
	}
}

// The outcome line says what became of the invocation, and whether it
// could be recorded.
func TestDiagnosticsEnd(t *testing.T) {
	for _, tc := range []struct {
		out  Outcome
		err  error
		want string
	}{
		{Outcome{InvocationID: "A", Outcome: Succeeded, Diagnostics: Diagnostics{StdoutBytes: 70000, StdoutDropped: 4464}},
			nil, "A  end succeeded (exit 0; stdout 70000 bytes, 4464 dropped; stderr 0 bytes, 0 dropped)\n"},
		{Outcome{InvocationID: "B", Outcome: Rejected, Reason: ReasonInvalidInput, Message: "property \"count\": too big\nsee schema"},
			nil, "B  end rejected/invalid_input: property \"count\": too big ⏎ see schema\n"},
		{Outcome{InvocationID: "C", Outcome: Cancelled, Reason: ReasonInterrupted},
			errors.New("store locked"), "C  end cancelled/interrupted\nC  not recorded: store locked\n"},
		{Outcome{Outcome: Rejected, Reason: ReasonStoreUnavailable, Message: "locked"},
			nil, "-  end rejected/store_unavailable: locked\n"},
	} {
		l, buf := testLog()
		l.end(&tc.out, tc.err)
		got := strings.ReplaceAll(buf.String(), "2026-12-01T03:04:05.000Z ", "")
		if got != tc.want {
			t.Errorf("logged %q, want %q", got, tc.want)
		}
	}
	var none *DiagnosticsLog
	none.end(&Outcome{}, nil) // a nil log logs nothing and does not panic
}

// Many invocations logging at once never mix their lines.
func TestDiagnosticsConcurrent(t *testing.T) {
	l, buf := testLog()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newLineLogger(l, fmt.Sprintf("inv%d", i), "stderr")
			for range 200 {
				g.write([]byte(fmt.Sprintf("line of inv%d\n", i)))
			}
			g.close(0)
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for _, line := range lines {
		var id string
		if _, err := fmt.Sscanf(line, "2026-12-01T03:04:05.000Z %s", &id); err != nil || !strings.HasSuffix(line, "stderr| line of "+id) {
			t.Fatalf("mixed line %q", line)
		}
	}
}
