package admin_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/source"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// rtAttack is a copy of the greet example as package rt.attack of
// publisher at version.
func rtAttack(t *testing.T, publisher, version string) string {
	t.Helper()
	dir := copyExample(t, "greet")
	desc := filepath.Join(dir, "rukh-extension.json")
	data, err := os.ReadFile(desc)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(`"package": "acme.greet"`, `"package": "rt.attack"`,
		`"publisher": "acme"`, `"publisher": "`+publisher+`"`,
		`"version": "0.1.0"`, `"version": "`+version+`"`).Replace(string(data))
	if err := os.WriteFile(desc, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The attack of issue 25: publisher A's rt.attack is installed and the
// profile's agent task may run rt.attack/* (and rt.*/*); the owner
// removes every release of it. Publisher B's rt.attack must not then
// install unasked and inherit those rules: it is refused, naming the
// held name and --new-publisher, with nothing changed, and `ext list`'s
// state still shows the name held for A. Only after the owner releases
// the name (ForgetPublisher: one audited change) does B's install go
// through, and it says which of the profile's rules it inherits.
func TestNameHeldAfterEveryReleaseIsRemoved(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	relA := rtAttack(t, "pub-a", "1.0.0")
	if _, err := a.Install(relA, pinOf(t, relA), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace": "team", "cli": {"task": "owner"},
	  "mcp": {"expose": [], "task": "agent"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"},
	            "agent": {"commands": ["rt.attack/*", "other.*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"},
	            "ops": {"commands": ["rt.*/hello"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"}}}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Remove("rt.attack"); err != nil {
		t.Fatal(err)
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Releases) != 0 || len(st.Names) != 1 || st.Names[0].Package != "rt.attack" || st.Names[0].Publisher != "pub-a" {
		t.Fatalf("after removing every release: releases %v, names %+v; want rt.attack held for pub-a", st.Releases, st.Names)
	}

	relB := rtAttack(t, "pub-b", "6.6.6")
	revs, audit, _ := a.History()
	before := releaseDirs(t, a)
	_, err = a.Install(relB, pinOf(t, relB), admin.InstallOptions{})
	var pe *admin.PublisherChangeError
	if !errors.As(err, &pe) || pe.Owner != "pub-a" || pe.Publisher != "pub-b" || pe.Version != "" ||
		!strings.Contains(err.Error(), "--new-publisher pub-b") || !strings.Contains(err.Error(), "ext remove rt.attack --forget-publisher") {
		t.Fatalf("pub-b's rt.attack after every release of pub-a's was removed: %v; want refused, naming the held name and --new-publisher", err)
	}
	revs2, audit2, _ := a.History()
	if len(revs2) != len(revs) || len(audit2) != len(audit) || !slices.Equal(releaseDirs(t, a), before) {
		t.Errorf("a refused install changed something: %d→%d revisions, %d→%d audit entries", len(revs), len(revs2), len(audit), len(audit2))
	}

	// The owner releases the name: one audited change (the newest entry
	// comes first), the revision as
	// it was (nothing active changes).
	fr, err := a.ForgetPublisher("rt.attack")
	if err != nil {
		t.Fatal(err)
	}
	if fr.Removed != nil || fr.Name.Publisher != "pub-a" || fr.Changed {
		t.Errorf("forget: %+v (name %+v)", fr, fr.Name)
	}
	revs3, audit3, _ := a.History()
	if len(revs3) != len(revs) || len(audit3) != len(audit)+1 || audit3[0].Op != "remove rt.attack --forget-publisher" {
		t.Errorf("forget wrote %d revisions and %d audit entries (last %+v); want none and one", len(revs3)-len(revs), len(audit3)-len(audit), audit3[0])
	}
	if _, err := a.ForgetPublisher("rt.attack"); err == nil || !strings.Contains(err.Error(), "no publisher holds its name") {
		t.Errorf("forget again: %v", err)
	}

	res, err := a.Install(relB, pinOf(t, relB), admin.InstallOptions{})
	if err != nil {
		t.Fatalf("pub-b's rt.attack once the name is released: %v", err)
	}
	want := []string{"tasks.agent.commands rt.attack/*", "tasks.ops.commands rt.*/hello"}
	if !res.Bound || res.PreviousPublisher != "" || !slices.Equal(res.Inherits, want) {
		t.Errorf("install: bound %v from %q, inherits %q; want bound, inheriting %q", res.Bound, res.PreviousPublisher, res.Inherits, want)
	}
	// pub-b holds it now: pub-a's own release needs the owner's word.
	if _, err := a.Install(relA, pinOf(t, relA), admin.InstallOptions{}); !errors.As(err, &pe) || pe.Owner != "pub-b" || pe.Version != "6.6.6" {
		t.Errorf("pub-a's rt.attack now: %v", err)
	}
	res, err = a.Install(relA, pinOf(t, relA), admin.InstallOptions{NewPublisher: "pub-a"})
	if err != nil || !res.Bound || res.PreviousPublisher != "pub-b" || !slices.Equal(res.Inherits, want) {
		t.Errorf("pub-a's with --new-publisher: %+v, %v", res, err)
	}
	// Two releases installed: releasing the name is refused.
	if _, err := a.ForgetPublisher("rt.attack"); err == nil || !strings.Contains(err.Error(), "has 2 releases installed") {
		t.Errorf("forget with two releases installed: %v", err)
	}
	// One: it goes with the name, deactivated, in one revision.
	if _, _, err := a.Remove("rt.attack@6.6.6"); err != nil {
		t.Fatal(err)
	}
	fr, err = a.ForgetPublisher("rt.attack")
	if err != nil || fr.Removed == nil || fr.Removed.Version != "1.0.0" || !fr.Changed {
		t.Fatalf("forget with the active release: %+v, %v", fr, err)
	}
	if st, err := a.State(); err != nil || len(st.Releases) != 0 || len(st.Names) != 0 || len(st.Revision.Packages) != 0 {
		t.Errorf("after forgetting: %+v, %v", st, err)
	}
	checkStore(t, a)
}

// TestCheckActiveSeesTheThenActiveRelease: an upgrade's "newer than the
// active release" is decided inside the change's transaction. Between
// the verification of 1.5.0 (its Check) and its activation, 2.0.0 is
// activated: CheckActive is given 2.0.0, the upgrade is refused, 2.0.0
// stays active and 1.5.0 is not installed.
func TestCheckActiveSeesTheThenActiveRelease(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	v1, v15, v2 := rtAttack(t, "pub-a", "1.0.0"), rtAttack(t, "pub-a", "1.5.0"), rtAttack(t, "pub-a", "2.0.0")
	if _, err := a.Install(v1, pinOf(t, v1), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	_, err := a.Install(v15, pinOf(t, v15), admin.InstallOptions{
		Check: func(d *descriptor.Descriptor) error {
			// Another owner command activates a newer release meanwhile.
			_, err := a.Install(v2, pinOf(t, v2), admin.InstallOptions{})
			return err
		},
		CheckActive: func(d *descriptor.Descriptor, active *store.ActivePackage) error {
			if active == nil {
				return errors.New("not active")
			}
			seen = append(seen, active.Version)
			if !source.Newer(d.Version, active.Version) {
				return fmt.Errorf("%s %s is not newer than the active %s", d.Package, d.Version, active.Version)
			}
			return nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), "rt.attack 1.5.0 is not newer than the active 2.0.0") {
		t.Fatalf("upgrade to 1.5.0 over a 2.0.0 activated meanwhile: %v", err)
	}
	if !slices.Equal(seen, []string{"2.0.0"}) {
		t.Errorf("CheckActive saw the active versions %v, want [2.0.0]", seen)
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Revision.Packages) != 1 || st.Revision.Packages[0].Version != "2.0.0" {
		t.Errorf("active after the refused upgrade: %+v", st.Revision.Packages)
	}
	for _, r := range st.Releases {
		if r.Version == "1.5.0" {
			t.Errorf("the refused 1.5.0 is installed: %+v", r)
		}
	}
}
