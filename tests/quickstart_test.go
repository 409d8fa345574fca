package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// readmeBlocks are the ```sh blocks of README.md, in order.
func readmeBlocks(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// commandOf is a line of a README block without its comment.
func commandOf(line string) string {
	cmd, _, _ := strings.Cut(line, "#")
	return strings.TrimSpace(cmd)
}

// promised is what the comment of a README line says the command prints
// ("# run it; it prints HELLO, ADA!"), or "".
var promised = regexp.MustCompile(`#.*\bit prints (.+?)\s*$`)

// The README's first screen runs the two commands the project promises,
// and its quickstart works pasted into a shell as it is written: the
// block is taken from README.md verbatim and run by sh as a script and by
// bash reading it line by line from its input (as a terminal gives a
// pasted block), with the built binaries in ./bin, on throwaway homes.
// Every command whose comment says "it prints X" prints the line X; the
// block fails on the first command that fails; the owner ends with the
// signed release installed; and the block stops what it started in the
// background: when the shell ends, nothing of its process group is left
// and nothing holds its output.
func TestQuickstart(t *testing.T) {
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("README.md has no sh blocks")
	}
	var first []string
	for _, l := range strings.Split(strings.TrimSpace(blocks[0]), "\n") {
		first = append(first, commandOf(l))
	}
	if want := []string{"make demo", "make test"}; !slices.Equal(first, want) {
		t.Errorf("the README's first block runs %q; want %q", first, want)
	}
	i := slices.IndexFunc(blocks, func(b string) bool { return strings.Contains(b, "rukh ext new ") })
	if i < 0 {
		t.Fatal("README.md has no quickstart block (one with `rukh ext new`)")
	}
	block := blocks[i]
	type promise struct {
		at  int // in cmds
		out string
	}
	var promises []promise
	var cmds []string // the block's commands, in order
	for _, l := range strings.Split(block, "\n") {
		if m := promised.FindStringSubmatch(l); m != nil {
			promises = append(promises, promise{len(cmds), m[1]})
		}
		if c := commandOf(l); c != "" {
			cmds = append(cmds, c)
		}
	}
	if len(promises) < 2 {
		t.Fatalf("the quickstart promises the output of %d commands; want the author's and the owner's run", len(promises))
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the quickstart's template runs python3:", err)
	}
	for _, shell := range []struct {
		name  string
		args  []string
		stdin bool
	}{
		{"sh -c", []string{"sh", "-e", "-x", "-c", block}, false},
		{"bash, pasted", []string{"bash", "--norc", "--noprofile", "-e", "-x"}, true},
	} {
		t.Run(shell.name, func(t *testing.T) {
			if _, err := exec.LookPath(shell.args[0]); err != nil {
				t.Fatalf("%s: %v", shell.args[0], err)
			}
			work := testhome.TempDir(t)
			cliInto(t, filepath.Join(work, "bin"))
			tmp := filepath.Join(work, "tmp")
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "RUKH_") && !strings.HasPrefix(kv, "TMPDIR=") {
					env = append(env, kv)
				}
			}
			cmd := exec.Command(shell.args[0], shell.args[1:]...)
			cmd.Dir, cmd.Env = work, append(env, "TMPDIR="+tmp, "LC_ALL=C")
			if shell.stdin {
				cmd.Stdin = strings.NewReader(block)
			}
			var out testhome.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			// Once the shell has ended, anything still holding its output
			// was left running by the block.
			cmd.WaitDelay = 30 * time.Second
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := cmd.Process.Pid
			t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Minute):
				syscall.Kill(-pgid, syscall.SIGKILL)
				t.Fatalf("the quickstart did not end within 5 minutes:\n%s", out.String())
			}
			text := out.String()
			switch {
			case errors.Is(err, exec.ErrWaitDelay):
				t.Fatalf("the shell ended, but something the block started still holds its output (ext dev not stopped?):\n%s", text)
			case err != nil:
				t.Fatalf("the quickstart failed (%v):\n%s", err, text)
			}
			if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("a process of the block's group is still running after it (kill -0: %v):\n%s", err, text)
			}
			// Each promise, in order: a line between the shell's trace of
			// the command and its trace of the next command of the block
			// that is not run in the background (whose trace and output
			// may come at any point).
			//
			// A background command is traced by a shell of its own,
			// which may write its trace while the main shell is between
			// a trace's text and its newline ("+ rukh hello Ada
			// --shout+ rukh ext dev hello"): such traces are taken out
			// before the lines are split.
			trace := text
			for _, c := range cmds {
				if bg, ok := strings.CutSuffix(c, "&"); ok {
					trace = strings.ReplaceAll(trace, "+ "+strings.TrimSpace(bg)+"\n", "")
				}
			}
			lines := strings.Split(trace, "\n")
			at := 0
			for _, p := range promises {
				cmd := cmds[p.at]
				j := traceOf(lines, at, cmd)
				if j < 0 {
					t.Fatalf("the trace has no %q after line %d:\n%s", "+ "+cmd, at, text)
				}
				end := len(lines)
				for _, next := range cmds[p.at+1:] {
					if !strings.HasSuffix(next, "&") {
						if k := traceOf(lines, j+1, next); k >= 0 {
							end = k
						}
						break
					}
				}
				if !slices.Contains(lines[j+1:end], p.out) {
					t.Errorf("%s printed %q; the README says it prints %q:\n%s", cmd, lines[j+1:end], p.out, text)
				}
				at = j + 1
			}
			// The owner's home holds the release as signed by acme.
			owners, _ := filepath.Glob(filepath.Join(tmp, "*", "owner"))
			if len(owners) != 1 {
				t.Fatalf("the owner's homes under %s: %v; want one", tmp, owners)
			}
			list := exec.Command(filepath.Join(work, "bin", "rukh"), "ext", "list", "--json")
			list.Env = append(env, "RUKH_HOME="+owners[0])
			js, err := list.Output()
			if err != nil {
				t.Fatalf("ext list in the owner's home: %v", err)
			}
			var rels []releaseJSON
			if err := json.Unmarshal(js, &rels); err != nil || len(rels) != 1 || rels[0].Package != "acme.hello" || rels[0].Pinned || rels[0].SignedBy == "" || !rels[0].Active {
				t.Errorf("the owner's releases: %s (%v); want acme.hello active, signed", js, err)
			}
		})
	}
}

// traceOf is the index of the first line from at on that is the shell's
// trace of the block's command cmd: "+ " and cmd as written up to its
// first expansion (the trace shows what it expanded to).
func traceOf(lines []string, at int, cmd string) int {
	lit := cmd
	if i := strings.IndexAny(cmd, "$\"'`"); i >= 0 {
		lit = cmd[:i]
	}
	for i := at; i < len(lines); i++ {
		l := lines[i]
		// A background command's shell may have written the "+ " of its
		// trace just before this one, and the rest of it on the next
		// line ("+ + rukh hello Ada --shout", then "rukh ext dev hello").
		for strings.HasPrefix(l, "+ + ") {
			l = l[2:]
		}
		if l == "+ "+cmd || lit != cmd && strings.HasPrefix(l, "+ "+lit) {
			return i
		}
	}
	return -1
}

// releaseJSON is a row of `ext list --json`.
type releaseJSON struct {
	Package  string `json:"package"`
	Active   bool   `json:"active"`
	Pinned   bool   `json:"pinned"`
	SignedBy string `json:"signedBy"`
}

// TestTraceOf: the trace of a command is found when a background
// command's shell interleaved its own trace with it, as one did in CI
// ("+ + rukh hello Ada --shout", then "rukh ext dev hello"), and not in
// the command's output.
func TestTraceOf(t *testing.T) {
	const cmd = "rukh hello Ada --shout"
	for _, c := range []struct {
		lines []string
		want  int
	}{
		{[]string{"+ rukh ext dev hello --once", "installed", "+ " + cmd, "HELLO, ADA!"}, 2},
		{[]string{"+ rukh ext dev hello --once", "installed", "+ + " + cmd, "rukh ext dev hello", "HELLO, ADA!"}, 2},
		{[]string{"+ + + " + cmd}, 0},
		{[]string{cmd, "HELLO, ADA!"}, -1},
		{[]string{"+ rukh hello Ada", "HELLO, ADA!"}, -1},
	} {
		if got := traceOf(c.lines, 0, cmd); got != c.want {
			t.Errorf("traceOf(%q) = %d, want %d", c.lines, got, c.want)
		}
	}
}
