package tests

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// readiness is a NOTIFY_SOCKET for the daemons a test starts: rukhd
// sends READY=1 there once it listens (sd_notify, as systemd expects), so
// the test waits for that event instead of polling the socket.
type readiness struct {
	c    *net.UnixConn
	path string
}

func newReadiness(t *testing.T) *readiness {
	t.Helper()
	path := filepath.Join(testhome.TempDir(t), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &readiness{c: c, path: path}
}

// env is the variable that points a daemon at r.
func (r *readiness) env() string { return "NOTIFY_SOCKET=" + r.path }

// wait waits until a daemon notifies READY=1, failing if exited closes
// first or nothing comes within dtHangGuard; what names the daemon.
func (r *readiness) wait(t *testing.T, what string, exited <-chan struct{}) {
	t.Helper()
	ready := make(chan error, 1)
	go func() {
		r.c.SetReadDeadline(time.Now().Add(dtHangGuard))
		buf := make([]byte, 4096)
		for {
			n, err := r.c.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			if strings.Contains("\n"+string(buf[:n])+"\n", "\nREADY=1\n") {
				ready <- nil
				return
			}
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%s never notified READY=1: %v", what, err)
		}
	case <-exited:
		r.c.SetReadDeadline(time.Now()) // ends the reader
		<-ready
		t.Fatalf("%s exited before it notified READY=1", what)
	}
}

// waitFile waits until the file at path exists (made, or renamed into
// place), on fsnotify's events for its directory.
func waitFile(t *testing.T, path, what string) {
	t.Helper()
	waitFileFor(t, path, what, func() bool {
		_, err := os.Lstat(path)
		return err == nil
	})
}

// waitFileFor waits until ok holds, checking it at each fsnotify event in
// path's directory (a file made, written, renamed) and once the watch has
// begun, so no change is missed.
func waitFileFor(t *testing.T, path, what string, ok func() bool) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(dtHangGuard)
	for {
		if ok() {
			return
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			t.Fatalf("watching for %s: %v", what, err)
		case <-timeout:
			t.Fatalf("%s did not appear within %s (%s)", what, dtHangGuard, path)
		}
	}
}
