package admin_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// The test binary doubles as a helper process that installs a release, so
// tests can kill a real install at any moment.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RUKH_TEST_CRASH_INSTALL"); dir != "" {
		// Installs once and is killed (SIGKILL) right after the install
		// moved its verified copy into place, before it commits.
		admin.SetHookAfterRename(func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		_, err := admin.New(dir).Install(os.Getenv("RUKH_TEST_INSTALL_SRC"), os.Getenv("RUKH_TEST_INSTALL_PIN"), admin.InstallOptions{})
		fmt.Fprintln(os.Stderr, "not killed:", err)
		os.Exit(3)
	}
	if dir := os.Getenv("RUKH_TEST_INSTALL_HELPER"); dir != "" {
		a := admin.New(dir)
		for {
			if _, err := a.Install(os.Getenv("RUKH_TEST_INSTALL_SRC"), os.Getenv("RUKH_TEST_INSTALL_PIN"), admin.InstallOptions{}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			if _, _, err := a.Remove("acme.greet"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	os.Exit(m.Run())
}

func profileJSON(namespace string) []byte {
	return []byte(`{"endpointNamespace": "` + namespace + `", "cli": {"task": "owner"}, "mcp": {"expose": [], "task": "owner"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 1000, "maxConcurrent": 1, "enforcement": "host"}}}`)
}

// checkStore opens the store and runs the consistency checks of storetest.
func checkStore(t *testing.T, a *admin.Admin) {
	t.Helper()
	s, err := store.Open(a.StorePath(), store.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := storetest.Check(s); err != nil {
		t.Fatalf("inconsistent store: %v", err)
	}
}

// Concurrent owner changes serialize on the store: each ends as its own
// revision or as a clean error, never as a torn store.
func TestConcurrentApply(t *testing.T) {
	dir := testhome.TempDir(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := admin.New(dir)
			a.Store = store.Files{Path: a.StorePath(), Timeout: 10 * time.Second}
			_, _, errs[i] = a.ApplyProfile(profileJSON(fmt.Sprintf("ns-%d", i)))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var locked *store.LockedError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &locked):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	a := admin.New(dir)
	revs, audit, err := a.History()
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != ok || len(audit) != ok {
		t.Errorf("%d applies succeeded but there are %d revisions and %d audit entries", ok, len(revs), len(audit))
	}
	checkStore(t, a)
}

// A rejected candidate leaves the active revision byte for byte unchanged.
func TestRejectedChangeLeavesRevision(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	if _, _, err := a.ApplyProfile(profileJSON("one")); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(a.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(profileJSON("one")), `"expose": []`, `"expose": ["acme.nosuch/x"]`, 1)
	_, _, err = a.ApplyProfile([]byte(bad))
	var rej *admin.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "acme.nosuch/x") {
		t.Fatalf("ApplyProfile = %v, want a RejectedError naming the exposure", err)
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision.Number != 1 || st.Profile.EndpointNamespace != "one" {
		t.Errorf("active revision changed: %d %s", st.Revision.Number, st.Profile.EndpointNamespace)
	}
	revs, audit, _ := a.History()
	if len(revs) != 1 || len(audit) != 1 {
		t.Errorf("%d revisions, %d audit entries after a rejected change", len(revs), len(audit))
	}
	after, err := os.ReadFile(a.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the store file changed")
	}
	checkStore(t, a)
}

// kill -9 at any point of an install leaves a consistent store: no
// half-installed release is active and no revision is partial.
func TestKillDuringInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	dir := testhome.TempDir(t)
	src, err := filepath.Abs(filepath.Join("..", "..", "..", "examples", "greet"))
	if err != nil {
		t.Fatal(err)
	}
	pin := pinOf(t, src)
	for i := range 12 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "RUKH_TEST_INSTALL_HELPER="+dir, "RUKH_TEST_INSTALL_SRC="+src, "RUKH_TEST_INSTALL_PIN="+pin)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+i*15) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()

		a := admin.New(dir)
		checkStore(t, a)
		st, err := a.State()
		if err != nil {
			t.Fatalf("after kill %d: %v", i, err)
		}
		if st.Revision == nil {
			continue
		}
		for _, ap := range st.Revision.Packages {
			if _, err := os.Stat(filepath.Join(a.ReleasesDir(), strings.TrimPrefix(ap.Digest, "sha256:"), "rukh-extension.json")); err != nil {
				t.Fatalf("after kill %d: active release %s has no files: %v", i, ap.Digest, err)
			}
		}
	}
	// The next install cleans up what the killed ones left and succeeds.
	a := admin.New(dir)
	if _, err := a.Install(src, pin, admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(a.ReleasesDir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".staging-") {
			t.Errorf("staging directory %s left behind", e.Name())
		}
	}
	checkStore(t, a)
}

func pinOf(t *testing.T, dir string) string {
	t.Helper()
	m, err := trust.BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m.Digest()
}
