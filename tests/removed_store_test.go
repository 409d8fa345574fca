package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStoreRemovedUnderDaemon removes the store file of a running rukhd,
// or puts a directory in its place, as `rm DATA/store.db` does. Before,
// the daemon went on committing to the unlinked file: a call exited 0, a
// profile apply said "revision 4 → 5", `daemon status` said nothing, and
// after `daemon stop` it was all gone and the next command started an
// empty store over the installed releases. Now no write is acknowledged:
// the call is refused before it runs and the apply fails, both exit 75
// naming the file, what happened and what to do; status says NOT
// WRITABLE; the daemon saved what it had open to store.db.recovered;
// after the stop, no command starts an empty store over the releases,
// and putting the saved copy back restores every acknowledged change.
func TestStoreRemovedUnderDaemon(t *testing.T) {
	tm := damagedStoreTemplate(t)
	rukh, rukhd := hostBinaries(t)
	prof := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(prof, []byte(`{"endpointNamespace": "after", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "owner"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 10000, "maxConcurrent": 4, "enforcement": "host"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, what string
		replace    func(db string) error
	}{
		{"removed", "was removed", os.Remove},
		{"replaced by a directory", "was replaced by a directory", func(db string) error {
			if err := os.Remove(db); err != nil {
				return err
			}
			return os.Mkdir(db, 0o700)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, releases := tm.fullCopyHome(t)
			db := filepath.Join(home, "data", "store.db")
			count := func() int {
				t.Helper()
				r := tm.run(t, home, "invocations", "list", "--json", "-n", "0")
				var invs []json.RawMessage
				if r.status != 0 || json.Unmarshal([]byte(r.stdout), &invs) != nil {
					t.Fatalf("invocations list: exit %d, %q %q", r.status, r.stdout, r.stderr)
				}
				return len(invs)
			}
			before := count()
			doctorBefore := tm.run(t, home, "doctor")
			t.Run("under rukhd", func(t *testing.T) {
				h := &testHost{Mode: "daemon", Daemon: true, Rukh: rukh, Rukhd: rukhd}
				h.serve(t, home)
				if r := tm.run(t, home, "legacy", "run", "before"); r.status != 0 {
					t.Fatalf("a call before the removal: exit %d, %q", r.status, r.stderr)
				}
				if err := tc.replace(db); err != nil {
					t.Fatal(err)
				}
				said := "the store file at " + db + " " + tc.what + " while rukhd had it open"
				for _, args := range [][]string{
					{"legacy", "run", "after", "removal"},
					{"profile", "apply", "-f", prof},
					{"legacy", "run", "again"},
				} {
					r := tm.run(t, home, args...)
					if r.status != 75 || !strings.Contains(r.stderr, said) || !strings.Contains(r.stderr, "daemon stop") || strings.Contains(r.stdout, "revision") {
						t.Errorf("rukh %s with the store %s: exit %d, stdout %q, stderr %q; want 75 saying %q",
							strings.Join(args, " "), tc.what, r.status, r.stdout, r.stderr, said)
					}
				}
				if r := tm.run(t, home, "daemon", "status"); !strings.Contains(r.stdout, "store:       NOT WRITABLE since ") || !strings.Contains(r.stdout, said) {
					t.Errorf("daemon status: exit %d, %q %q", r.status, r.stdout, r.stderr)
				}
			})
			// rukhd is stopped (serve's cleanup). Nothing starts an empty
			// store over the releases.
			for _, args := range [][]string{{"ext", "list"}, {"legacy", "run", "after", "stop"}, {"profile", "apply", "-f", prof}} {
				r := tm.run(t, home, args...)
				if r.status != 75 || strings.Contains(r.stdout, "no releases installed") {
					t.Errorf("rukh %s after the stop: exit %d, stdout %q, stderr %q; want 75", strings.Join(args, " "), r.status, r.stdout, r.stderr)
				}
				if tc.what == "was removed" && !strings.Contains(r.stderr, "there is no store at "+db+", but ") {
					t.Errorf("rukh %s after the stop does not say the store is missing: %q", strings.Join(args, " "), r.stderr)
				}
			}
			if fi, err := os.Stat(db); tc.what == "was removed" && err == nil || tc.what != "was removed" && (err != nil || !fi.IsDir()) {
				t.Fatalf("what is at %s was changed: %v %v", db, fi, err)
			}
			if got := releaseNames(t, home); !slices.Equal(got, releases) {
				t.Fatalf("the releases are %v, were %v", got, releases)
			}
			// The copy the daemon saved holds everything acknowledged.
			if err := os.RemoveAll(db); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(db+".recovered", db); err != nil {
				t.Fatalf("rukhd saved no copy: %v", err)
			}
			// The call made before the removal is there, and nothing
			// refused after it.
			if got := count(); got != before+1 {
				t.Errorf("the saved copy holds %d invocations, want %d (the %d before and the one call acknowledged)", got, before+1, before)
			}
			if r := tm.run(t, home, "doctor"); r.status != 0 || revisionLine(r.stdout) != revisionLine(doctorBefore.stdout) {
				t.Errorf("doctor on the saved copy: exit %d, %q; want the revision of before, %q", r.status, r.stdout, revisionLine(doctorBefore.stdout))
			}
			if r := tm.run(t, home, "ext", "list"); r.status != 0 || strings.Contains(r.stdout, "no releases installed") {
				t.Errorf("ext list on the saved copy: exit %d, %q %q", r.status, r.stdout, r.stderr)
			}
		})
	}
}

// revisionLine is doctor's "consistent, revision N" line, without the path.
func revisionLine(doctor string) string {
	_, rest, _ := strings.Cut(doctor, ": consistent, revision ")
	rev, _, _ := strings.Cut(rest, "\n")
	return rev
}
