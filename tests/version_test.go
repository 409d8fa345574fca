package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// `rukh version` is the thin client's own answer: the same bytes as the
// core's `version`, printed without dialing the daemon or starting the
// core, so it answers even when what listens on the socket never does.
func TestVersionIsTheClients(t *testing.T) {
	rukh, rukhd := hostBinaries(t)
	home := t.TempDir()
	run := filepath.Join(home, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	// A listener that accepts and never answers, where rukhd would be.
	ln, err := net.Listen("unix", filepath.Join(run, "rukhd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			t.Cleanup(func() { c.Close() })
		}
	}()

	env := append(os.Environ(), "RUKH_HOME="+home)
	client := exec.Command(rukh, "version")
	client.Env = env
	got, err := client.Output()
	if err != nil {
		t.Fatalf("rukh version: %v", err)
	}
	core := exec.Command(rukhd, "--cli", "version")
	core.Env = env
	want, err := core.Output()
	if err != nil {
		t.Fatalf("rukhd --cli version: %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("rukh version printed\n%s\nthe core prints\n%s", got, want)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("rukh version connected to the socket %d times", n)
	}
}
