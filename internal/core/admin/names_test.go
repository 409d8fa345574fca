package admin_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/admin"
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
