// Package testhome builds real Rukh homes for tests: release directories
// written from a map, installed pinned by their own digest, and profiles
// applied through the same owner path as `rukh profile apply`.
package testhome

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/channelexec"
	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// WriteFiles writes files (slash-separated names) under dir; files under
// bin/ are executable.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// InstallPinned installs the release directory rel into dataDir, pinned
// by its own digest (no keys needed), and returns the owner operations.
func InstallPinned(t testing.TB, dataDir, rel string) *admin.Admin {
	t.Helper()
	m, err := trust.BuildManifest(rel)
	if err != nil {
		t.Fatal(err)
	}
	a := admin.New(dataDir)
	if _, err := a.Install(rel, m.Digest(), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	return a
}

// Apply applies a profile document.
func Apply(t testing.TB, a *admin.Admin, profile string) {
	t.Helper()
	if _, _, err := a.ApplyProfile([]byte(profile)); err != nil {
		t.Fatal(err)
	}
}

// ForkExec runs prog the way the host does at its simplest — a prepared
// rukh.ipc/1 channel on fd 3 and frame written to it — and returns the
// first line the program writes back: the floor benchmarks compare with.
func ForkExec(t testing.TB, prog string, env []string, frame []byte) string {
	return ForkExecArgv(t, []string{prog}, env, frame)
}

// ForkExecArgv is ForkExec of argv: a program and its arguments (the
// helper's `host -- PROG PROG`, say).
func ForkExecArgv(t testing.TB, argv, env []string, frame []byte) string {
	env = append([]string{extproto.EnvFD + "=3", extproto.EnvToken + "=" + strings.Repeat("0", 64)}, env...)
	line, err := channelexec.Run(argv, env, frame)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TempDir is t.TempDir for a directory that will hold a Rukh home.
// Installed releases are read-only, directories included, so the
// testing package's removal would fail for a user who is not root; the
// cleanup registered here (which runs first) makes them writable again.
func TempDir(t testing.TB) string {
	dir := t.TempDir()
	t.Cleanup(func() { MakeWritable(dir) })
	return dir
}

// MakeWritable gives every directory under dir back its owner's write
// permission, so that os.RemoveAll can remove installed releases.
func MakeWritable(dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}

// Limit is what docs/limits.md gives as the value of the limit name in
// the section whose heading names pkg ("(`descriptor`)"): the row that
// names it lists its constants and, in the same order, their values.
// A test compares it with the constant, so the document and the code
// cannot drift apart.
func Limit(t testing.TB, pkg, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	doc, err := os.ReadFile(filepath.Join(dir, "docs", "limits.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(doc), "\n**")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		if !strings.Contains(head, "`"+pkg) {
			continue
		}
		for _, line := range strings.Split(body, "\n") {
			cells := strings.Split(line, " | ")
			if !strings.HasPrefix(line, "| ") || len(cells) < 3 {
				continue
			}
			names := strings.Split(strings.TrimPrefix(cells[0], "| "), ", ")
			vals := strings.Split(cells[1], ", ")
			for i, n := range names {
				if n == "`"+name+"`" && i < len(vals) && len(names) == len(vals) {
					return vals[i]
				}
			}
		}
	}
	t.Fatalf("docs/limits.md gives no value for `%s` in the section of %s", name, pkg)
	return ""
}

// DirNames lists the names of the entries of dir, sorted.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// ExitOf waits up to bound for process pid (not necessarily this
// process's child) to exit, on the event of its pidfd becoming readable
// (pidfd_open(2)); an exited process not yet reaped counts as exited.
func ExitOf(pid int, bound time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(bound/time.Millisecond))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("poll its pidfd: %w", err)
		case n == 0:
			return fmt.Errorf("still running after %s", bound)
		}
		return nil
	}
}

// Buffer is a bytes.Buffer that a writer (a process's output, a logger)
// and the test may use at once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes is a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String is what was written so far.
func (b *Buffer) String() string { return string(b.Bytes()) }

// PairRatio runs x and y in alternation, each in turn first, for every
// iteration of b, and reports the median ratio of x's time to y's as the
// metric "ratio": a ratio that holds while the machine drifts within a
// run, as separate rows a minute apart do not.
func PairRatio(b *testing.B, x, y func(*testing.B)) {
	var ratios []float64
	timed := func(f func(*testing.B)) time.Duration {
		start := time.Now()
		f(b)
		return time.Since(start)
	}
	for i := 0; b.Loop(); i++ {
		var tx, ty time.Duration
		if i%2 == 0 {
			tx, ty = timed(x), timed(y)
		} else {
			ty, tx = timed(y), timed(x)
		}
		ratios = append(ratios, float64(tx)/float64(ty))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
}
