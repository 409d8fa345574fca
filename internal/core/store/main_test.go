package store_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// The test binary doubles as a helper process: with STORE_HELPER set it
// runs one of helpers against the store at STORE_PATH instead of the
// tests (cli/cli's manager_test style).
const (
	envHelper = "STORE_HELPER"
	envPath   = "STORE_PATH"
	envCount  = "STORE_COUNT"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envHelper); name != "" {
		fn, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
			os.Exit(2)
		}
		if err := fn(os.Getenv(envPath)); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var helpers = map[string]func(path string) error{
	// journal-and-hang journals three begin records and one outcome, says
	// "ready" and waits to be killed: a daemon killed with records not
	// yet folded.
	"journal-and-hang": func(path string) error {
		s, err := store.Open(path, store.Options{Timeout: 5 * time.Second, Journal: true})
		if err != nil {
			return err
		}
		for n := 1; n <= 3; n++ {
			if err := s.JournalBegin(journalInv(n, "agent"), 8, alive); err != nil {
				return err
			}
		}
		if _, err := s.JournalFinish(journalInv(1, "").ID, &store.Finish{Outcome: "succeeded"}, t0); err != nil {
			return err
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return errors.New("not killed")
	},
	// journal-calls records calls as rukhd does, journaled, until the
	// failpoint STORE_FAILPOINT kills it, saying "begin ID" and
	// "finish ID" as each record is acknowledged.
	"journal-calls": journalCalls,
	// hold opens the store, says "ready" and keeps the lock until stdin
	// closes.
	"hold": func(path string) error {
		s, err := store.Open(path, store.Options{Timeout: 5 * time.Second})
		if err != nil {
			return err
		}
		defer s.Close()
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return nil
	},
	// hang-in-update writes a release and publishes a revision inside a
	// transaction, says "ready" and waits (to be killed) before commit.
	"hang-in-update": func(path string) error {
		s, err := store.Open(path, store.Options{Timeout: 5 * time.Second})
		if err != nil {
			return err
		}
		return s.Update(func(tx *store.Tx) error {
			rel := release("acme.partial", "9.9.9")
			if err := tx.PutRelease(rel); err != nil {
				return err
			}
			parent, err := tx.ActiveNumber()
			if err != nil {
				return err
			}
			if _, err := tx.PublishRevision(candidate(parent, "install acme.partial 9.9.9", []*store.Release{rel}, "partial run")); err != nil {
				return err
			}
			fmt.Println("ready")
			_, _ = io.Copy(io.Discard, os.Stdin)
			return errors.New("not killed")
		})
	},
	// publish-loop publishes revisions until it is killed, saying "ready"
	// after the first commit.
	"publish-loop": func(path string) error {
		s, err := store.Open(path, store.Options{Timeout: 5 * time.Second})
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			err := s.Update(func(tx *store.Tx) error {
				rel := release("acme.loop", "1.0."+strconv.Itoa(i))
				if err := tx.PutRelease(rel); err != nil {
					return err
				}
				parent, err := tx.ActiveNumber()
				if err != nil {
					return err
				}
				_, err = tx.PublishRevision(candidate(parent, "loop", []*store.Release{rel}, "loop a", "loop b", "loop c"))
				return err
			})
			if err != nil {
				return err
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	},
	// publisher publishes STORE_COUNT revisions the way an in-process
	// host does: open, read, close; build the candidate; open, publish,
	// close; retrying on a held lock and on a conflict.
	"publisher": func(path string) error {
		count, _ := strconv.Atoi(os.Getenv(envCount))
		for done := 0; done < count; {
			err := publishOnce(path, os.Getpid(), done)
			var le *store.LockedError
			var ce *store.ConflictError
			switch {
			case err == nil:
				done++
			case errors.As(err, &le), errors.As(err, &ce):
				time.Sleep(time.Millisecond)
			default:
				return err
			}
		}
		return nil
	},
}

// publishOnce is one open-read-close, open-publish-close round.
func publishOnce(path string, pid, i int) error {
	opts := store.Options{Timeout: 50 * time.Millisecond}
	s, err := store.Open(path, opts)
	if err != nil {
		return err
	}
	var parent uint64
	err = s.View(func(tx *store.Tx) error {
		parent, err = tx.ActiveNumber()
		return err
	})
	s.Close()
	if err != nil {
		return err
	}
	rel := release(fmt.Sprintf("acme.p%d", pid), fmt.Sprintf("1.0.%d", i))
	cand := candidate(parent, fmt.Sprintf("publish %d/%d", pid, i), []*store.Release{rel}, "p run")
	s, err = store.Open(path, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Update(func(tx *store.Tx) error {
		if err := tx.PutRelease(rel); err != nil {
			return err
		}
		_, err := tx.PublishRevision(cand)
		return err
	})
}

// helperCmd starts the named helper on the store at path; stdin stays
// open until the caller closes it. It waits for "ready" when ready is
// set.
type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHelper(t *testing.T, name, path string, ready bool, env ...string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+name, envPath+"="+path)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &helperProc{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	if ready {
		line := make(chan string, 1)
		go func() {
			s, _ := bufio.NewReader(stdout).ReadString('\n')
			line <- s
		}()
		select {
		case s := <-line:
			if s != "ready\n" {
				t.Fatalf("helper %s said %q, want ready", name, s)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("helper %s not ready after 30s", name)
		}
	}
	return p
}

// kill ends the helper with SIGKILL and waits for it.
func (p *helperProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}
