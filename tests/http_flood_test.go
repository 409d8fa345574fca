package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// vmRSS is a process's resident set size in bytes (/proc/PID/status).
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestHTTPStrangerHoldsNothing is issue 25's attack on the HTTP adapter:
// 500 connections at once, each a POST with no token that declares a body
// of 1 MiB and sends all of it but one byte. The adapter answers them from their headers (401), or
// past its connection cap at once (503), without reading their bodies:
// its resident memory stays within a bound (before, the bodies were read
// in full before the token was checked: +580 MiB), and a caller with a
// valid token is served meanwhile (once the strangers' connections are
// answered, if the cap is full).
func TestHTTPStrangerHoldsNothing(t *testing.T) {
	rukh, _ := hostBinaries(t)
	f := newHTTPFixture(t)
	f.apply(t)
	base, proc := startHTTPProc(t, rukh, f.env)
	addr := strings.TrimPrefix(base, "http://")
	idle := vmRSS(t, proc.Process.Pid)

	const conns, body = 500, 1 << 20
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, body)
	chunk := []byte(strings.Repeat(" ", 64<<10))
	var wg, wrote sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	opened := make(chan net.Conn, conns)
	for range conns {
		wg.Add(1)
		wrote.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				wrote.Done()
				mu.Lock()
				statuses["dial: "+err.Error()]++
				mu.Unlock()
				return
			}
			opened <- c
			c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang guard
			io.WriteString(c, head)
			for sent := 0; sent < body-1; sent += len(chunk) {
				if _, err := c.Write(chunk[:min(len(chunk), body-1-sent)]); err != nil {
					break // the adapter answered and closed
				}
			}
			wrote.Done()
			answer := make([]byte, 12)
			n, _ := io.ReadFull(c, answer)
			mu.Lock()
			statuses[string(answer[:n])]++
			mu.Unlock()
		}()
	}
	// While they are in flight: a valid caller is served, and the
	// adapter's memory is sampled.
	allWrote := make(chan struct{})
	go func() { wrote.Wait(); close(allWrote) }()
	select {
	case <-allWrote:
	case <-time.After(60 * time.Second):
		t.Fatal("the 500 connections could not send their bodies within 60 s")
	}
	peak := max(idle, vmRSS(t, proc.Process.Pid))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tok := f.issuer.token(t, "alice", nil)
	served := false
	// Over the cap it is refused (503, at once, never held): it retries,
	// as a client told Retry-After does, until the strangers' connections
	// are answered and closed.
	for end := time.Now().Add(30 * time.Second); !served && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		tr := &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tok}}, MaxRetries: -1}
		if cs, err := sdk.NewClient(&sdk.Implementation{Name: "valid", Version: "1"}, nil).Connect(ctx, tr, nil); err == nil {
			if res, err := cs.ListTools(ctx, nil); err == nil && len(res.Tools) == 1 {
				served = true
			}
			cs.Close()
		}
		cancel()
		if rss := vmRSS(t, proc.Process.Pid); rss > peak {
			peak = rss
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the 500 connections were not all answered within 60 s")
	}
	if rss := vmRSS(t, proc.Process.Pid); rss > peak {
		peak = rss
	}
	close(opened)
	for c := range opened {
		c.Close()
	}
	if !served {
		t.Error("a caller with a valid token was not served while strangers flooded the adapter")
	}
	for answer, n := range statuses {
		if !strings.HasPrefix(answer, "HTTP/1.1 401") && !strings.HasPrefix(answer, "HTTP/1.1 503") {
			t.Errorf("%d connections were answered %q; want 401 or 503", n, answer)
		}
	}
	const bound = 64 << 20
	t.Logf("resident memory: %d MiB idle, %d MiB at the most (%v)", idle>>20, peak>>20, statuses)
	if peak-idle > bound {
		t.Errorf("the adapter grew from %d to %d MiB under 500 strangers' bodies; want at most %d MiB more", idle>>20, peak>>20, bound>>20)
	}
}
