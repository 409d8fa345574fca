package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// routeStore publishes one revision with n routes of two or three words
// spread over n/10+1 groups.
func routeStore(b *testing.B, n int) *store.Store {
	s := storetest.Open(b)
	rel := release("acme.big", "1.0.0")
	routes := make([]string, n)
	for i := range routes {
		routes[i] = benchRoute(i)
	}
	publish(b, s, "install", []*store.Release{rel}, routes...)
	return s
}

// benchRoute is route i: every third one has three words.
func benchRoute(i int) string {
	r := fmt.Sprintf("group%04d cmd%04d", i/10, i)
	if i%3 == 0 {
		r += " sub"
	}
	return r
}

// BenchmarkResolveRoute shows that resolving a route costs the same with
// 10 and 2,000 routes: it reads a few keys of the active route index and
// decodes one route, never the revision.
func BenchmarkResolveRoute(b *testing.B) {
	for _, n := range []int{10, 2000} {
		// The last three-word route, followed by flags and arguments.
		last := (n - 1) / 3 * 3
		args := append(strings.Fields(benchRoute(last)), "--env", "stage", "target")
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			s := routeStore(b, n)
			_ = s.View(func(tx *store.Tx) error {
				for b.Loop() {
					rt, _, err := tx.ResolveRoute(args)
					if err != nil || rt == nil {
						b.Fatal(rt, err)
					}
				}
				return nil
			})
		})
		b.Run(fmt.Sprintf("routes=%d/view", n), func(b *testing.B) {
			s := routeStore(b, n)
			for b.Loop() {
				err := s.View(func(tx *store.Tx) error {
					rt, _, err := tx.ResolveRoute(args)
					if rt == nil {
						b.Fatal("no route")
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkActiveRevision is the cost ResolveRoute avoids: decoding the
// whole revision with its route index.
func BenchmarkActiveRevision(b *testing.B) {
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			s := routeStore(b, n)
			_ = s.View(func(tx *store.Tx) error {
				for b.Loop() {
					if _, err := tx.ActiveRevision(); err != nil {
						b.Fatal(err)
					}
				}
				return nil
			})
		})
	}
}

// BenchmarkConcurrentWrites: 16 writers at once (on 2 cores, 8 per
// core), each appending one audit entry per transaction, with Update (one
// commit each, queued on bbolt's writer lock) and with Batch (those that
// queue share the next commit). Both wait for a durable commit.
func BenchmarkConcurrentWrites(b *testing.B) {
	for _, mode := range []string{"update", "batch"} {
		b.Run(mode, func(b *testing.B) {
			s := storetest.Open(b)
			write := s.Update
			if mode == "batch" {
				write = s.Batch
			}
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := write(func(tx *store.Tx) error {
						_, err := tx.AppendAudit(&store.AuditEntry{Time: time.Now(), Op: "bench"})
						return err
					}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkInvocationRecords is the two durable records every call makes
// (BeginInvocation, then Finish, each its own committed transaction) on a
// store at the invocation retention limit, as a daemon's is once it has
// served a thousand calls.
func BenchmarkInvocationRecords(b *testing.B) {
	path := bigStore(b)
	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	for i := 0; b.Loop(); i++ {
		inv := &store.Invocation{ID: fmt.Sprintf("%032x", 1<<20+i), Identity: "acme.deploy/status", Digest: "sha256:00",
			Revision: 1, Transport: "mcp", Task: "owner", PID: 1, StartedAt: t0}
		if err := s.Update(func(tx *store.Tx) error { return tx.BeginInvocation(inv, 8, alive, t0) }); err != nil {
			b.Fatal(err)
		}
		if err := s.Update(func(tx *store.Tx) error {
			_, err := tx.FinishInvocation(inv.ID, "succeeded", "", 0, "", t0)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadJournal is what an open pays to read a journal that a
// host left entries in (rukhd killed, say): the whole file, for the
// entries past any gap. It used to grow its buffer from 512 bytes to a
// megabyte (2 ms a read here); now it reads into one buffer.
func BenchmarkReadJournal(b *testing.B) {
	for _, n := range []int{2, 62} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			path := b.TempDir() + "/store.db"
			s, err := store.Open(path, store.Options{Timeout: time.Second, Journal: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			for i := range n {
				inv := &store.Invocation{ID: fmt.Sprintf("%032x", i+1), Identity: "acme.deploy/status", Revision: 1,
					Transport: "cli", Task: "owner", PID: 1, StartedAt: time.Unix(1, 0)}
				if err := s.JournalBegin(inv, 1<<20, func(*store.Invocation) bool { return true }); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if got, err := store.ReadJournal(s, path); err != nil || got != n {
					b.Fatalf("read %d entries (%v), want %d", got, err, n)
				}
			}
		})
	}
}
