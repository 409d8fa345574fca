package spawn

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// hostEnv makes the test binary the host of TestHostTimerSlack: it
// prints the timer slack of each of its threads and of a command it
// starts, and exits.
const hostEnv = "RUKH_SPAWN_TEST_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(hostEnv) != "" {
		os.Exit(beHost())
	}
	os.Exit(m.Run())
}

// beHost prints "threads: S S ..." (the slack of every thread of this
// process) and "command: S" (what `cat /proc/self/timerslack_ns`,
// started with Start, says of itself).
func beHost() int {
	tasks, _ := filepath.Glob("/proc/self/task/*")
	var threads []string
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + filepath.Base(task) + "/timerslack_ns")
		if err != nil {
			return 1
		}
		threads = append(threads, strings.TrimSpace(string(b)))
	}
	var out strings.Builder
	cmd := exec.Command("cat", "/proc/self/timerslack_ns")
	cmd.Stdout = &out
	p, err := Start(cmd, Job{Isolation: Group})
	if err != nil || p.Wait() != 0 {
		return 1
	}
	os.Stdout.WriteString("threads: " + strings.Join(threads, " ") + "\ncommand: " + out.String())
	return 0
}

// A host started through WithHostTimerSlack runs with HostTimerSlack in
// every thread, the Go runtime's monitor among them, and starts its
// commands with Linux's default back; the thread that started it keeps
// its own slack. A process that was not started so is no host: its
// commands get its own slack, whatever it is.
func TestHostTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := threadSlack(t)

	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostEnv+"=1")
	var out strings.Builder
	host.Stdout, host.Stderr = &out, &out
	if err := WithHostTimerSlack(host.Run); err != nil {
		t.Fatalf("the host: %v: %s", err, out.String())
	}
	if got := threadSlack(t); got != own {
		t.Errorf("the thread that started the host has a slack of %d ns after, %d before", got, own)
	}
	threads, command, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(threads, "threads: ") || len(strings.Fields(threads)) < 3 {
		t.Fatalf("the host said %q, want a line of its threads' slack (more than one thread)", out.String())
	}
	for _, s := range strings.Fields(threads)[1:] {
		if s != "1000000" {
			t.Errorf("a thread of the host has a slack of %s ns, want %d (HostTimerSlack); all: %s", s, HostTimerSlack.Nanoseconds(), threads)
		}
	}
	if want := "command: 50000\n"; command != want {
		t.Errorf("the host's command says %q, want %q (Linux's default)", command, want)
	}

	// This test process is no host: a command it starts has its slack.
	var cat strings.Builder
	cmd := exec.Command("cat", "/proc/self/timerslack_ns")
	cmd.Stdout = &cat
	p, err := Start(cmd, Job{Isolation: Group})
	if err != nil || p.Wait() != 0 {
		t.Fatalf("cat: %v", err)
	}
	if got := strings.TrimSpace(cat.String()); got != strings.TrimSpace(string(mustRead(t, "/proc/self/timerslack_ns"))) {
		t.Errorf("a command of a process that is no host has a slack of %s ns, not its host's", got)
	}
}

func threadSlack(t *testing.T) int {
	t.Helper()
	s, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
