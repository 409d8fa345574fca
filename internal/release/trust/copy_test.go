package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// within runs fn and fails the test if it has not returned after 10 s:
// an open that waits for a FIFO's writer never returns.
func within[T any](t *testing.T, what string, fn func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs", what)
		panic("unreachable")
	}
}

// copyWithSwap copies a fresh fixture release, letting swap change the
// file at path after the release was hashed and before that file is
// copied, and returns the error of the copy.
func copyWithSwap(t *testing.T, target string, swap func(t *testing.T, name string)) error {
	t.Helper()
	src := newReleaseDir(t)
	dst := filepath.Join(t.TempDir(), "staging")
	must(t, os.Mkdir(dst, 0o700))
	hookBeforeCopy = func(p string) {
		if p == target {
			swap(t, filepath.Join(src, filepath.FromSlash(p)))
		}
	}
	t.Cleanup(func() { hookBeforeCopy = nil })
	_, err := within(t, "CopyRelease", func() (*Manifest, error) { return CopyRelease(src, dst) })
	return err
}

func requireRefusal(t *testing.T, err error, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestCopyReleaseFIFOSwapped replaces a release file with a named pipe
// between hashing and copying: the copy opens it without blocking, sees
// it is not the file that was hashed and stops with file_changed, at
// once. (A blocking open waits for a writer forever.)
func TestCopyReleaseFIFOSwapped(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system")
	}
	err := copyWithSwap(t, "share/readme.txt", func(t *testing.T, name string) {
		must(t, os.Remove(name))
		mkfifo(t, name)
	})
	requireRefusal(t, err, `file_changed: "share/readme.txt": file was replaced while the release was read (it is now a named pipe); try again`)
}

// TestCopyReleaseFileSwapped covers the other ways a hashed file can
// change before it is copied: each is file_changed, and nothing of the
// changed file is copied as if it were the release's.
func TestCopyReleaseFileSwapped(t *testing.T) {
	const target = "share/readme.txt"
	for _, tc := range []struct {
		name string
		swap func(t *testing.T, name string)
		want string
	}{
		{"symlink to the same content", func(t *testing.T, name string) {
			must(t, os.WriteFile(name+".real", []byte("read me\n"), 0o644))
			must(t, os.Remove(name))
			must(t, os.Symlink("readme.txt.real", name))
		}, `file_changed: "share/readme.txt": file was replaced while the release was read (its path now holds a symbolic link); try again`},
		{"directory swapped for a symlink", func(t *testing.T, name string) {
			dir := filepath.Dir(name)
			must(t, os.Rename(dir, dir+".real"))
			must(t, os.Symlink("share.real", dir))
		}, `file_changed: "share/readme.txt": file was replaced while the release was read (its path now holds a symbolic link); try again`},
		{"another file with the same content", func(t *testing.T, name string) {
			// Made before the old one goes, so it cannot reuse its inode.
			must(t, os.WriteFile(name+".new", []byte("read me\n"), 0o644))
			must(t, os.Rename(name+".new", name))
		}, `file_changed: "share/readme.txt": file was replaced while the release was read (by another file); try again`},
		{"grown in place", func(t *testing.T, name string) {
			must(t, os.WriteFile(name, []byte("read me, and more\n"), 0o644))
		}, `file_changed: "share/readme.txt": file changed size while it was read; try again`},
		{"rewritten in place, same size", func(t *testing.T, name string) {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteAt([]byte("READ"), 0)
			must(t, err)
			must(t, f.Close())
		}, `file_changed: "share/readme.txt": file content changed while the release was copied; try again`},
		{"a directory", func(t *testing.T, name string) {
			must(t, os.Remove(name))
			must(t, os.Mkdir(name, 0o755))
		}, `file_changed: "share/readme.txt": file was replaced while the release was read (it is now a directory); try again`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireRefusal(t, copyWithSwap(t, target, tc.swap), tc.want)
		})
	}
}

// TestCopyRelease copies an unchanged release: the copy holds the same
// files, modes and documents, and has the same manifest.
func TestCopyRelease(t *testing.T) {
	f := newFixture(t)
	// A signed directory: the fixture with its documents.
	src := f.dir
	var buf bytes.Buffer
	m, err := Pack(src, testKey, &buf)
	must(t, err)
	sig, err := Sign(m, testKey)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(src, ManifestName), m.Canonical(), 0o644))
	must(t, os.WriteFile(filepath.Join(src, SignatureName), sig, 0o644))
	dst := filepath.Join(t.TempDir(), "staging")
	must(t, os.Mkdir(dst, 0o700))
	got, err := CopyRelease(src, dst)
	must(t, err)
	if got.Digest() != m.Digest() {
		t.Fatalf("digest %s, want %s", got.Digest(), m.Digest())
	}
	rel, err := Verify(dst, trusted(), "")
	if err != nil {
		t.Fatalf("Verify of the copy: %v", err)
	}
	if rel.Digest() != m.Digest() || rel.Key == nil {
		t.Fatalf("copy verified as %s, key %v", rel.Digest(), rel.Key)
	}
	if fi, err := os.Stat(filepath.Join(dst, "bin/greet")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("bin/greet: %v %v", fi, err)
	}
	// A non-empty destination is refused.
	if _, err := CopyRelease(src, dst); err == nil {
		t.Fatal("CopyRelease into a non-empty directory succeeded")
	}
}

// TestFIFOInRelease puts a named pipe into a release directory: pack,
// manifest, copy and verify refuse it with special_file, naming it, and
// none of them waits on it.
func TestFIFOInRelease(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system")
	}
	src := newReleaseDir(t)
	mkfifo(t, filepath.Join(src, "share", "pipe"))
	want := `special_file: "share/pipe": a named pipe, not a regular file; a release holds regular files and directories only, so remove it`
	_, err := within(t, "Pack", func() (*Manifest, error) { return Pack(src, testKey, &bytes.Buffer{}) })
	requireRefusal(t, err, want)
	_, err = within(t, "Verify", func() (*Release, error) { return Verify(src, trusted(), "") })
	requireRefusal(t, err, want)
	dst := filepath.Join(t.TempDir(), "staging")
	must(t, os.Mkdir(dst, 0o700))
	_, err = within(t, "CopyRelease", func() (*Manifest, error) { return CopyRelease(src, dst) })
	requireRefusal(t, err, want)
}
