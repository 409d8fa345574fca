package store_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// bigStore makes a store at a fresh path with revisions and 1,000
// finished invocation records (the retention limit), so that the
// records bucket has branch pages, and returns its path.
func bigStore(t testing.TB) string {
	t.Helper()
	path, s := openPath(t)
	defer s.Close()
	deploy := release("acme.deploy", "1.0.0")
	for i := range 20 {
		publish(t, s, fmt.Sprint("change ", i), []*store.Release{deploy}, "deploy status")
	}
	for i := range store.MaxFinishedInvocations {
		inv := &store.Invocation{ID: fmt.Sprintf("%032x", i+1), Identity: "acme.deploy/status", Digest: deploy.Digest,
			Revision: 1, Transport: "cli", Task: "owner", PID: 1, StartedAt: t0}
		mustUpdate(t, s, func(tx *store.Tx) error {
			if err := tx.BeginInvocation(inv, 8, func(*store.Invocation) bool { return true }, t0); err != nil {
				return err
			}
			_, err := tx.FinishInvocation(inv.ID, "succeeded", "", 0, strings.Repeat("detail ", 20), t0)
			return err
		})
	}
	return path
}

// layout reads what the damage below aims at.
type layout struct {
	pageSize, root, records, freelist int
}

func readLayout(t testing.TB, path string) layout {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var l layout
	l.pageSize = db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		l.root = int(tx.Cursor().Bucket().Root())
		l.records = int(tx.Bucket([]byte("invocations")).Bucket([]byte("records")).Root())
		for i := 2; i < int(tx.Size())/l.pageSize; i++ {
			if p, _ := tx.Page(i); p != nil && p.Type == "freelist" {
				l.freelist = i
			}
		}
		if p, _ := tx.Page(l.records); p == nil || p.Type != "branch" {
			return fmt.Errorf("records root is %+v, want a branch page", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// patch changes the closed file at path.
func patch(t testing.TB, path string, fn func(b []byte)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn(b)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func requireDamaged(t *testing.T, err error, path, want string) {
	t.Helper()
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("err = %v, want a *CorruptError for %s", err, path)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "the store at "+path+" is damaged: ") || !strings.HasSuffix(msg, store.Recovery()) || !strings.Contains(msg, want) {
		t.Fatalf("err = %q, want the path, %q and the recovery", msg, want)
	}
}

// TestOpenFindsDamagedPages damages the page structure in ways that make
// bbolt fault, panic or loop once it follows the pointer: Open finds each
// with plain reads of the file before any transaction runs, and says
// what it found.
func TestOpenFindsDamagedPages(t *testing.T) {
	tmpl := bigStore(t)
	l := readLayout(t, tmpl)
	ne := binary.NativeEndian
	at := func(page, off int) int { return page*l.pageSize + off }
	tests := []struct {
		name   string
		damage func(b []byte)
		want   string
	}{
		{"branch cycle", func(b []byte) { ne.PutUint64(b[at(l.records, 16+8):], uint64(l.records)) }, fmt.Sprintf("page %d is reached twice", l.records)},
		{"branch to the root", func(b []byte) { ne.PutUint64(b[at(l.records, 16+8):], uint64(l.root)) }, fmt.Sprintf("page %d is reached twice", l.root)},
		{"branch out of the file", func(b []byte) { ne.PutUint64(b[at(l.records, 16+8):], 1<<40) }, "points at page 1099511627776, outside the file"},
		{"branch elements", func(b []byte) { ne.PutUint16(b[at(l.records, 10):], 0xffff) }, "has 65535 elements, which do not fit it"},
		// A read-write open has bbolt read the freelist, which panics
		// ("invalid freelist page"); a read-only one leaves it to the
		// check ("the freelist: page N is a leaf page").
		{"freelist type", func(b []byte) { ne.PutUint16(b[at(l.freelist, 8):], 0x02) }, "freelist"},
		{"freelist entry out of the file", func(b []byte) {
			ne.PutUint16(b[at(l.freelist, 10):], 1)
			ne.PutUint64(b[at(l.freelist, 16):], 1<<40)
		}, "the freelist lists page 1099511627776, outside the file"},
		{"freelist lists the root", func(b []byte) {
			ne.PutUint16(b[at(l.freelist, 10):], 1)
			ne.PutUint64(b[at(l.freelist, 16):], uint64(l.root))
		}, fmt.Sprintf("page %d is in use and also listed as free", l.root)},
		{"root element outside its page", func(b []byte) { ne.PutUint32(b[at(l.root, 16+4):], 0xffffff) }, "element 0 lies outside the page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rukh.db")
			data, err := os.ReadFile(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(data)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{true, false} {
				s, err := store.Open(path, store.Options{ReadOnly: ro, Timeout: time.Second})
				if err == nil {
					s.Close()
					t.Fatalf("Open (read-only %v) accepted the damaged file", ro)
				}
				requireDamaged(t, err, path, tt.want)
			}
		})
	}
}

// TestPanicInBboltIsDamage makes bbolt panic inside a transaction — a
// leaf whose element runs past its page, which Open's quick look does not
// read — and requires View, Update and Batch (a held store's group
// commit) to return a *CorruptError, the store to stay usable for what is
// intact, and Close to work.
func TestPanicInBboltIsDamage(t *testing.T) {
	path := bigStore(t)
	l := readLayout(t, path)
	var leaf int
	patch(t, path, func(b []byte) {
		ne := binary.NativeEndian
		// The records' last leaf: every value far past the file's end.
		leaf = l.records
		for ne.Uint16(b[leaf*l.pageSize+8:]) == 0x01 { // a branch page
			n := int(ne.Uint16(b[leaf*l.pageSize+10:]))
			leaf = int(ne.Uint64(b[leaf*l.pageSize+16+16*(n-1)+8:]))
		}
		for i := range int(ne.Uint16(b[leaf*l.pageSize+10:])) {
			ne.PutUint32(b[leaf*l.pageSize+16+16*i+12:], 0x7fffffff)
		}
	})
	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The damage is named as a check of the file finds it, not in the
	// runtime's words for the panic.
	want := fmt.Sprintf("leaf page %d: element 0 lies outside the page", leaf)
	err = s.View(func(tx *store.Tx) error { _, err := tx.Invocations(5); return err })
	requireDamaged(t, err, path, want)
	err = s.Update(func(tx *store.Tx) error { _, err := tx.Invocations(5); return err })
	requireDamaged(t, err, path, want)
	err = s.Batch(func(tx *store.Tx) error { _, err := tx.Invocations(5); return err })
	requireDamaged(t, err, path, want)
	// What is intact still reads.
	if err := s.View(func(tx *store.Tx) error { _, err := tx.Releases(); return err }); err != nil {
		t.Fatalf("reading releases: %v", err)
	}
	// Check says where.
	requireDamaged(t, s.Check(), path, fmt.Sprintf("leaf page %d: element 0 lies outside the page", leaf))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestPanicOutsideBboltIsNotHidden: a panic in the caller's function is a
// bug, not damage; it reaches the caller, after the transaction ended
// (the store can be closed and opened again).
func TestPanicOutsideBboltIsNotHidden(t *testing.T) {
	path, s := openPath(t)
	for _, update := range []bool{false, true} {
		func() {
			defer func() {
				if r := recover(); r != "a bug" {
					t.Fatalf("recovered %v, want the caller's panic", r)
				}
			}()
			fn := func(*store.Tx) error { panic("a bug") }
			if update {
				s.Update(fn)
			} else {
				s.View(fn)
			}
		}()
	}
	var nilMap map[string]*int
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil pointer") {
				t.Fatalf("recovered %v, want the nil pointer dereference", r)
			}
		}()
		s.View(func(*store.Tx) error { _ = *nilMap["x"]; return nil })
	}()
	if err := s.Update(func(tx *store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestCheckReportsDamagedMeta: one damaged meta page is not fatal — bbolt
// reads the other — so Open works, but Check reports it.
func TestCheckReportsDamagedMeta(t *testing.T) {
	path, s := openPath(t)
	publish(t, s, "install", []*store.Release{release("acme.deploy", "1.0.0")}, "deploy status")
	s.Close()
	patch(t, path, func(b []byte) { b[16+60] ^= 0xff }) // meta page 0's checksum
	s, err := store.Open(path, store.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	requireDamaged(t, s.Check(), path, "meta page 0: checksum mismatch; bbolt reads the other one")
}

// BenchmarkOpen is what every store open costs with the quick look at
// the file's pages, on a store at the invocation retention limit.
func BenchmarkOpen(b *testing.B) {
	path := bigStore(b)
	fi, _ := os.Stat(path)
	b.ReportMetric(float64(fi.Size()), "file-bytes")
	for b.Loop() {
		s, err := store.Open(path, store.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// TestOpenChecksAFilePutInPlace: a damaged store file put at the path
// after Open checked the one there, and before bbolt opens the path, is
// checked too before any transaction reads it (bbolt's open does not reach
// the damaged page); so is one a read-only open finds. With nothing put
// there, the store opens.
func TestOpenChecksAFilePutInPlace(t *testing.T) {
	tmpl := bigStore(t)
	l := readLayout(t, tmpl)
	damaged, err := os.ReadFile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	binary.NativeEndian.PutUint64(damaged[l.records*l.pageSize+16+8:], uint64(l.records)) // a branch cycle
	for _, ro := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "store.db")
		good, err := os.ReadFile(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
		swap := false
		store.SetCheckedHook(func(p string) {
			if swap && p == path {
				if err := os.WriteFile(p+".swap", damaged, 0o600); err != nil {
					t.Error(err)
				}
				if err := os.Rename(p+".swap", p); err != nil {
					t.Error(err)
				}
			}
		})
		t.Cleanup(func() { store.SetCheckedHook(func(string) {}) })
		s, err := store.Open(path, store.Options{ReadOnly: ro, Timeout: time.Second})
		if err != nil {
			t.Fatalf("read-only %v, nothing put in place: %v", ro, err)
		}
		s.Close()
		swap = true
		s, err = store.Open(path, store.Options{ReadOnly: ro, Timeout: time.Second})
		if err == nil {
			s.Close()
			t.Fatalf("read-only %v: Open accepted the damaged file put in place after its check", ro)
		}
		requireDamaged(t, err, path, fmt.Sprintf("page %d is reached twice", l.records))
	}
}
