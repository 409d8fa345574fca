package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// The damage kinds of a store file that the fault campaign found turned
// into a new, empty store (and so a sweep of every installed release) or
// into a wedged daemon: each must be the damaged-store refusal instead.
var wholeFileDamage = []struct {
	name   string
	damage func(b []byte) []byte
}{
	{"empty", func([]byte) []byte { return nil }},
	{"100 bytes", func(b []byte) []byte { return b[:100] }},
	{"4096 bytes", func(b []byte) []byte { return b[:4096] }},
	{"both meta pages zeroed", func(b []byte) []byte {
		b = bytes.Clone(b)
		clear(b[:2*os.Getpagesize()])
		return b
	}},
}

// fullCopyHome copies the damage template's home, releases included (an
// owner change on it may sweep), and returns it with the names of its
// release directories.
func (tm *damageTemplate) fullCopyHome(t *testing.T) (string, []string) {
	t.Helper()
	home := testhome.TempDir(t)
	if out, err := exec.Command("cp", "-a", filepath.Join(tm.home, "data"), home).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return home, releaseNames(t, home)
}

func releaseNames(t *testing.T, home string) []string {
	t.Helper()
	return testhome.DirNames(t, filepath.Join(home, "data", "releases"))
}

// TestEmptiedStoreKeepsReleases: with store.db emptied, truncated or its
// meta pages zeroed, no owner change starts a new store: a refused apply,
// a valid apply and a trust add all exit 75 with the recovery, the file is
// left as it was, and every installed release is still there; doctor says
// DAMAGED. Before, the empty file was initialized as a new store at
// revision 0 and the orphan sweep deleted every release (2 → 0).
func TestEmptiedStoreKeepsReleases(t *testing.T) {
	tm := damagedStoreTemplate(t)
	keyDir := t.TempDir()
	key := filepath.Join(keyDir, "other.key")
	gen := exec.Command(tm.rukh, "trust", "keygen", key)
	gen.Env = append(os.Environ(), "RUKH_HOME="+filepath.Join(keyDir, "home"))
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("trust keygen: %v: %s", err, out)
	}
	prof := filepath.Join(keyDir, "profile.json")
	if err := os.WriteFile(prof, []byte(`{"endpointNamespace": "after", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "owner"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(keyDir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dk := range wholeFileDamage {
		t.Run(dk.name, func(t *testing.T) {
			t.Parallel()
			home, releases := tm.fullCopyHome(t)
			if len(releases) != 3 {
				t.Fatalf("the template has releases %v, want 3", releases)
			}
			db := filepath.Join(home, "data", "store.db")
			raw, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			damaged := dk.damage(raw)
			if err := os.WriteFile(db, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"profile", "apply", "-f", bad},
				{"profile", "apply", "-f", prof},
				{"trust", "add", "other", key + ".pub"},
				{"ext", "list"},
				{"doctor"},
			} {
				r := tm.run(t, home, args...)
				if args[len(args)-1] == bad {
					// Refused before it reaches the store.
					if r.status != 1 || !strings.Contains(r.stderr, "invalid profile") {
						t.Errorf("an invalid profile: exit %d, %q", r.status, r.stderr)
					}
				} else {
					requireDamaged(t, home, r)
				}
				if got := releaseNames(t, home); !slices.Equal(got, releases) {
					t.Fatalf("after rukh %s the releases are %v, were %v", strings.Join(args, " "), got, releases)
				}
				if got, _ := os.ReadFile(db); !bytes.Equal(got, damaged) {
					t.Fatalf("rukh %s changed the damaged store (%d bytes, was %d)", strings.Join(args, " "), len(got), len(damaged))
				}
			}
		})
	}
}

// TestDamagedUnderDaemon damages the store of a running rukhd in place.
// The read that meets the damage panics inside bbolt's Begin, which held
// bbolt's locks; before, every later call, `daemon status`, `daemon stop`
// and `rukh mcp` hung for good. Now: every call through the daemon is the
// damaged-store refusal (75), status answers and says the store is
// unreadable, `rukh mcp` answers initialize and gives each request the
// error, and `daemon stop` stops it (serve's cleanup requires the stop).
func TestDamagedUnderDaemon(t *testing.T) {
	tm := damagedStoreTemplate(t)
	rukh, rukhd := hostBinaries(t)
	for _, dk := range wholeFileDamage {
		t.Run(dk.name, func(t *testing.T) {
			home, _ := tm.fullCopyHome(t)
			h := &testHost{Mode: "daemon", Daemon: true, Rukh: rukh, Rukhd: rukhd}
			h.serve(t, home)
			db := filepath.Join(home, "data", "store.db")
			raw, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			// In place, as `truncate` does: the daemon's map of the file
			// now faults, or reads zeroes.
			f, err := os.OpenFile(db, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			damaged := dk.damage(raw)
			_, werr := f.WriteAt(damaged, 0)
			terr := f.Truncate(int64(len(damaged)))
			if err := f.Close(); werr != nil || terr != nil || err != nil {
				t.Fatal(werr, terr, err)
			}
			for range 2 {
				r := tm.run(t, home, "ext", "list")
				if r.status != 75 || !strings.Contains(r.stderr, "the store at "+db+" is damaged: ") {
					t.Fatalf("ext list through the daemon: exit %d, %q", r.status, r.stderr)
				}
			}
			if r := tm.run(t, home, "daemon", "status"); r.status != 0 || !strings.Contains(r.stdout, "store:       UNREADABLE: ") || !strings.Contains(r.stdout, "is damaged") {
				t.Errorf("daemon status: exit %d, %q %q", r.status, r.stdout, r.stderr)
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.Command(rukh, "mcp")
			cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("rukh mcp on a damaged store does not answer initialize: %v", err)
			}
			defer cs.Close()
			_, err = cs.ListTools(ctx, nil)
			if err == nil || !strings.Contains(err.Error(), "is damaged") {
				t.Errorf("tools/list on a damaged store: %v", err)
			}
			_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "x", Arguments: json.RawMessage(`{}`)})
			if err == nil || !strings.Contains(err.Error(), "is damaged") {
				t.Errorf("tools/call on a damaged store: %v", err)
			}
		})
	}
}
