package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/testhome"
	"github.com/rukh-cli/rukh/internal/testpty"
)

// ttyRelease is a passthrough command (rukh.extension/1) whose program
// is tests/testdata/tty.
const ttyRelease = `{"schema":"rukh.extension/1","package":"t.tty","version":"1.0.0","publisher":"t",
 "commands":[{"id":"tty","path":["tty"],"summary":"Report the terminal","execute":{"mapping":"passthrough","program":"bin/tty"}}]}`

// screen is what a pseudo-terminal's master side has shown, read as it
// comes.
type screen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // closed and replaced at each read
	done bool
	// ended, when set, says how the terminal's shell ended, for a
	// failure once the terminal closed: a shell that exited 0 after its
	// last line tells a lost line apart from a shell that was killed.
	ended func() string
}

func newScreen(master *os.File) *screen {
	s := &screen{more: make(chan struct{})}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			close(s.more)
			s.more = make(chan struct{})
			s.done = err != nil
			s.mu.Unlock()
			if err != nil {
				return // EIO once the terminal's last user is gone
			}
		}
	}()
	return s
}

// atTerminal is a process started in a session of its own whose
// controlling terminal is a pseudo-terminal (startAtTerminal).
type atTerminal struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited; err is then set
	err    error
}

// startAtTerminal starts cmd as the leader of a new session whose
// controlling terminal, stdin, stdout and stderr are slave, which it then
// closes (the master is the test's). The session's process group is
// killed at cleanup, and the cleanup waits for cmd, at most 30 s.
func startAtTerminal(t *testing.T, cmd *exec.Cmd, slave *os.File) *atTerminal {
	t.Helper()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	r := &atTerminal{cmd: cmd, exited: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-r.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not exit within 30 s of SIGKILL", cmd.Path)
		}
	})
	return r
}

// expect waits until the screen, from offset *at on, shows want, and
// moves *at past it.
func (s *screen) expect(t *testing.T, at *int, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		text, more, done := s.buf.String(), s.more, s.done
		s.mu.Unlock()
		if i := strings.Index(text[*at:], want); i >= 0 {
			*at += i + len(want)
			return
		}
		if done {
			how := ""
			if s.ended != nil {
				how = "\n" + s.ended()
			}
			t.Fatalf("the terminal closed without showing %q after:\n%s%s", want, text[*at:], how)
		}
		select {
		case <-more:
		case <-timeout:
			t.Fatalf("the terminal did not show %q within 30 s; it shows:\n%s", want, text[*at:])
		}
	}
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestTerminal runs a command at a real terminal, under a real job-control
// shell (bash -m in a pseudo-terminal, which is its controlling terminal),
// and requires what the shell would give it had it started the program
// itself: stdin is the terminal, /dev/tty opens, the command's process
// group is the terminal's foreground group, the size is the terminal's,
// a line typed at a prompt is read from stdin and another from /dev/tty,
// a resize sends SIGWINCH with the new size, Ctrl-Z stops rukh and the
// command together (the shell reports the job stopped, status 148) and
// `fg` resumes both (the command saw SIGCONT), Ctrl-C interrupts it
// (exit 130, recorded cancelled/interrupted), and nothing it started is
// left running.
//
// Both hosts give the same: in-process, and through rukhd, which has the
// client start the command it admitted, so that the command is the
// client's child (its parent is never the daemon).
func TestTerminal(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash is needed for a job-control shell: %v", err)
	}
	forEachHost(t, func(t *testing.T, h *testHost) { testTerminal(t, h) })
}

func testTerminal(t *testing.T, h *testHost) {
	rukh := h.Rukh
	dir := testhome.TempDir(t)
	rel := filepath.Join(dir, "rel")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(rel, "bin", "tty"), "./testdata/tty").CombinedOutput(); err != nil {
		t.Fatalf("go build tty: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(rel, "rukh-extension.json"), []byte(ttyRelease), 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	srv := h.serve(t, home)
	env := append(os.Environ(), "RUKH_HOME="+home, "RUKH="+rukh, "TERM=dumb", "PS1=", "PS2=")

	// shell runs script under bash -m with the pseudo-terminal as its
	// controlling terminal, 24x80.
	shell := func(t *testing.T, script string) (*screen, *os.File, func() error) {
		master, slave := testpty.Open(t)
		t.Cleanup(func() { master.Close() })
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "--norc", "--noprofile", "-m", "-c", script)
		cmd.Env = env
		sh := startAtTerminal(t, cmd, slave)
		wait := func() error {
			select {
			case <-sh.exited:
				return sh.err
			case <-time.After(30 * time.Second):
				t.Fatalf("the shell did not exit within 30 s of its script's end")
				return nil
			}
		}
		return newScreen(master), master, wait
	}
	// probePid is the pid the probe printed first; its parent is never
	// the daemon.
	probePid := func(t *testing.T, s *screen) int {
		text := s.String()
		i := strings.Index(text, "pid=")
		if i < 0 {
			t.Fatalf("no pid= line in %q", text)
		}
		var pid, ppid int
		if _, err := fmt.Sscanf(text[i:], "pid=%d ppid=%d", &pid, &ppid); err != nil {
			t.Fatalf("%q: %v", text[i:], err)
		}
		if srv.PID != 0 && ppid == srv.PID {
			t.Errorf("the command ran as the daemon's child (pid %d), not the client's", ppid)
		}
		return pid
	}
	requireGone := func(t *testing.T, pid int) {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("the command (pid %d) still runs after its call ended", pid)
		}
	}

	t.Run("prompts, size, resize, stop and fg", func(t *testing.T) {
		s, master, wait := shell(t, `"$RUKH" tty all; echo "status=$?"; fg >/dev/null; echo "status=$?"`)
		at := 0
		s.expect(t, &at, "isatty=true,true,true fg=true devtty=true size=24x80")
		s.expect(t, &at, "line? ")
		master.WriteString("Ada\n")
		s.expect(t, &at, "line=Ada")
		s.expect(t, &at, "tty? ")
		master.WriteString("Bob\n")
		s.expect(t, &at, "tty=Bob")
		s.expect(t, &at, "resize?")
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100}); err != nil {
			t.Fatal(err)
		}
		s.expect(t, &at, "winch=30x100")
		s.expect(t, &at, "stop?")
		master.Write([]byte{0x1a}) // Ctrl-Z
		// The shell saw its job — rukh's process group — stop.
		s.expect(t, &at, "Stopped")
		s.expect(t, &at, "status=148")
		master.WriteString("go\n") // read once fg has resumed it
		s.expect(t, &at, "resumed=go continued=true")
		s.expect(t, &at, "status=0")
		if err := wait(); err != nil {
			t.Fatalf("the shell: %v\n%s", err, s)
		}
		requireGone(t, probePid(t, s))
	})

	// What the command leaves behind, even in a session of its own with
	// an empty environment, dies with the call: at the terminal and with
	// no terminal at all.
	leftPid := func(t *testing.T, text string) int {
		i := strings.Index(text, "left=")
		if i < 0 {
			t.Fatalf("no left= line in %q", text)
		}
		pid, err := strconv.Atoi(strings.Fields(text[i+5:])[0])
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	t.Run("nothing left behind at the terminal", func(t *testing.T) {
		s, _, wait := shell(t, `"$RUKH" tty leave; echo "status=$?"`)
		at := 0
		s.expect(t, &at, "status=0")
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		requireGone(t, leftPid(t, s.String()))
	})
	t.Run("nothing left behind without a terminal", func(t *testing.T) {
		cmd := exec.Command(rukh, "tty", "leave")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		requireGone(t, leftPid(t, string(out)))
	})

	t.Run("ctrl-c", func(t *testing.T) {
		s, master, wait := shell(t, `"$RUKH" tty hang; echo "status=$?"`)
		at := 0
		s.expect(t, &at, "hang?")
		master.Write([]byte{0x03}) // Ctrl-C
		s.expect(t, &at, "status=130")
		if err := wait(); err != nil {
			t.Fatalf("the shell: %v\n%s", err, s)
		}
		requireGone(t, probePid(t, s))
		list := exec.Command(rukh, "invocations", "list", "--json")
		list.Env = env
		out, err := list.Output()
		if err != nil {
			t.Fatal(err)
		}
		var invs []struct {
			Outcome string `json:"outcome"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal(out, &invs); err != nil || len(invs) == 0 {
			t.Fatalf("invocations list: %v: %s", err, out)
		}
		if got := fmt.Sprintf("%s/%s", invs[0].Outcome, invs[0].Reason); got != "cancelled/interrupted" {
			t.Errorf("the interrupted call is recorded %s, want cancelled/interrupted", got)
		}
	})
}
