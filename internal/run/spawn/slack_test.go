package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostEnv makes the test binary the host of TestHostTimerSlack.
const hostEnv = "RUKH_SPAWN_TEST_HOST"

func TestMain(m *testing.M) {
	if os.Getenv(hostEnv) != "" {
		if err := beHost(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// beHost marks this process a host and prints "threads: S S ..." (the
// timer slack of threads of this process: eight locked goroutines' own,
// and, where /proc lets it read them, every thread's, the Go runtime's
// monitor among them) and "command: S" (what `cat
// /proc/self/timerslack_ns`, started with Start, says of itself).
func beHost() error {
	MarkHost()
	var mu sync.Mutex
	var threads []string
	add := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		threads = append(threads, strconv.FormatInt(d.Nanoseconds(), 10))
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			add(ThreadTimerSlack())
		})
	}
	wg.Wait()
	// Another thread's slack is readable with CAP_SYS_NICE only.
	tasks, _ := filepath.Glob("/proc/self/task/*")
	for _, task := range tasks {
		if b, err := os.ReadFile("/proc/" + filepath.Base(task) + "/timerslack_ns"); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				return err
			}
			add(time.Duration(n))
		}
	}
	slack, err := commandSlack()
	if err != nil {
		return err
	}
	fmt.Printf("threads: %s\ncommand: %s\n", strings.Join(threads, " "), slack)
	return nil
}

// commandSlack starts `cat /proc/self/timerslack_ns` with Start and
// returns what it printed.
func commandSlack() (string, error) {
	var out strings.Builder
	cmd := exec.Command("cat", "/proc/self/timerslack_ns")
	cmd.Stdout = &out
	p, err := Start(cmd, Job{Isolation: Group})
	if err != nil {
		return "", err
	}
	if status := p.Wait(); status != 0 {
		return "", fmt.Errorf("cat exited %d", status)
	}
	return strings.TrimSpace(out.String()), nil
}

// A host started through WithHostTimerSlack runs with HostTimerSlack in
// its threads, and starts its commands with DefaultTimerSlack; the
// thread that started it keeps its own slack. A process that is not
// marked a host (this test) gives its commands its own slack, whatever
// it is.
func TestHostTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := ThreadTimerSlack()

	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostEnv+"=1")
	var out, errOut strings.Builder
	host.Stdout, host.Stderr = &out, &errOut
	if err := WithHostTimerSlack(host.Run); err != nil {
		t.Fatalf("the host: %v: %s", err, errOut.String())
	}
	if got := ThreadTimerSlack(); got != own {
		t.Errorf("the thread that started the host has a slack of %v after, %v before", got, own)
	}
	threads, command, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	fields := strings.Fields(threads)
	if len(fields) < 9 || fields[0] != "threads:" {
		t.Fatalf("the host said %q, want the slack of its threads", out.String())
	}
	for _, s := range fields[1:] {
		if s != strconv.FormatInt(HostTimerSlack.Nanoseconds(), 10) {
			t.Errorf("a thread of the host has a slack of %s ns, want %d (HostTimerSlack); all: %s", s, HostTimerSlack.Nanoseconds(), threads)
		}
	}
	if want := "command: " + strconv.FormatInt(DefaultTimerSlack.Nanoseconds(), 10); command != want {
		t.Errorf("the host's command says %q, want %q (DefaultTimerSlack)", command, want)
	}

	got, err := commandSlack()
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(own.Nanoseconds(), 10); got != want {
		t.Errorf("a command of a process that is no host has a slack of %s ns, want its own, %s", got, want)
	}
}
