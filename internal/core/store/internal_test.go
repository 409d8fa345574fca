package store

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

func TestMigrationsEndAtSchemaVersion(t *testing.T) {
	if len(migrations) == 0 {
		t.Fatal("no migrations")
	}
	for i, m := range migrations {
		if m.to != uint64(i+1) {
			t.Errorf("migration %d goes to version %d, want %d", i, m.to, i+1)
		}
		if m.fn == nil || m.name == "" {
			t.Errorf("migration to %d has no function or name", m.to)
		}
	}
	if last := migrations[len(migrations)-1].to; last != SchemaVersion {
		t.Errorf("migrations end at %d, SchemaVersion is %d", last, SchemaVersion)
	}
}

// TestRecordEncodingIsPinned catches an accidental change of the stored
// format: changing a record is a new SchemaVersion with a migration.
func TestRecordEncodingIsPinned(t *testing.T) {
	tests := []struct {
		name string
		rec  any
		want string
	}{
		{"release", &releaseRec{Package: "p", Version: "1", Publisher: "a", Dir: "/d", SignedBy: "k", Pinned: true, InstalledAt: 2, InstalledBy: 3, Descriptor: []byte("{}")},
			"a9" + "016170" + "026131" + "036161" + "04622f64" + "05616b" + "06f5" + "0702" + "0803" + "09427b7d"},
		{"release with a source", &releaseRec{Package: "p", Version: "1", Publisher: "a", Dir: "/d", InstalledAt: 2, InstalledBy: 3, Descriptor: []byte("{}"),
			Source: &sourceRec{Ref: "r", Resolved: "s", Fixed: true, PlainHTTP: true}},
			"a8" + "016170" + "026131" + "036161" + "04622f64" + "0702" + "0803" + "09427b7d" + "0a" + "a4" + "016172" + "026173" + "03f5" + "04f5"},
		{"name", &nameRec{Publisher: "a", Since: 2, By: 3}, "a3" + "016161" + "0202" + "0303"},
		{"key", &keyRec{Public: []byte{1}, AddedAt: 2, AddedBy: 3}, "a3" + "014101" + "0202" + "0303"},
		{"revision", &revisionRec{Parent: 1, Hash: "h", Profile: []byte("{}"), Packages: []activePackageRec{{"p", "1", "d"}}, Keys: []string{"k"}, Routes: 2, Created: 3, Op: "o", By: 4},
			"a9" + "0101" + "026168" + "03427b7d" + "0481a3016170026131036164" + "0581616b" + "0602" + "0703" + "08616f" + "0904"},
		{"route", &routeRec{Identity: "i", Digest: "d", Command: 1, Alias: true, Summary: "s"}, "a5" + "016169" + "026164" + "0301" + "04f5" + "056173"},
		{"audit", &auditRec{Time: 1, UID: 2, Op: "o", Old: 3, New: 4, Detail: "x"}, "a6" + "0101" + "0202" + "03616f" + "0403" + "0504" + "066178"},
	}
	for _, tt := range tests {
		got, err := encode(tt.rec)
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(got) != tt.want {
			t.Errorf("%s encodes as\n%x\nwant\n%s", tt.name, got, tt.want)
		}
		// Encoding is deterministic and round-trips.
		back := reflect.New(reflect.TypeOf(tt.rec).Elem()).Interface()
		if err := decMode.Unmarshal(got, back); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !reflect.DeepEqual(back, tt.rec) {
			t.Errorf("%s: round trip gave %+v", tt.name, back)
		}
		again, _ := encode(back)
		if !bytes.Equal(again, got) {
			t.Errorf("%s: re-encoding differs", tt.name)
		}
	}
}

// FuzzDecodeRecord feeds arbitrary bytes to every record decoder: they
// return errors, never panic, and what they accept re-encodes to a
// record that decodes to the same value.
func FuzzDecodeRecord(f *testing.F) {
	seeds := []any{
		&releaseRec{Package: "acme.deploy", Version: "1.0.0", Publisher: "acme", Dir: "/r", InstalledAt: 1, Descriptor: []byte("{}")},
		&keyRec{Public: make([]byte, 32), AddedAt: 1},
		&revisionRec{Hash: "sha256:" + string(bytes.Repeat([]byte("a"), 64)), Packages: []activePackageRec{{"p", "1", "d"}}, Keys: []string{"a/b"}, Op: "op"},
		&routeRec{Identity: "acme.deploy/status", Digest: "sha256:" + string(bytes.Repeat([]byte("b"), 64)), Command: 1, Alias: true},
		&auditRec{Time: 1, Op: "install", Old: 1, New: 2},
	}
	for _, s := range seeds {
		b, err := encode(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xf6})
	f.Add([]byte{0xa1, 0x05, 0x9a, 0xff, 0xff, 0xff, 0xff})
	f.Add(append([]byte{0xa1, 0x05}, bytes.Repeat([]byte{0x81}, 100)...))

	digestKey := []byte("sha256:" + string(bytes.Repeat([]byte("c"), 64)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := decodeReleaseRec(digestKey, data); err == nil {
			roundTrip(t, data, r, func(b []byte) (any, error) { return decodeReleaseRec(digestKey, b) }, &releaseRec{})
		}
		_, _ = decodeKeyRec(append([]byte("acme\x00"), digestKey...), data)
		if r, err := decodeRevisionRec(u64key(2), data); err == nil {
			roundTrip(t, data, r, func(b []byte) (any, error) { return decodeRevisionRec(u64key(2), b) }, &revisionRec{})
		}
		_, _ = decodeRouteRec([]byte("deploy status"), data)
		_, _ = decodeAuditRec(u64key(1), data)
		_, _ = routeCount(data)
	})
}

// roundTrip decodes data into the raw record type, re-encodes it, and
// requires that decoding the new bytes gives got again.
func roundTrip(t *testing.T, data []byte, got any, dec func([]byte) (any, error), rec any) {
	t.Helper()
	if err := decMode.Unmarshal(data, rec); err != nil {
		t.Fatalf("the record decoder accepted what the raw decoder refuses: %v", err)
	}
	b, err := encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	again, err := dec(b)
	if err != nil {
		t.Fatalf("re-encoded record does not decode: %v", err)
	}
	if !reflect.DeepEqual(got, again) {
		t.Fatalf("round trip changed the record:\n%+v\n%+v", got, again)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	valid := &releaseRec{Package: "p", Version: "1", Publisher: "a", Dir: "/d", InstalledAt: 2, Descriptor: []byte("{}")}
	good, err := encode(valid)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("sha256:" + string(bytes.Repeat([]byte("c"), 64)))
	if _, err := decodeReleaseRec(key, good); err != nil {
		t.Fatalf("a valid record: %v", err)
	}
	// good with one more pair: the map header grows by one.
	withPair := func(pair ...byte) []byte {
		b := append([]byte{good[0] + 1}, good[1:]...)
		return append(b, pair...)
	}
	tests := map[string][]byte{
		"unknown field":   withPair(0x18, 0x63, 0x01),      // 99: 1
		"duplicate field": withPair(0x01, 0x61, 'q'),       // 1: "q" again
		"trailing bytes":  append(bytes.Clone(good), 0x00), // a second item
		"tagged":          append([]byte{0xd8, 0x20}, good...),
		"indefinite map":  append(append([]byte{0xbf}, good[1:]...), 0xff),
		"invalid UTF-8":   {0xa1, 0x01, 0x61, 0xff},
	}
	for name, data := range tests {
		if _, err := decodeReleaseRec(key, data); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
