package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "rukh.db")
	before := time.Now()
	s, err := store.Open(path, store.Options{})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700 | fs.ModeDir, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	if err := storetest.Check(s); err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *store.Tx) error {
		if got := len(tx.Secret()); got != 32 {
			t.Errorf("secret has %d bytes", got)
		}
		if c := tx.Created(); c.Before(before) || c.After(after) {
			t.Errorf("created %v, not while Open ran (%v to %v)", c, before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenRelativePathIsAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := store.Open("rukh.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !filepath.IsAbs(s.Path()) {
		t.Errorf("Path() = %q, want absolute", s.Path())
	}
}

func TestReopenKeepsDataAndSecret(t *testing.T) {
	path, s := openPath(t)
	publish(t, s, "install", []*store.Release{release("acme.deploy", "1.0.0")}, "deploy status")
	var secret []byte
	_ = s.View(func(tx *store.Tx) error { secret = tx.Secret(); return nil })
	s.Close()
	before, _ := os.Stat(path)

	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("reopening an up-to-date store wrote to it")
	}
	err = s.View(func(tx *store.Tx) error {
		if !bytes.Equal(tx.Secret(), secret) {
			t.Error("secret changed across reopen")
		}
		r, err := tx.ActiveRevision()
		if err != nil || r == nil || r.Number != 1 {
			t.Errorf("active revision = %+v, %v", r, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.Check(s); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsDiffer(t *testing.T) {
	var secrets [2][]byte
	for i := range secrets {
		s := storetest.Open(t)
		_ = s.View(func(tx *store.Tx) error { secrets[i] = tx.Secret(); return nil })
	}
	if bytes.Equal(secrets[0], secrets[1]) {
		t.Error("two stores share a secret")
	}
	if bytes.Equal(secrets[0], make([]byte, 32)) {
		t.Error("secret is all zero")
	}
}

func TestReadOnly(t *testing.T) {
	t.Run("missing file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nothing")
		_, err := store.Open(filepath.Join(dir, "rukh.db"), store.Options{ReadOnly: true})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want fs.ErrNotExist", err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("read-only open created %s", dir)
		}
	})
	t.Run("empty bbolt file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rukh.db")
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		_, err = store.Open(path, store.Options{ReadOnly: true})
		var ce *store.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "holds no buckets at all") {
			t.Fatalf("err = %v, want *CorruptError", err)
		}
	})
	t.Run("reads, refuses writes, shares the lock", func(t *testing.T) {
		path, s := openPath(t)
		publish(t, s, "install", []*store.Release{release("acme.deploy", "1.0.0")}, "deploy status")
		s.Close()
		r1, err := store.Open(path, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r1.Close()
		r2, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("a second reader: %v", err)
		}
		defer r2.Close()
		err = r1.View(func(tx *store.Tx) error {
			rt, n, err := tx.ResolveRoute([]string{"deploy", "status"})
			if err != nil || rt == nil || n != 2 {
				t.Errorf("ResolveRoute = %v, %d, %v", rt, n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r1.Update(func(*store.Tx) error { return nil }); err == nil {
			t.Error("Update on a read-only store succeeded")
		}
		if err := storetest.Check(r1); err != nil {
			t.Error(err)
		}
		// A writer cannot get in while readers hold the shared lock.
		_, err = store.Open(path, store.Options{Timeout: 100 * time.Millisecond})
		var le *store.LockedError
		if !errors.As(err, &le) {
			t.Errorf("writer while readers hold the lock: %v, want *LockedError", err)
		}
	})
}

func TestLockedInProcess(t *testing.T) {
	path, s := openPath(t)
	defer s.Close()
	for _, readOnly := range []bool{false, true} {
		start := time.Now()
		_, err := store.Open(path, store.Options{Timeout: 100 * time.Millisecond, ReadOnly: readOnly})
		elapsed := time.Since(start)
		var le *store.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("readOnly=%v: err = %v, want *LockedError", readOnly, err)
		}
		if le.Path != path {
			t.Errorf("LockedError.Path = %q, want %q", le.Path, path)
		}
		// Not before its timeout (a lower bound: slowness cannot fail it).
		if elapsed < 100*time.Millisecond {
			t.Errorf("readOnly=%v: gave up after %v, before its 100ms timeout", readOnly, elapsed)
		}
		for _, want := range []string{path, "another process", "rukhd", "`rukh daemon status`", "retry"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not mention %q", err, want)
			}
		}
	}
}

func TestLockedDefaultTimeout(t *testing.T) {
	path, s := openPath(t)
	defer s.Close()
	start := time.Now()
	_, err := store.Open(path, store.Options{}) // 0: DefaultTimeout, never forever
	elapsed := time.Since(start)
	var le *store.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want *LockedError", err)
	}
	if elapsed < store.DefaultTimeout {
		t.Errorf("gave up after %v, before DefaultTimeout (%v)", elapsed, store.DefaultTimeout)
	}
}

func TestLockedBySubprocess(t *testing.T) {
	path, s := openPath(t)
	s.Close()
	p := startHelper(t, "hold", path, true)

	_, err := store.Open(path, store.Options{Timeout: 100 * time.Millisecond})
	var le *store.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want *LockedError", err)
	}

	// Once the holder lets go, the store opens.
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	s, err = store.Open(path, store.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := storetest.Check(s); err != nil {
		t.Fatal(err)
	}
}

func TestFutureSchemaVersion(t *testing.T) {
	path, s := openPath(t)
	s.Close()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), u64(store.SchemaVersion+1))
	})
	for _, readOnly := range []bool{false, true} {
		_, err := store.Open(path, store.Options{ReadOnly: readOnly})
		var fe *store.FutureError
		if !errors.As(err, &fe) {
			t.Fatalf("readOnly=%v: err = %v, want *FutureError", readOnly, err)
		}
		if fe.Found != store.SchemaVersion+1 || fe.Supported != store.SchemaVersion {
			t.Errorf("FutureError = %+v", fe)
		}
		want := fmt.Sprintf("the store at %s has schema version %d; this build supports up to %d; upgrade rukh", path, store.SchemaVersion+1, store.SchemaVersion)
		if err.Error() != want {
			t.Errorf("message\n got %q\nwant %q", err, want)
		}
	}
	// The refused open released the lock.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("lock still held after a refused open: %v", err)
	}
	db.Close()
}

func TestOpenRefusesOtherFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"garbage", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is damaged: neither meta page is readable"},
		{"foreign bbolt file", func(t *testing.T, path string) {
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				_, err := tx.CreateBucket([]byte("other"))
				return err
			})
		}, "not a rukh store"},
		{"bad schema value", func(t *testing.T, path string) {
			s, err := store.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{1})
			})
		}, "is corrupt"},
		{"short secret", func(t *testing.T, path string) {
			s, err := store.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("meta")).Put([]byte("secret"), []byte("short"))
			})
		}, "is corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rukh.db")
			tt.setup(t, path)
			s, err := store.Open(path, store.Options{Timeout: 100 * time.Millisecond})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// An existing store.db that is not a whole store is damage, whatever its
// size, for a read-only and a read-write open alike: never initialized as
// a new store (whose empty release list would let an owner change sweep
// every installed release away), never bbolt's own words, never a crash;
// and the file is left exactly as it was, for the owner to recover from.
func TestOpenDamagedFileIsNeverANewStore(t *testing.T) {
	full, s := openPath(t)
	s.Close()
	whole, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	emptyBolt := filepath.Join(t.TempDir(), "empty.db")
	db, err := bolt.Open(emptyBolt, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	emptyBoltBytes, err := os.ReadFile(emptyBolt)
	if err != nil {
		t.Fatal(err)
	}
	zeroMetas := bytes.Clone(whole)
	clear(zeroMetas[:2*os.Getpagesize()])
	for _, tc := range []struct {
		name     string
		contents []byte
		want     string
	}{
		{"empty", nil, "too short for a bbolt file"},
		{"100 bytes", whole[:100], "is damaged"},
		{"one page", whole[:4096], "is damaged"},
		{"both meta pages zeroed", zeroMetas, "neither meta page is readable"},
		{"a bbolt file with no buckets", emptyBoltBytes, "holds no buckets at all"},
	} {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/readonly=%v", tc.name, ro), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "rukh.db")
				if err := os.WriteFile(path, tc.contents, 0o600); err != nil {
					t.Fatal(err)
				}
				s, err := store.Open(path, store.Options{ReadOnly: ro, Timeout: time.Second})
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded")
				}
				var ce *store.CorruptError
				if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), store.Recovery()) {
					t.Errorf("err = %v, want a *CorruptError at %s mentioning %q and the recovery", err, path, tc.want)
				}
				if got, _ := os.ReadFile(path); !bytes.Equal(got, tc.contents) {
					t.Errorf("Open changed the damaged file: %d bytes, was %d", len(got), len(tc.contents))
				}
				if _, err := os.Stat(path + ".new"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Open left %s.new: %v", path, err)
				}
			})
		}
	}
}

// A new store is made beside its final name and renamed into place whole:
// after Open, store.db holds every bucket and nothing else is left.
func TestOpenCreatesWholeStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "rukh.db")
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path + ".new"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open left %s.new: %v", path, err)
	}
	// A stale .new of a creation that was killed is replaced.
	other := filepath.Join(t.TempDir(), "rukh.db")
	if err := os.WriteFile(other+".new", []byte("half a store"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(other, store.Options{})
	if err != nil {
		t.Fatalf("with a stale .new beside it: %v", err)
	}
	s.Close()
	r, err := store.Open(other, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the new store does not open read-only: %v", err)
	}
	r.Close()
}
