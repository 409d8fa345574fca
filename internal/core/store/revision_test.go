package store_test

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

func TestPublishAndReadRevisions(t *testing.T) {
	s := storetest.Open(t)
	deploy := release("acme.deploy", "1.0.0")
	greet := release("acme.greet", "2.0.0")

	_ = s.View(func(tx *store.Tx) error {
		if r, err := tx.ActiveRevision(); r != nil || err != nil {
			t.Errorf("ActiveRevision on an empty store = %v, %v", r, err)
		}
		if n, err := tx.ActiveNumber(); n != 0 || err != nil {
			t.Errorf("ActiveNumber on an empty store = %v, %v", n, err)
		}
		return nil
	})

	var cands []*store.Revision
	for i, rels := range [][]*store.Release{{deploy}, {deploy, greet}, {greet}} {
		mustUpdate(t, s, func(tx *store.Tx) error {
			for _, r := range rels {
				if err := tx.PutRelease(r); err != nil {
					return err
				}
			}
			routes := []string{"greet", "greet loud"}
			if rels[0] == deploy {
				routes = append(routes, "deploy status", "ds")
				if len(rels) == 1 {
					routes = routes[2:]
				}
			}
			c := candidate(uint64(i), []string{"install deploy", "install greet", "remove deploy"}[i], rels, routes...)
			n, err := tx.PublishRevision(c)
			if err != nil {
				return err
			}
			if n != uint64(i+1) || c.Number != n {
				t.Errorf("publish %d: number %d, candidate.Number %d", i, n, c.Number)
			}
			cands = append(cands, c)
			return nil
		})
	}

	err := s.View(func(tx *store.Tx) error {
		for _, c := range cands {
			got, err := tx.Revision(c.Number)
			if err != nil {
				return err
			}
			want := *c
			want.Routes = sortedRoutes(c.Routes)
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("Revision(%d)\n got %+v\nwant %+v", c.Number, got, &want)
			}
			routes, err := tx.Routes(c.Number)
			if err != nil || len(routes) != len(c.Routes) {
				t.Errorf("Routes(%d) = %d routes, %v", c.Number, len(routes), err)
			}
		}
		if r, err := tx.Revision(99); r != nil || err != nil {
			t.Errorf("Revision(99) = %v, %v", r, err)
		}
		if r, err := tx.Routes(99); r != nil || err != nil {
			t.Errorf("Routes(99) = %v, %v", r, err)
		}
		active, err := tx.ActiveRevision()
		if err != nil || active.Number != 3 || active.Parent != 2 {
			t.Errorf("ActiveRevision = %+v, %v", active, err)
		}

		all, err := tx.Revisions()
		if err != nil {
			return err
		}
		var nums []uint64
		for _, r := range all {
			nums = append(nums, r.Number)
			if r.Routes != nil {
				t.Errorf("Revisions() loaded the routes of %d", r.Number)
			}
		}
		if !reflect.DeepEqual(nums, []uint64{1, 2, 3}) {
			t.Errorf("Revisions() = %v", nums)
		}
		hist, err := tx.History(2)
		if err != nil || len(hist) != 2 || hist[0].Number != 3 || hist[1].Number != 2 {
			t.Errorf("History(2) = %v, %v", hist, err)
		}
		if hist, _ := tx.History(0); len(hist) != 3 {
			t.Errorf("History(0) has %d revisions", len(hist))
		}

		audit, err := tx.Audit(0)
		if err != nil {
			return err
		}
		if len(audit) != 3 {
			t.Fatalf("%d audit entries, want 3", len(audit))
		}
		for i, e := range audit {
			c := cands[len(cands)-1-i]
			if e.Op != c.Op || e.Old != c.Parent || e.New != c.Number || e.UID != c.By || !e.Time.Equal(c.Created) {
				t.Errorf("audit entry %+v does not match revision %d", e, c.Number)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sortedRoutes(rs []store.Route) []store.Route {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b store.Route) int { return strings.Compare(a.Words, b.Words) })
	return out
}

func TestPublishConflict(t *testing.T) {
	s := storetest.Open(t)
	rel := release("acme.deploy", "1.0.0")
	publish(t, s, "install", []*store.Release{rel}, "deploy status")
	publish(t, s, "again", []*store.Release{rel}, "deploy status")

	for _, parent := range []uint64{0, 1, 3, 99} {
		other := release("acme.other", "1.0.0")
		err := s.Update(func(tx *store.Tx) error {
			if err := tx.PutRelease(other); err != nil {
				return err
			}
			_, err := tx.PublishRevision(candidate(parent, "stale", []*store.Release{other}, "other run"))
			return err
		})
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Parent != parent || ce.Active != 2 {
			t.Fatalf("parent %d: err = %v, want *ConflictError{%d, 2}", parent, err, parent)
		}
		if !strings.Contains(err.Error(), "retry") {
			t.Errorf("message %q does not say what to do", err)
		}
		// Nothing was written: not the revision, not the release put in
		// the same transaction, not an audit entry.
		_ = s.View(func(tx *store.Tx) error {
			revs, _ := tx.Revisions()
			audit, _ := tx.Audit(0)
			r, _ := tx.Release(other.Digest)
			if len(revs) != 2 || len(audit) != 2 || r != nil {
				t.Errorf("after a conflict: %d revisions, %d audit entries, release %v", len(revs), len(audit), r)
			}
			return nil
		})
	}
}

func TestPublishRejects(t *testing.T) {
	deploy := release("acme.deploy", "1.0.0")
	greet := release("acme.greet", "1.0.0")
	stranger := release("acme.stranger", "1.0.0")
	tests := []struct {
		name   string
		change func(r *store.Revision)
		want   string
	}{
		{"bad hash", func(r *store.Revision) { r.Hash = "abc" }, "hash"},
		{"no op", func(r *store.Revision) { r.Op = "" }, "op is empty"},
		{"negative uid", func(r *store.Revision) { r.By = -1 }, "negative"},
		{"unsorted packages", func(r *store.Revision) { r.Packages[0], r.Packages[1] = r.Packages[1], r.Packages[0] }, "not sorted"},
		{"repeated package", func(r *store.Revision) { r.Packages[1].Package = r.Packages[0].Package }, "not sorted"},
		{"package digest", func(r *store.Revision) { r.Packages[0].Digest = "sha256:x" }, "digest"},
		{"unsorted keys", func(r *store.Revision) { r.Keys = []string{"b/k", "a/k"} }, "keys are not sorted"},
		{"repeated key", func(r *store.Revision) { r.Keys = []string{"a/k", "a/k"} }, "keys are not sorted"},
		{"empty route", func(r *store.Revision) { r.Routes[0].Words = "" }, "empty"},
		{"double space", func(r *store.Revision) { r.Routes[0].Words = "deploy  status" }, "single spaces"},
		{"flag word", func(r *store.Revision) { r.Routes[0].Words = "deploy --status" }, `starting with "-"`},
		{"tab", func(r *store.Revision) { r.Routes[0].Words = "deploy\tstatus" }, "control"},
		{"too deep", func(r *store.Revision) { r.Routes[0].Words = strings.Repeat("a ", store.MaxRouteWords) + "a" }, "words"},
		{"repeated route", func(r *store.Revision) { r.Routes[1].Words = r.Routes[0].Words }, "twice"},
		{"foreign digest", func(r *store.Revision) { r.Routes[0].Digest = stranger.Digest }, "not among"},
		{"no identity", func(r *store.Revision) { r.Routes[0].Identity = "" }, "identity is empty"},
		{"negative command", func(r *store.Revision) { r.Routes[0].Command = -1 }, "negative"},
	}
	s := storetest.Open(t)
	publish(t, s, "first", []*store.Release{deploy}, "deploy status")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := candidate(1, "second", []*store.Release{deploy, greet}, "deploy status", "greet")
			tt.change(c)
			err := s.Update(func(tx *store.Tx) error {
				if err := tx.PutRelease(greet); err != nil {
					return err
				}
				_, err := tx.PublishRevision(c)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			_ = s.View(func(tx *store.Tx) error {
				if n, _ := tx.ActiveNumber(); n != 1 {
					t.Errorf("active revision moved to %d", n)
				}
				return nil
			})
		})
	}
}

// resolveFixture publishes a revision with commands, an alias, a command
// that is also a group, and a group that is only a group.
func resolveFixture(t *testing.T) *store.Store {
	s := storetest.Open(t)
	deploy := release("acme.deploy", "1.0.0")
	greet := release("acme.greet", "1.0.0")
	c := candidate(0, "install", []*store.Release{deploy, greet},
		"deploy status", "deploy rollout start", "deploy rollout stop", "ds", "greet", "greet loud")
	c.Routes[3].Alias = true
	c.Routes[3].Identity = c.Routes[0].Identity
	mustUpdate(t, s, func(tx *store.Tx) error {
		for _, r := range []*store.Release{deploy, greet} {
			if err := tx.PutRelease(r); err != nil {
				return err
			}
		}
		_, err := tx.PublishRevision(c)
		return err
	})
	return s
}

func TestResolveRoute(t *testing.T) {
	s := resolveFixture(t)
	long := append([]string{"deploy", "status"}, strings.Fields(strings.Repeat("x ", 100))...)
	tests := []struct {
		args  []string
		words string // "" for no route
		n     int
		alias bool
	}{
		{[]string{"deploy", "status"}, "deploy status", 2, false},
		{[]string{"deploy", "status", "--env", "stage", "target"}, "deploy status", 2, false},
		{[]string{"deploy", "rollout", "start", "now"}, "deploy rollout start", 3, false},
		{[]string{"deploy", "rollout", "stop"}, "deploy rollout stop", 3, false},
		{[]string{"ds", "--env", "prod"}, "ds", 1, true},
		{[]string{"greet"}, "greet", 1, false},
		{[]string{"greet", "loud", "bob"}, "greet loud", 2, false},
		{[]string{"greet", "bob"}, "greet", 1, false},
		{[]string{"greet", "deploy", "status"}, "greet", 1, false},
		{long, "deploy status", 2, false},
		// Groups are not routes.
		{[]string{"deploy"}, "", 0, false},
		{[]string{"deploy", "rollout"}, "", 0, false},
		{[]string{"deploy", "rollout", "restart"}, "", 0, false},
		// Words that cannot be route words stop the scan.
		{[]string{"deploy status"}, "", 0, false},
		{[]string{"deploy", "--x", "status"}, "", 0, false},
		{[]string{"-h", "deploy", "status"}, "", 0, false},
		{[]string{"", "deploy"}, "", 0, false},
		{[]string{"greet", "", "loud"}, "greet", 1, false},
		{[]string{"greet\x00", "loud"}, "", 0, false},
		{[]string{strings.Repeat("g", 5000)}, "", 0, false},
		{[]string{"unknown"}, "", 0, false},
		{nil, "", 0, false},
	}
	err := s.View(func(tx *store.Tx) error {
		for _, tt := range tests {
			rt, n, err := tx.ResolveRoute(tt.args)
			if err != nil {
				return err
			}
			if tt.words == "" {
				if rt != nil || n != 0 {
					t.Errorf("ResolveRoute(%q) = %+v, %d; want no route", tt.args, rt, n)
				}
				continue
			}
			if rt == nil || rt.Words != tt.words || n != tt.n || rt.Alias != tt.alias {
				t.Errorf("ResolveRoute(%q) = %+v, %d; want %q, %d", tt.args, rt, n, tt.words, tt.n)
				continue
			}
			if !strings.HasPrefix(rt.Identity, "acme.") || rt.Digest == "" || rt.Summary == "" {
				t.Errorf("ResolveRoute(%q) returned an incomplete route %+v", tt.args, rt)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoutesWithPrefix(t *testing.T) {
	s := resolveFixture(t)
	tests := []struct {
		prefix []string
		want   []string
	}{
		{nil, []string{"deploy rollout start", "deploy rollout stop", "deploy status", "ds", "greet", "greet loud"}},
		{[]string{"deploy"}, []string{"deploy rollout start", "deploy rollout stop", "deploy status"}},
		{[]string{"deploy", "rollout"}, []string{"deploy rollout start", "deploy rollout stop"}},
		{[]string{"deploy", "status"}, []string{"deploy status"}},
		{[]string{"greet"}, []string{"greet", "greet loud"}},
		{[]string{"dep"}, nil},
		{[]string{"d"}, nil},
		{[]string{"nothing"}, nil},
		{[]string{"deploy rollout"}, nil},
		{[]string{"deploy", ""}, nil},
	}
	err := s.View(func(tx *store.Tx) error {
		for _, tt := range tests {
			rts, err := tx.RoutesWithPrefix(tt.prefix)
			if err != nil {
				return err
			}
			var got []string
			for _, rt := range rts {
				got = append(got, rt.Words)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RoutesWithPrefix(%q) = %q, want %q", tt.prefix, got, tt.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoutesFollowTheActiveRevision(t *testing.T) {
	s := storetest.Open(t)
	_ = s.View(func(tx *store.Tx) error {
		rt, n, err := tx.ResolveRoute([]string{"deploy", "status"})
		if rt != nil || n != 0 || err != nil {
			t.Errorf("ResolveRoute with no revision = %v, %d, %v", rt, n, err)
		}
		rts, err := tx.RoutesWithPrefix(nil)
		if rts != nil || err != nil {
			t.Errorf("RoutesWithPrefix with no revision = %v, %v", rts, err)
		}
		return nil
	})
	v1 := release("acme.deploy", "1.0.0")
	v2 := release("acme.deploy", "2.0.0")
	publish(t, s, "install 1", []*store.Release{v1}, "deploy status", "deploy old")
	publish(t, s, "install 2", []*store.Release{v2}, "deploy status", "deploy new")
	_ = s.View(func(tx *store.Tx) error {
		if rt, _, _ := tx.ResolveRoute([]string{"deploy", "old"}); rt != nil {
			t.Errorf("a route of revision 1 resolved after revision 2: %+v", rt)
		}
		if rt, _, _ := tx.ResolveRoute([]string{"deploy", "status"}); rt == nil || rt.Digest != v2.Digest {
			t.Errorf("deploy status resolved to %+v, want release 2", rt)
		}
		if old, _ := tx.Routes(1); len(old) != 2 || old[0].Words != "deploy old" {
			t.Errorf("Routes(1) = %+v", old)
		}
		return nil
	})
}

func TestConcurrentPublishGoroutines(t *testing.T) {
	s := storetest.Open(t)
	publish(t, s, "base", []*store.Release{release("acme.base", "1.0.0")}, "base run")

	// Both read revision 1 before either writes: one wins, one conflicts.
	var ready, read sync.WaitGroup
	ready.Add(2)
	read.Add(1)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			var parent uint64
			_ = s.View(func(tx *store.Tx) error {
				parent, _ = tx.ActiveNumber()
				return nil
			})
			ready.Done()
			read.Wait()
			rel := release("acme.g", "1.0."+string(rune('0'+i)))
			errs[i] = s.Update(func(tx *store.Tx) error {
				if err := tx.PutRelease(rel); err != nil {
					return err
				}
				_, err := tx.PublishRevision(candidate(parent, "goroutine", []*store.Release{rel}, "g run"))
				return err
			})
		})
	}
	ready.Wait()
	read.Done()
	wg.Wait()
	var ok, conflicts int
	for _, err := range errs {
		var ce *store.ConflictError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ce):
			conflicts++
		default:
			t.Fatal(err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Fatalf("%d published, %d conflicts; want 1 and 1", ok, conflicts)
	}
	if err := storetest.Check(s); err != nil {
		t.Fatal(err)
	}

	// Many writers that rebuild on conflict all get in, in order.
	const writers, each = 6, 8
	for i := range writers {
		wg.Go(func() {
			for j := 0; j < each; {
				var parent uint64
				_ = s.View(func(tx *store.Tx) error { parent, _ = tx.ActiveNumber(); return nil })
				rel := release("acme.w", strings.Repeat("1", i+1)+"."+strings.Repeat("2", j+1))
				err := s.Update(func(tx *store.Tx) error {
					if err := tx.PutRelease(rel); err != nil {
						return err
					}
					_, err := tx.PublishRevision(candidate(parent, "writer", []*store.Release{rel}, "w run"))
					return err
				})
				var ce *store.ConflictError
				switch {
				case err == nil:
					j++
				case errors.As(err, &ce):
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	_ = s.View(func(tx *store.Tx) error {
		if n, _ := tx.ActiveNumber(); n != 2+writers*each {
			t.Errorf("active revision %d, want %d", n, 2+writers*each)
		}
		return nil
	})
}

func TestConcurrentPublishProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path, s := openPath(t)
	s.Close()
	const procs, each = 3, 10
	var ps []*helperProc
	for range procs {
		ps = append(ps, startHelper(t, "publisher", path, false, envCount+"="+strconv.Itoa(each)))
	}
	for i, p := range ps {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("publisher %d: %v", i, err)
		}
	}
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := storetest.Check(s); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx *store.Tx) error {
		revs, _ := tx.Revisions()
		audit, _ := tx.Audit(0)
		if len(revs) != procs*each || len(audit) != procs*each {
			t.Errorf("%d revisions, %d audit entries; want %d", len(revs), len(audit), procs*each)
		}
		for i, r := range revs {
			if r.Parent != uint64(i) {
				t.Errorf("revision %d has parent %d; want a chain", r.Number, r.Parent)
			}
		}
		return nil
	})
}
