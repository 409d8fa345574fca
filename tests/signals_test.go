package tests

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// TestSignalBeforeTheCommandStarts: the client of an extension command
// line forwarded to the daemon catches its stop signals once the command
// is started (thin.Forward): a Ctrl-C before that ends it as it ends any
// program, killed by SIGINT, and it sends the daemon nothing more, so
// the daemon sees its client gone and cancels a call of which nothing
// ran. The daemon here is a stand-in that answers the hello and then
// holds the command line, so the signal lands in that window every time.
func TestSignalBeforeTheCommandStarts(t *testing.T) {
	rukh, _ := hostBinaries(t)
	home := filepath.Join(testhome.TempDir(t), "home")
	p, err := homePaths(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.Runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.Socket("rukh"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })

	// A SIGINT this test was started with ignored (`trap '' INT`) would
	// be ignored by the client too: catching it here for the test's span
	// gives the client, which execs, the default disposition.
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, syscall.SIGINT)
	defer signal.Stop(intr)
	cmd := exec.Command(rukh, "hello", "Ada")
	cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	ln.SetDeadline(time.Now().Add(30 * time.Second))
	uc, err := ln.AcceptUnix()
	if err != nil {
		t.Fatalf("waiting for the client to connect: %v", err)
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(30 * time.Second))
	c := wire.NewConn(uc)
	m, _, err := c.Receive()
	if err != nil || m.Hello == nil {
		t.Fatalf("the client's first frame: %+v, %v; want hello", m, err)
	}
	if err := c.Send(&wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: m.Hello.Build, Name: "rukh", PID: os.Getpid()}}); err != nil {
		t.Fatal(err)
	}
	m, files, err := c.Receive()
	if err != nil || m.Exec == nil || len(m.Exec.Args) != 2 || m.Exec.Args[0] != "hello" {
		t.Fatalf("the client's request: %+v, %v; want the Exec of `hello Ada`", m, err)
	}
	for _, f := range files {
		f.Close()
	}

	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
		err = waitErr
	case <-time.After(30 * time.Second):
		t.Fatal("the client still ran 30 s after SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Errorf("the client after SIGINT: %s; want killed by SIGINT", waitStatus(err))
	}
	// Closed, read to its end or with the hello still unread (a reset).
	if m, _, err := c.Receive(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("after the client's end the daemon read %+v, %v; want the connection closed, with no cancel", m, err)
	}
}
