package spawn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
)

// waitingHelper builds the supervising helper for this test.
func waitingHelper(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rukh-sandbox")
	if err := sandbox.Build(path); err != nil {
		t.Fatalf("build the helper: %v", err)
	}
	return path
}

func mustSid(t *testing.T) int {
	sid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	return sid
}

// procStat is fields 5 and 6 (process group, session) of a process's
// /proc stat line, as a command reads them of itself.
const procStat = `set -- $(sed 's/.*) //' /proc/self/stat); echo "pgrp=$3 session=$4"`

// TestWaitingRunsTheCommand: a helper started before its command runs it
// as Start would have — argv, environment (the last value of a name),
// directory, the descriptors in their places, the process group or
// session the job asks for — and reports its exit status.
func TestWaitingRunsTheCommand(t *testing.T) {
	helper := waitingHelper(t)
	for _, c := range []struct {
		name string
		job  Job
		want func(t *testing.T, pid int) string
	}{
		{"group", Job{Isolation: Group, Supervised: true}, func(t *testing.T, pid int) string {
			return "pgrp=" + strconv.Itoa(pid) + " session=" + strconv.Itoa(mustSid(t))
		}},
		{"session", Job{Isolation: Session, Supervised: true}, func(_ *testing.T, pid int) string {
			return "pgrp=" + strconv.Itoa(pid) + " session=" + strconv.Itoa(pid)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := StartWaiting(helper)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Discard)
			dir := t.TempDir()
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			extra, err := os.Open(filepath.Join("..", "..", "..", "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			defer extra.Close()
			ex := &exec.Cmd{Path: helper, Args: []string{helper, "host", "--", "/bin/sh", "sh", "-c",
				`echo "$X $(pwd)"; head -c 6 <&3; echo; ` + procStat + `; echo oops >&2; exit 3`},
				Env: []string{"X=first", "X=last"}, Dir: dir, Stdout: out, Stderr: out, ExtraFiles: []*os.File{extra}}
			p, err := w.Start(ex, c.job)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			if got := p.Wait(); got != 3 {
				t.Errorf("exit status %d, want 3", got)
			}
			b, _ := os.ReadFile(out.Name())
			want := "last " + dir + "\nmodule\n" + c.want(t, p.Pid) + "\noops\n"
			if string(b) != want {
				t.Errorf("the command wrote\n%q\nwant\n%q", b, want)
			}
		})
	}
}

// TestWaitingRefusesOtherCommands: a command the helper cannot take runs
// nothing (ErrNotWaiting), and Discard ends the helper: it is reaped.
func TestWaitingRefusesOtherCommands(t *testing.T) {
	helper := waitingHelper(t)
	for _, c := range []struct {
		name string
		ex   *exec.Cmd
		job  Job
	}{
		{"another program", &exec.Cmd{Path: "/bin/true", Args: []string{"/bin/true"}}, Job{Supervised: true}},
		{"not supervised", &exec.Cmd{Path: helper, Args: []string{helper, "host", "--", "/bin/true", "true"}}, Job{}},
		{"a stream that is not a file", &exec.Cmd{Path: helper, Args: []string{helper, "host", "--", "/bin/true", "true"}, Stdout: &bytes.Buffer{}}, Job{Supervised: true}},
		{"too many strings", &exec.Cmd{Path: helper, Args: append([]string{helper, "host", "--", "/bin/true", "true"}, make([]string, specMaxStrings)...)}, Job{Supervised: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := StartWaiting(helper)
			if err != nil {
				t.Fatal(err)
			}
			pid := w.pid
			if _, err := w.Start(c.ex, c.job); !errors.Is(err, ErrNotWaiting) {
				t.Fatalf("Start: %v, want ErrNotWaiting", err)
			}
			w.Discard()
			w.Discard() // again: nothing
			if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
				t.Errorf("the helper (pid %d) is still there after Discard: kill 0 says %v", pid, err)
			}
		})
	}
}

// TestWaitingQuitsOnABadSpec: a helper sent what is not a whole spec
// runs nothing and exits 125 without a word, and Start says so
// (ErrNotWaiting) when it cannot tell before; a helper whose host closes
// the socket exits the same way.
func TestWaitingQuitsOnABadSpec(t *testing.T) {
	helper := waitingHelper(t)
	header := func(magic, length, nfds, flags, argc, envc uint32) []byte {
		b := make([]byte, specHeader)
		for i, v := range []uint32{magic, length, nfds, flags, argc, envc} {
			binary.LittleEndian.PutUint32(b[4*i:], v)
		}
		return b
	}
	dir := t.TempDir() // where a command that ran would leave "ran"
	payload := []byte(dir + "\x00" + helper + "\x00host\x00--\x00/bin/sh\x00sh\x00-c\x00touch ran\x00")
	for _, c := range []struct {
		name string
		msg  []byte
		fds  int
	}{
		{"closed at once", nil, 0},
		{"wrong magic", append(header(1, uint32(len(payload)), 3, 0, 7, 0), payload...), 3},
		{"fewer descriptors than it says", append(header(specMagic, uint32(len(payload)), 4, 0, 7, 0), payload...), 3},
		{"both a session and a group", append(header(specMagic, uint32(len(payload)), 3, specSession|specGroup, 7, 0), payload...), 3},
		{"an unknown flag", append(header(specMagic, uint32(len(payload)), 3, 8, 7, 0), payload...), 3},
		{"more strings than the payload", append(header(specMagic, uint32(len(payload)), 3, 0, 8, 0), payload...), 3},
		{"a string without its NUL", append(header(specMagic, uint32(len(payload)-1), 3, 0, 7, 0), payload[:len(payload)-1]...), 3},
		{"a payload cut short", append(header(specMagic, uint32(len(payload)+10), 3, 0, 7, 0), payload...), 3},
		{"too long", header(specMagic, specMax+1, 3, 0, 7, 0), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := StartWaiting(helper)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Discard)
			if c.msg != nil {
				null, err := os.Open(os.DevNull)
				if err != nil {
					t.Fatal(err)
				}
				defer null.Close()
				fds := make([]int, c.fds)
				for i := range fds {
					fds[i] = int(null.Fd())
				}
				if err := w.send(c.msg, fds); err != nil {
					t.Fatalf("send: %v", err)
				}
			}
			w.ctl.Close() // whatever it read, nothing more comes
			w.ctl = nil
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(w.pid, &ws, 0, nil); err != nil {
				t.Fatal(err)
			}
			w.pid = 0
			if !ws.Exited() || ws.ExitStatus() != 125 {
				t.Errorf("the helper ended %v, want exit status 125", ws)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the command ran")
			}
		})
	}
}

// TestWaitingGate: a helper handed its command with a gate starts the
// command only once the gate opens, and one whose gate closes unopened
// runs nothing and exits 125, as one started with Start does.
func TestWaitingGate(t *testing.T) {
	helper := waitingHelper(t)
	for _, c := range []struct {
		name   string
		open   bool
		status int
		out    string
	}{
		{"opened", true, 0, "ran\n"},
		{"closed unopened", false, 125, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := StartWaiting(helper)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Discard)
			gr, gw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			ex := &exec.Cmd{Path: helper, Args: []string{helper, "host", "--gate", "3", "--", "/bin/sh", "sh", "-c", "echo ran"},
				Stdout: out, ExtraFiles: []*os.File{gr}}
			p, err := w.Start(ex, Job{Isolation: Group, Supervised: true})
			gr.Close()
			if err != nil {
				gw.Close()
				t.Fatalf("Start: %v", err)
			}
			if c.open {
				gw.Write([]byte("g"))
			}
			gw.Close()
			if status := p.Wait(); status != c.status {
				t.Errorf("exit status %d, want %d", status, c.status)
			}
			if b, _ := os.ReadFile(out.Name()); string(b) != c.out {
				t.Errorf("the command wrote %q, want %q", b, c.out)
			}
		})
	}
}
