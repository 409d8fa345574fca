package store_test

import (
	"cmp"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

func TestReleases(t *testing.T) {
	s := storetest.Open(t)
	a1 := release("acme.deploy", "1.0.0")
	a2 := release("acme.deploy", "1.1.0")
	a2.InstalledAt = t0.Add(-time.Hour) // installed earlier than a1
	a2.SignedBy = ""
	a2.Pinned = true
	b1 := release("acme.build", "0.1.0")
	b1.Descriptor = []byte{0, 1, 2, 255} // opaque, not even JSON

	mustUpdate(t, s, func(tx *store.Tx) error {
		for _, r := range []*store.Release{a1, a2, b1} {
			if err := tx.PutRelease(r); err != nil {
				return err
			}
		}
		return nil
	})

	tests := []struct {
		digest string
		want   *store.Release
	}{
		{a1.Digest, a1},
		{a2.Digest, a2},
		{b1.Digest, b1},
		{digest("absent"), nil},
		{"not a digest", nil},
	}
	for _, tt := range tests {
		err := s.View(func(tx *store.Tx) error {
			got, err := tx.Release(tt.digest)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Release(%s)\n got %+v\nwant %+v", tt.digest, got, tt.want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	listed := func() []string {
		var out []string
		err := s.View(func(tx *store.Tx) error {
			rs, err := tx.Releases()
			for _, r := range rs {
				out = append(out, r.Package+"@"+r.Version)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// By package, then installation time.
	if got, want := listed(), []string{"acme.build@0.1.0", "acme.deploy@1.1.0", "acme.deploy@1.0.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Releases() = %v, want %v", got, want)
	}

	// Put replaces.
	a1.Dir = "/elsewhere"
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.PutRelease(a1) })
	_ = s.View(func(tx *store.Tx) error {
		got, _ := tx.Release(a1.Digest)
		if got.Dir != "/elsewhere" {
			t.Errorf("Dir after replace = %q", got.Dir)
		}
		return nil
	})

	// Delete; deleting again is not an error.
	for range 2 {
		mustUpdate(t, s, func(tx *store.Tx) error { return tx.DeleteRelease(a2.Digest) })
	}
	if got, want := listed(), []string{"acme.build@0.1.0", "acme.deploy@1.0.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Releases() after delete = %v, want %v", got, want)
	}
}

func TestPutReleaseRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *store.Release)
		want   string
	}{
		{"bad digest", func(r *store.Release) { r.Digest = "sha256:ABC" }, "digest"},
		{"uppercase digest", func(r *store.Release) { r.Digest = strings.ToUpper(r.Digest) }, "digest"},
		{"no package", func(r *store.Release) { r.Package = "" }, "package is empty"},
		{"no version", func(r *store.Release) { r.Version = "" }, "version is empty"},
		{"no publisher", func(r *store.Release) { r.Publisher = "" }, "publisher is empty"},
		{"control char", func(r *store.Release) { r.Publisher = "ac\x00me" }, "control character"},
		{"relative dir", func(r *store.Release) { r.Dir = "releases/x" }, "absolute"},
		{"bad signer", func(r *store.Release) { r.SignedBy = "acme" }, "signed-by"},
		{"negative uid", func(r *store.Release) { r.InstalledBy = -1 }, "negative"},
		{"no descriptor", func(r *store.Release) { r.Descriptor = nil }, "descriptor is empty"},
	}
	s := storetest.Open(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := release("acme.deploy", "1.0.0")
			tt.change(r)
			err := s.Update(func(tx *store.Tx) error { return tx.PutRelease(r) })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			_ = s.View(func(tx *store.Tx) error {
				if rs, _ := tx.Releases(); len(rs) != 0 {
					t.Errorf("a rejected release was written: %+v", rs)
				}
				return nil
			})
		})
	}
}

func TestDeleteActiveRelease(t *testing.T) {
	s := storetest.Open(t)
	rel := release("acme.deploy", "1.0.0")
	n := publish(t, s, "install", []*store.Release{rel}, "deploy status")
	err := s.Update(func(tx *store.Tx) error { return tx.DeleteRelease(rel.Digest) })
	var ue *store.InUseError
	if !errors.As(err, &ue) || ue.Digest != rel.Digest || ue.Revision != n {
		t.Fatalf("err = %v, want *InUseError", err)
	}
	// Once a revision without it is active, it can go.
	other := release("acme.other", "1.0.0")
	publish(t, s, "replace", []*store.Release{other}, "other run")
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.DeleteRelease(rel.Digest) })
}

func TestWritesNeedAWritableTx(t *testing.T) {
	s := storetest.Open(t)
	writes := map[string]func(tx *store.Tx) error{
		"PutRelease": func(tx *store.Tx) error { return tx.PutRelease(release("acme.x", "1.0.0")) },
		"PutKey":     func(tx *store.Tx) error { return tx.PutKey(key("acme", "k")) },
		"AppendAudit": func(tx *store.Tx) error {
			_, err := tx.AppendAudit(&store.AuditEntry{Op: "x"})
			return err
		},
		"PublishRevision": func(tx *store.Tx) error {
			_, err := tx.PublishRevision(candidate(0, "x", []*store.Release{release("acme.x", "1.0.0")}))
			return err
		},
	}
	for name, fn := range writes {
		if err := s.View(fn); err == nil {
			t.Errorf("%s in a read-only transaction succeeded", name)
		}
	}
}

func TestKeys(t *testing.T) {
	s := storetest.Open(t)
	acme := []*store.Key{key("acme", "a1"), key("acme", "a2"), key("acme", "a3")}
	labs := []*store.Key{key("acme-labs", "l1")}
	zed := []*store.Key{key("zed", "z1"), key("zed", "z2")}
	mustUpdate(t, s, func(tx *store.Tx) error {
		for _, ks := range [][]*store.Key{zed, labs, acme} {
			for _, k := range ks {
				if err := tx.PutKey(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	sortedByID := func(ks []*store.Key) []string {
		var ids []string
		for _, k := range ks {
			ids = append(ids, k.Publisher+"/"+k.ID)
		}
		return ids
	}
	all := append(append(append([]*store.Key{}, acme...), labs...), zed...)
	tests := []struct {
		publisher string
		want      []*store.Key
	}{
		{"acme", acme},
		{"acme-labs", labs},
		{"zed", zed},
		{"acm", nil},
		{"nobody", nil},
		{"", all},
	}
	for _, tt := range tests {
		_ = s.View(func(tx *store.Tx) error {
			got, err := tx.Keys(tt.publisher)
			if err != nil {
				t.Fatal(err)
			}
			want := slicesSortedKeys(tt.want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Keys(%q)\n got %v\nwant %v", tt.publisher, sortedByID(got), sortedByID(want))
			}
			return nil
		})
	}

	// Delete one, then a publisher's rest; other publishers stay.
	mustUpdate(t, s, func(tx *store.Tx) error {
		if ok, err := tx.DeleteKey("acme", acme[0].ID); !ok || err != nil {
			t.Errorf("DeleteKey = %v, %v", ok, err)
		}
		if ok, err := tx.DeleteKey("acme", acme[0].ID); ok || err != nil {
			t.Errorf("DeleteKey again = %v, %v", ok, err)
		}
		n, err := tx.DeleteKeys("acme")
		if n != 2 || err != nil {
			t.Errorf("DeleteKeys(acme) = %d, %v; want 2", n, err)
		}
		if n, err := tx.DeleteKeys("nobody"); n != 0 || err != nil {
			t.Errorf("DeleteKeys(nobody) = %d, %v", n, err)
		}
		if _, err := tx.DeleteKeys(""); err == nil {
			t.Error(`DeleteKeys("") deleted everything`)
		}
		rest, _ := tx.Keys("")
		if len(rest) != 3 {
			t.Errorf("%d keys left, want 3", len(rest))
		}
		return nil
	})
}

// slicesSortedKeys returns ks sorted by publisher, then ID.
func slicesSortedKeys(ks []*store.Key) []*store.Key {
	out := slices.Clone(ks)
	slices.SortFunc(out, func(a, b *store.Key) int {
		return cmp.Or(strings.Compare(a.Publisher, b.Publisher), strings.Compare(a.ID, b.ID))
	})
	return out
}

func TestPutKeyRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(k *store.Key)
	}{
		{"no publisher", func(k *store.Key) { k.Publisher = "" }},
		{"NUL in publisher", func(k *store.Key) { k.Publisher = "a\x00b" }},
		{"bad id", func(k *store.Key) { k.ID = "key1" }},
		{"short key", func(k *store.Key) { k.Public = k.Public[:31] }},
		{"negative uid", func(k *store.Key) { k.AddedBy = -5 }},
	}
	s := storetest.Open(t)
	for _, tt := range tests {
		k := key("acme", "k")
		tt.change(k)
		if err := s.Update(func(tx *store.Tx) error { return tx.PutKey(k) }); err == nil {
			t.Errorf("%s: PutKey succeeded", tt.name)
		}
	}
}

func TestAudit(t *testing.T) {
	s := storetest.Open(t)
	ops := []string{"trust add acme", "install acme.deploy 1.0.0", "trust remove acme"}
	mustUpdate(t, s, func(tx *store.Tx) error {
		for i, op := range ops {
			e := &store.AuditEntry{UID: 1000, Op: op, Detail: "d"}
			if i == 0 {
				e.Time = t0
			}
			seq, err := tx.AppendAudit(e)
			if err != nil {
				return err
			}
			if seq != uint64(i+1) || e.Seq != seq || e.Time.IsZero() {
				t.Errorf("entry %d: seq %d, entry %+v", i, seq, e)
			}
		}
		return nil
	})
	tests := []struct {
		limit int
		want  []string
	}{
		{0, []string{ops[2], ops[1], ops[0]}},
		{-1, []string{ops[2], ops[1], ops[0]}},
		{1, []string{ops[2]}},
		{2, []string{ops[2], ops[1]}},
		{10, []string{ops[2], ops[1], ops[0]}},
	}
	for _, tt := range tests {
		_ = s.View(func(tx *store.Tx) error {
			es, err := tx.Audit(tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Op)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Audit(%d) = %v, want %v", tt.limit, got, tt.want)
			}
			if tt.limit == 0 {
				first := es[len(es)-1]
				if first.Seq != 1 || !first.Time.Equal(t0) || first.UID != 1000 || first.Detail != "d" {
					t.Errorf("first entry = %+v", first)
				}
			}
			return nil
		})
	}
	if err := s.Update(func(tx *store.Tx) error {
		_, err := tx.AppendAudit(&store.AuditEntry{})
		return err
	}); err == nil {
		t.Error("an audit entry without an op was appended")
	}
}

func TestBytesOutliveTheTransaction(t *testing.T) {
	s := storetest.Open(t)
	rel := release("acme.deploy", "1.0.0")
	mustUpdate(t, s, func(tx *store.Tx) error { return tx.PutRelease(rel) })
	var got *store.Release
	_ = s.View(func(tx *store.Tx) error {
		got, _ = tx.Release(rel.Digest)
		return nil
	})
	// Grow the file so bbolt remaps it.
	mustUpdate(t, s, func(tx *store.Tx) error {
		for i := range 2000 {
			r := release("acme.filler", "1.0."+strings.Repeat("9", i%50))
			r.Digest = digest(string(rune(i)))
			r.Descriptor = make([]byte, 1024)
			if err := tx.PutRelease(r); err != nil {
				return err
			}
		}
		return nil
	})
	if !reflect.DeepEqual(got, rel) {
		t.Errorf("release read earlier changed: %+v", got)
	}
}
