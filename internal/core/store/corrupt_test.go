package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// nested returns CBOR arrays nested depth deep.
func nested(depth int) []byte {
	return append(bytes.Repeat([]byte{0x81}, depth), 0x00)
}

func mustCBOR(t testing.TB, v any) []byte {
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCorruptRecords writes bad bytes with raw bbolt where records live,
// then reads them through the store: each read is a *CorruptError (not a
// panic), and Check reports the damage.
func TestCorruptRecords(t *testing.T) {
	deploy := release("acme.deploy", "1.0.0")
	garbage := []byte("\xff\x00 this is not CBOR")
	validRelease := func(t testing.TB) []byte {
		return mustCBOR(t, map[int]any{1: "acme.x", 2: "1.0.0", 3: "acme", 4: "/x", 7: 1, 8: 0, 9: []byte("{}")})
	}
	put := func(bucket string, key, value []byte) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put(key, value) }
	}
	putRoute := func(key, value []byte) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error { return tx.Bucket([]byte("routes")).Bucket(u64(1)).Put(key, value) }
	}
	rd := []byte(deploy.Digest)
	releases := func(tx *store.Tx) error { _, err := tx.Releases(); return err }
	getRelease := func(tx *store.Tx) error { _, err := tx.Release(deploy.Digest); return err }
	keys := func(tx *store.Tx) error { _, err := tx.Keys(""); return err }
	revision := func(tx *store.Tx) error { _, err := tx.Revision(1); return err }
	active := func(tx *store.Tx) error { _, err := tx.ActiveRevision(); return err }
	revisions := func(tx *store.Tx) error { _, err := tx.Revisions(); return err }
	history := func(tx *store.Tx) error { _, err := tx.History(1); return err }
	resolve := func(tx *store.Tx) error { _, _, err := tx.ResolveRoute([]string{"deploy", "status"}); return err }
	prefix := func(tx *store.Tx) error { _, err := tx.RoutesWithPrefix(nil); return err }
	audit := func(tx *store.Tx) error { _, err := tx.Audit(0); return err }

	tests := []struct {
		name   string
		damage func(t testing.TB) func(tx *bolt.Tx) error
		reads  []func(tx *store.Tx) error
	}{
		{"release garbage", func(t testing.TB) func(*bolt.Tx) error { return put("releases", rd, garbage) }, []func(*store.Tx) error{releases, getRelease}},
		{"release empty", func(t testing.TB) func(*bolt.Tx) error { return put("releases", rd, []byte{}) }, []func(*store.Tx) error{releases, getRelease}},
		{"release null", func(t testing.TB) func(*bolt.Tx) error { return put("releases", rd, []byte{0xf6}) }, []func(*store.Tx) error{releases, getRelease}},
		{"release array", func(t testing.TB) func(*bolt.Tx) error { return put("releases", rd, mustCBOR(t, []int{1, 2})) }, []func(*store.Tx) error{releases, getRelease}},
		{"release unknown field", func(t testing.TB) func(*bolt.Tx) error {
			return put("releases", rd, mustCBOR(t, map[int]any{1: "acme.x", 99: "new"}))
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release string keys", func(t testing.TB) func(*bolt.Tx) error {
			return put("releases", rd, mustCBOR(t, map[string]any{"Package": "acme.x"}))
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release duplicate key", func(t testing.TB) func(*bolt.Tx) error {
			// {1: "a", 1: "b"}
			return put("releases", rd, []byte{0xa2, 0x01, 0x61, 'a', 0x01, 0x61, 'b'})
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release wrong type", func(t testing.TB) func(*bolt.Tx) error {
			return put("releases", rd, mustCBOR(t, map[int]any{1: 42}))
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release trailing bytes", func(t testing.TB) func(*bolt.Tx) error {
			return put("releases", rd, append(validRelease(t), 0x00))
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release truncated", func(t testing.TB) func(*bolt.Tx) error {
			v := validRelease(t)
			return put("releases", rd, v[:len(v)-3])
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release tag", func(t testing.TB) func(*bolt.Tx) error {
			return put("releases", rd, append([]byte{0xc1}, validRelease(t)...))
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release invalid values", func(t testing.TB) func(*bolt.Tx) error {
			return put("releases", rd, mustCBOR(t, map[int]any{1: "", 2: "1", 3: "acme", 4: "relative", 9: []byte("{}")}))
		}, []func(*store.Tx) error{releases, getRelease}},
		{"release key not a digest", func(t testing.TB) func(*bolt.Tx) error { return put("releases", []byte("x"), validRelease(t)) }, []func(*store.Tx) error{releases}},
		{"release is a bucket", func(t testing.TB) func(*bolt.Tx) error {
			return func(tx *bolt.Tx) error {
				_, err := tx.Bucket([]byte("releases")).CreateBucket([]byte(digest("b")))
				return err
			}
		}, []func(*store.Tx) error{releases}},
		{"key without separator", func(t testing.TB) func(*bolt.Tx) error {
			return put("trust", []byte("acme"), mustCBOR(t, map[int]any{1: make([]byte, 32)}))
		}, []func(*store.Tx) error{keys}},
		{"key garbage", func(t testing.TB) func(*bolt.Tx) error {
			return put("trust", []byte("acme\x00"+digest("k")), garbage)
		}, []func(*store.Tx) error{keys}},
		{"revision garbage", func(t testing.TB) func(*bolt.Tx) error { return put("revisions", u64(1), garbage) },
			[]func(*store.Tx) error{revision, active, revisions, history}},
		{"revision deeply nested", func(t testing.TB) func(*bolt.Tx) error {
			v := append([]byte{0xa1, 0x05}, nested(10000)...) // {5: [[[[…]]]]}
			return put("revisions", u64(1), v)
		}, []func(*store.Tx) error{revision, active, revisions, history}},
		{"revision huge array header", func(t testing.TB) func(*bolt.Tx) error {
			// {5: array of 2^32 elements} with no elements behind it
			return put("revisions", u64(1), []byte{0xa1, 0x05, 0x9a, 0xff, 0xff, 0xff, 0xff})
		}, []func(*store.Tx) error{revision, active, revisions, history}},
		{"revision parent not older", func(t testing.TB) func(*bolt.Tx) error {
			return func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("revisions"))
				var m map[int]any
				if err := cbor.Unmarshal(b.Get(u64(1)), &m); err != nil {
					return err
				}
				m[1] = 1
				return b.Put(u64(1), mustCBOR(t, m))
			}
		}, []func(*store.Tx) error{revision, active, revisions, history}},
		{"route garbage", func(t testing.TB) func(*bolt.Tx) error { return putRoute([]byte("deploy status"), garbage) },
			[]func(*store.Tx) error{resolve, prefix, revision, active}},
		{"route words invalid", func(t testing.TB) func(*bolt.Tx) error {
			return func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("routes")).Bucket(u64(1))
				v := b.Get([]byte("deploy status"))
				return b.Put([]byte("deploy  status"), bytes.Clone(v))
			}
		}, []func(*store.Tx) error{prefix, revision, active}},
		{"route index missing", func(t testing.TB) func(*bolt.Tx) error {
			return func(tx *bolt.Tx) error { return tx.Bucket([]byte("routes")).DeleteBucket(u64(1)) }
		}, []func(*store.Tx) error{resolve, prefix, revision, active}},
		{"active pointer short", func(t testing.TB) func(*bolt.Tx) error { return put("active", []byte("revision"), []byte{1, 2, 3}) },
			[]func(*store.Tx) error{active, resolve, prefix}},
		{"active pointer dangling", func(t testing.TB) func(*bolt.Tx) error { return put("active", []byte("revision"), u64(7)) },
			[]func(*store.Tx) error{active, resolve, prefix}},
		{"audit garbage", func(t testing.TB) func(*bolt.Tx) error { return put("audit", u64(1), garbage) }, []func(*store.Tx) error{audit}},
		{"audit bad key", func(t testing.TB) func(*bolt.Tx) error {
			return put("audit", []byte("one"), mustCBOR(t, map[int]any{3: "x"}))
		}, []func(*store.Tx) error{audit}},
		{"trust bucket missing", func(t testing.TB) func(*bolt.Tx) error {
			return func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("trust")) }
		}, []func(*store.Tx) error{keys}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, s := openPath(t)
			publish(t, s, "install", []*store.Release{deploy}, "deploy status")
			s.Close()
			rawUpdate(t, path, tt.damage(t))

			s, err := store.Open(path, store.Options{Timeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i, read := range tt.reads {
				err := s.View(read)
				if !asCorrupt(err) {
					t.Errorf("read %d: err = %v, want *CorruptError", i, err)
				} else if !strings.Contains(err.Error(), "rukh doctor") {
					t.Errorf("read %d: %q does not say what to do", i, err)
				}
			}
			if err := storetest.Check(s); err == nil {
				t.Error("Check found nothing wrong")
			}
		})
	}
}

// TestCheckFindsBrokenInvariants breaks one of Rukh's invariants at a
// time with well-formed records; Check must name it.
func TestCheckFindsBrokenInvariants(t *testing.T) {
	deploy := release("acme.deploy", "1.0.0")
	tests := []struct {
		name   string
		damage func(tx *bolt.Tx) error
		want   string
	}{
		{"active release removed", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("releases")).Delete([]byte(deploy.Digest))
		}, "not installed"},
		{"active pointer dangling", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("active")).Put([]byte("revision"), u64(9))
		}, "does not exist"},
		{"active pointer missing", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("active")).Delete([]byte("revision"))
		}, "no active revision"},
		{"revision gap", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("revisions"))
			v := bytes.Clone(b.Get(u64(2)))
			if err := b.Delete(u64(2)); err != nil {
				return err
			}
			if err := tx.Bucket([]byte("routes")).DeleteBucket(u64(2)); err != nil {
				return err
			}
			if err := b.Put(u64(3), v); err != nil {
				return err
			}
			if _, err := tx.Bucket([]byte("routes")).CreateBucket(u64(3)); err != nil {
				return err
			}
			return tx.Bucket([]byte("active")).Put([]byte("revision"), u64(3))
		}, "contiguous"},
		{"orphan route index", func(tx *bolt.Tx) error {
			_, err := tx.Bucket([]byte("routes")).CreateBucket(u64(5))
			return err
		}, "belongs to no revision"},
		{"route count differs", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("routes")).Bucket(u64(2)).Delete([]byte("deploy status"))
		}, "declares"},
		{"route points elsewhere", func(tx *bolt.Tx) error {
			m := map[int]any{1: "acme.x/y", 2: digest("elsewhere"), 3: 0}
			b, _ := cbor.Marshal(m)
			return tx.Bucket([]byte("routes")).Bucket(u64(2)).Put([]byte("deploy status"), b)
		}, "not among its packages"},
		{"audit gap", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("audit")).Delete(u64(1))
		}, "contiguous"},
		{"audit sequence", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("audit")).SetSequence(10)
		}, "bucket sequence"},
		{"extra bucket", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("surprise"))
			return err
		}, "unexpected top-level bucket"},
		{"invocations missing", func(tx *bolt.Tx) error {
			return tx.DeleteBucket([]byte("invocations"))
		}, "invocations is missing"},
		{"old schema", func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("schema"), u64(0))
		}, "schema version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, s := openPath(t)
			publish(t, s, "install", []*store.Release{deploy}, "deploy status")
			publish(t, s, "again", []*store.Release{deploy}, "deploy status")
			if err := storetest.Check(s); err != nil {
				t.Fatalf("before the damage: %v", err)
			}
			s.Close()
			rawUpdate(t, path, tt.damage)
			s, err := store.Open(path, store.Options{ReadOnly: true})
			if tt.name == "old schema" {
				// A read-only open refuses to migrate; check what Open says.
				if err == nil || !strings.Contains(err.Error(), "migrat") {
					t.Fatalf("Open = %v, want a migration error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = storetest.Check(s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestCorruptErrorUnwraps(t *testing.T) {
	inner := errors.New("inner")
	err := error(&store.CorruptError{Bucket: "b", Key: "k", Err: inner})
	if !errors.Is(err, inner) {
		t.Error("CorruptError does not unwrap")
	}
	if got, want := err.Error(), "the store is damaged: record b/k is corrupt: inner; "+store.Recovery(); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	err = &store.CorruptError{Path: "/data/store.db", Err: inner}
	if got, want := err.Error(), "the store at /data/store.db is damaged: inner; copy the file somewhere safe, then run `rukh doctor` and follow \"Recovering a damaged store\" in the owner guide (docs/owner.md)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// A store of schema version 2, with releases, revisions and names, opens
// in this build: it is migrated to version 3 (a release record may name
// its source), everything it held reads the same and checks whole, and a
// release with a source can be stored beside the old ones.
func TestSchema2StoreOpens(t *testing.T) {
	path, s := openPath(t)
	old := release("acme.deploy", "1.0.0")
	publish(t, s, "install", []*store.Release{old}, "deploy status")
	s.Close()
	rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), u64(2)) })

	s, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("open a schema 2 store: %v", err)
	}
	defer s.Close()
	if err := storetest.Check(s); err != nil {
		t.Fatalf("after the migration: %v", err)
	}
	var got []*store.Release
	if err := s.View(func(tx *store.Tx) (err error) { got, err = tx.Releases(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Digest != old.Digest || got[0].Source != nil {
		t.Fatalf("releases after the migration: %+v", got)
	}
	fetched := release("acme.deploy", "1.1.0")
	fetched.Source = &store.Source{Ref: "oci://registry.example/acme/deploy:1.1.0", Resolved: "sha256:" + strings.Repeat("b", 64)}
	publish(t, s, "upgrade", []*store.Release{fetched}, "deploy status")
	if err := s.View(func(tx *store.Tx) error {
		r, err := tx.Release(fetched.Digest)
		if err == nil && (r.Source == nil || *r.Source != *fetched.Source) {
			err = fmt.Errorf("source %+v, want %+v", r.Source, fetched.Source)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Check(s); err != nil {
		t.Fatalf("with a source: %v", err)
	}
}
