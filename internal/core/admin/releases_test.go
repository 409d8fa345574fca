package admin_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
)

const zeroPin = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// copyExample copies examples/NAME into a fresh directory.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "examples", name)
	dst := filepath.Join(testhome.TempDir(t), name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// archiveOf packs the files of dir into a gzip-compressed tar the way an
// old pack would have, without any check.
func archiveOf(t *testing.T, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Size: int64(len(data)), Mode: int64(fi.Mode().Perm())}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(testhome.TempDir(t), "release.tar.gz")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// requireNothingInstalled checks that a refused install left no release
// directory, staging directory or revision behind.
func requireNothingInstalled(t *testing.T, a *admin.Admin) {
	t.Helper()
	entries, _ := os.ReadDir(a.ReleasesDir())
	for _, e := range entries {
		t.Errorf("%s left in the releases directory", e.Name())
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != nil {
		t.Errorf("a refused install published revision %d", st.Revision.Number)
	}
}

func requireCode(t *testing.T, err error, code trust.Code, message string) {
	t.Helper()
	var te *trust.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("err = %v, want a %s refusal", err, code)
	}
	if message != "" && err.Error() != message {
		t.Fatalf("err = %q, want %q", err, message)
	}
}

// TestInstallRefusesCaseDuplicates installs a release that has bin/greet
// and bin/Greet, from a directory and from an archive: both are refused
// with duplicate_entry before anything is installed.
func TestInstallRefusesCaseDuplicates(t *testing.T) {
	dir := copyExample(t, "greet")
	if err := os.WriteFile(filepath.Join(dir, "bin", "Greet"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := `duplicate_entry: "bin/greet": "bin/Greet" and "bin/greet" differ only in letter case, which a case-insensitive file system cannot tell apart; rename one`
	for _, src := range []struct{ name, path string }{{"directory", dir}, {"archive", archiveOf(t, dir)}} {
		t.Run(src.name, func(t *testing.T) {
			a := admin.New(testhome.TempDir(t))
			_, err := a.Install(src.path, zeroPin, admin.InstallOptions{})
			requireCode(t, err, trust.CodeDuplicateEntry, want)
			requireNothingInstalled(t, a)
		})
	}
}

// installWithin runs a.Install and fails the test if it has not returned
// after 10 s (an open that waits for a FIFO's writer never returns).
func installWithin(t *testing.T, a *admin.Admin, src, pin string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := a.Install(src, pin, admin.InstallOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("install of %s hangs", src)
		return nil
	}
}

// TestInstallRefusesFIFO installs a release directory that holds a named
// pipe, and a named pipe given as the release itself: both are refused
// at once with a message that names the pipe, and nothing is installed.
func TestInstallRefusesFIFO(t *testing.T) {
	dir := copyExample(t, "greet")
	if err := syscall.Mkfifo(filepath.Join(dir, "bin", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := admin.New(testhome.TempDir(t))
	err := installWithin(t, a, dir, zeroPin)
	requireCode(t, err, trust.CodeSpecialFile, `special_file: "bin/pipe": a named pipe, not a regular file; a release holds regular files and directories only, so remove it`)
	requireNothingInstalled(t, a)

	fifo := filepath.Join(testhome.TempDir(t), "release.tar.gz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	err = installWithin(t, a, fifo, zeroPin)
	if want := fifo + " is neither a release archive nor a directory (a named pipe)"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	requireNothingInstalled(t, a)
}

// crashInstall runs an install of src in a helper process that is killed
// (SIGKILL) right after it moved its copy to releases/<sha>, before its
// transaction commits, and returns that directory: an orphan.
func crashInstall(t *testing.T, dataDir, src string) string {
	t.Helper()
	pin := pinOf(t, src)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RUKH_TEST_CRASH_INSTALL="+dataDir, "RUKH_TEST_INSTALL_SRC="+src, "RUKH_TEST_INSTALL_PIN="+pin)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the install was not killed at the crash point: %v\n%s", err, out)
	}
	orphan := filepath.Join(dataDir, "releases", strings.TrimPrefix(pin, "sha256:"))
	if _, err := os.Stat(filepath.Join(orphan, "rukh-extension.json")); err != nil {
		t.Fatalf("the killed install left no release directory: %v", err)
	}
	a := admin.New(dataDir)
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Releases {
		if r.Digest == pin {
			t.Fatalf("the killed install committed release %s", pin)
		}
	}
	return orphan
}

// releaseDirs lists the entries of the releases directory.
func releaseDirs(t *testing.T, a *admin.Admin) []string {
	t.Helper()
	return testhome.DirNames(t, a.ReleasesDir())
}

// TestOrphanSwept kills installs right after their rename, leaving
// releases/<sha> without a record, and checks that the next owner change
// of any kind — an install of another release, a profile apply, a remove —
// removes the orphan under the store's lock, while release directories
// that records name, and entries that are not release directories, stay.
func TestOrphanSwept(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	dataDir := testhome.TempDir(t)
	a := admin.New(dataDir)
	greet := copyExample(t, "greet")
	deploy := copyExample(t, "deploy")
	deployDir := filepath.Join(a.ReleasesDir(), strings.TrimPrefix(pinOf(t, deploy), "sha256:"))
	// Not release directories: never touched.
	for _, keep := range []string{"notes", strings.Repeat("A", 64)} {
		if err := os.MkdirAll(filepath.Join(a.ReleasesDir(), keep), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	keepFile := filepath.Join(a.ReleasesDir(), strings.Repeat("b", 64))
	if err := os.WriteFile(keepFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	kept := []string{strings.Repeat("A", 64), strings.Repeat("b", 64), "notes"}
	// A store sweeps only once it has published a revision
	// (TestSweepSparesNewStore).
	if _, _, err := a.ApplyProfile(profileJSON("first")); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name   string
		change func() error
		want   []string // besides kept
	}{
		{"install of another release", func() error { _, err := a.Install(deploy, pinOf(t, deploy), admin.InstallOptions{}); return err },
			[]string{filepath.Base(deployDir)}},
		{"profile apply", func() error { _, _, err := a.ApplyProfile(profileJSON("swept")); return err },
			[]string{filepath.Base(deployDir)}},
		{"remove", func() error { _, _, err := a.Remove("acme.deploy"); return err }, nil},
	}
	for _, step := range steps {
		orphan := crashInstall(t, dataDir, greet)
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after %s the orphan %s is still there (%v)", step.name, filepath.Base(orphan), err)
		}
		want := append(append([]string(nil), kept...), step.want...)
		sort.Strings(want)
		if got := releaseDirs(t, a); !slices.Equal(got, want) {
			t.Fatalf("after %s the releases directory holds %v, want %v", step.name, got, want)
		}
		checkStore(t, a)
	}
	// A change that is refused sweeps too: the store stays as it was.
	orphan := crashInstall(t, dataDir, greet)
	if _, err := a.Deactivate("acme.nosuch"); err == nil {
		t.Fatal("deactivating an unknown package succeeded")
	}
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a refused change the orphan is still there (%v)", err)
	}
	// And the release whose install was killed installs cleanly.
	if _, err := a.Install(greet, pinOf(t, greet), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	checkStore(t, a)
}

// TestSweepSparesDamagedStore: when the release records do not all read,
// an owner change removes no release directory, not even an orphan —
// they may be what the owner recovers from.
func TestSweepSparesDamagedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	dataDir := testhome.TempDir(t)
	a := admin.New(dataDir)
	deploy := copyExample(t, "deploy")
	if _, err := a.Install(deploy, pinOf(t, deploy), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := crashInstall(t, dataDir, copyExample(t, "greet"))
	// A second release record that does not decode.
	db, err := bolt.Open(a.StorePath(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("releases")).Put([]byte("sha256:"+strings.Repeat("0", 64)), []byte("not a record"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The change itself reads no inactive release: it is published.
	if _, _, err := a.ApplyProfile(profileJSON("spared")); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Base(orphan), strings.TrimPrefix(pinOf(t, deploy), "sha256:")}
	sort.Strings(want)
	if got := releaseDirs(t, a); !slices.Equal(got, want) {
		t.Fatalf("the releases directory holds %v, want %v", got, want)
	}
}

// TestSweepSparesNewStore: a store that has published no revision knows
// nothing of the releases on disk — store.db was lost or removed, and a
// new one was made — so an owner change removes none of them (the owner
// reinstalls or restores; the files are what a restore needs).
func TestSweepSparesNewStore(t *testing.T) {
	dataDir := testhome.TempDir(t)
	a := admin.New(dataDir)
	for _, name := range []string{"deploy", "greet"} {
		dir := copyExample(t, name)
		if _, err := a.Install(dir, pinOf(t, dir), admin.InstallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := releaseDirs(t, a)
	if len(before) != 2 {
		t.Fatalf("installed: %v", before)
	}
	if err := os.Remove(a.StorePath()); err != nil {
		t.Fatal(err)
	}
	// No change starts a new store over the releases unless the owner
	// asks (store.MissingError; `doctor --new-store`).
	var missing *store.MissingError
	if _, _, err := a.ApplyProfile(profileJSON("after")); !errors.As(err, &missing) {
		t.Fatalf("a change with store.db removed: %v, want *store.MissingError", err)
	}
	s, err := store.Open(a.StorePath(), store.Options{Recreate: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, _, err := a.ApplyProfile(profileJSON("after")); err != nil {
		t.Fatal(err)
	}
	if got := releaseDirs(t, a); !slices.Equal(got, before) {
		t.Fatalf("after a change on a new store the releases directory holds %v, want %v", got, before)
	}
}

// A package name belongs to the publisher whose release of it was
// installed first: another trusted publisher's release of the same
// package is refused, naming both and the flag, unless the owner names
// the new publisher; nothing changes when it is refused.
func TestPackageStaysWithItsPublisher(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	greet := copyExample(t, "greet")
	if _, err := a.Install(greet, pinOf(t, greet), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	evil := copyExample(t, "greet")
	desc := filepath.Join(evil, "rukh-extension.json")
	data, err := os.ReadFile(desc)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(strings.Replace(string(data), `"publisher": "acme"`, `"publisher": "evil"`, 1), `"version": "0.1.0"`, `"version": "0.1.1"`, 1))
	if err := os.WriteFile(desc, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := releaseDirs(t, a)
	_, err = a.Install(evil, pinOf(t, evil), admin.InstallOptions{})
	var pe *admin.PublisherChangeError
	if !errors.As(err, &pe) || pe.Package != "acme.greet" || pe.Owner != "acme" || pe.Publisher != "evil" ||
		!strings.Contains(err.Error(), "--new-publisher evil") {
		t.Fatalf("another publisher's release of acme.greet: %v", err)
	}
	if got := releaseDirs(t, a); !slices.Equal(got, before) {
		t.Errorf("a refused install left %v, was %v", got, before)
	}
	if _, err := a.Install(evil, pinOf(t, evil), admin.InstallOptions{NewPublisher: "someone-else"}); !errors.As(err, &pe) {
		t.Errorf("--new-publisher naming another publisher: %v", err)
	}
	res, err := a.Install(evil, pinOf(t, evil), admin.InstallOptions{NewPublisher: "evil"})
	if err != nil || res.Release.Publisher != "evil" {
		t.Fatalf("with --new-publisher evil: %+v, %v", res, err)
	}
}

// A stored descriptor that no longer decodes (it did when it was
// installed) is damage to the store — *store.CorruptError, exit 75 — not
// a refused change of the owner's.
func TestDamagedStoredDescriptor(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	greet := copyExample(t, "greet")
	res, err := a.Install(greet, pinOf(t, greet), admin.InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(a.StorePath(), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx *store.Tx) error {
		r := *res.Release
		r.Descriptor = []byte(`{"schema": "rukh.extension/2", "package": `)
		return tx.PutRelease(&r)
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = a.ApplyProfile(profileJSON("after"))
	var ce *store.CorruptError
	var re *admin.RejectedError
	if !errors.As(err, &ce) || errors.As(err, &re) {
		t.Fatalf("apply over a damaged stored descriptor: %T %v; want *store.CorruptError", err, err)
	}
}

// A release installed pinned and then from its signed archive (the same
// files) is now trusted by its publisher's key: its record says who
// signed it, and the install says so instead of "already installed".
func TestPinnedThenSigned(t *testing.T) {
	dir := testhome.TempDir(t)
	a := admin.New(filepath.Join(dir, "data"))
	greet := copyExample(t, "greet")
	if _, err := a.Install(greet, pinOf(t, greet), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	k, err := trust.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(dir, "acme.pub")
	if err := trust.WritePublicKey(pub, k.Public()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.TrustAdd("acme", pub); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "greet.tar.gz")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Pack(greet, k, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := a.Install(archive, "", admin.InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.AlreadyInstalled || !res.NowSigned || res.Release.Pinned || res.Release.SignedBy != k.Public().ID() {
		t.Errorf("install of the signed archive: %+v (release %+v)", res, res.Release)
	}
	again, err := a.Install(archive, "", admin.InstallOptions{})
	if err != nil || again.NowSigned || !again.AlreadyInstalled {
		t.Errorf("a second install of it: %+v, %v", again, err)
	}
}

// A stopped install (Ctrl-C) changes nothing: stopped before it starts,
// and stopped once its copy is in place but before its commit (the
// transaction rolls back and the copy is removed).
func TestInstallStopped(t *testing.T) {
	dir := copyExample(t, "greet")
	m, err := trust.BuildManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	pin := m.Digest()
	t.Run("before", func(t *testing.T) {
		a := admin.New(testhome.TempDir(t))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := a.InstallContext(ctx, dir, pin, admin.InstallOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		requireNothingInstalled(t, a)
	})
	t.Run("before its commit", func(t *testing.T) {
		a := admin.New(testhome.TempDir(t))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		admin.SetHookAfterRename(cancel)
		defer admin.SetHookAfterRename(nil)
		if _, err := a.InstallContext(ctx, dir, pin, admin.InstallOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		requireNothingInstalled(t, a)
	})
}

// TestFetchDirSwept: an archive fetched from a source waits in a
// FetchDir, a staging directory of this process in the releases
// directory. One whose process was killed (a fetch's SIGKILL) is swept
// at the next install; this process's own live one is spared by it, and
// removed by its cleanup.
func TestFetchDirSwept(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	dir, done, err := a.FetchDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != a.ReleasesDir() {
		t.Fatalf("FetchDir %s is not in the releases directory %s", dir, a.ReleasesDir())
	}
	if err := os.WriteFile(filepath.Join(dir, ".fetch-1.tar.gz"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	// What a fetching process killed mid-download left: its pid is gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(a.ReleasesDir(), strings.Replace(filepath.Base(dir), strconv.Itoa(os.Getpid()), strconv.Itoa(gone.Process.Pid), 1))
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, ".fetch-2.tar.gz"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	greet := copyExample(t, "greet")
	if _, err := a.Install(greet, pinOf(t, greet), admin.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the fetch directory of a killed process is still there after an install (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".fetch-1.tar.gz")); err != nil {
		t.Errorf("an install removed a live fetch of this process: %v", err)
	}
	done()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the fetch directory is still there after its cleanup (%v)", err)
	}
}
