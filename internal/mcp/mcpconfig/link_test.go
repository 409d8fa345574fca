package mcpconfig_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/mcp/mcpconfig"
)

// A configuration file that is a symbolic link (~/.claude.json ->
// dotfiles/claude.json) is written through: the file at the end of the
// links gets the entry, with its mode, and every link stays a link, so
// the dotfiles repository sees the change. The backup is beside the path
// given.
func TestWriteThroughLinks(t *testing.T) {
	home := t.TempDir()
	dotfiles := filepath.Join(home, "dotfiles")
	if err := os.Mkdir(dotfiles, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dotfiles, "claude.json")
	old := "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"/bin/other\"}\n  }\n}\n"
	if err := os.WriteFile(target, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	// Two links: an absolute one to a relative one, as dotfile managers
	// make them.
	mid := filepath.Join(dotfiles, "current.json")
	path := filepath.Join(home, ".claude.json")
	if err := os.Symlink("claude.json", mid); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mid, path); err != nil {
		t.Fatal(err)
	}
	w, err := mcpconfig.Clients["claude-code"].Write(path, server(), false, "T1")
	if err != nil {
		t.Fatal(err)
	}
	if w.File != target || w.Backup != path+".bak-T1" {
		t.Errorf("wrote %+v; want the file %s and the backup %s.bak-T1", w, target, path)
	}
	for _, link := range []string{path, mid} {
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v %v", link, fi, err)
		}
	}
	got, err := os.ReadFile(target)
	if err != nil || !strings.Contains(string(got), `"/usr/bin/rukh"`) || !strings.Contains(string(got), `"/bin/other"`) {
		t.Errorf("the link's target holds %q, %v; want both servers", got, err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("the target's mode is %v, want its own 0600", fi.Mode())
	}
	if b, _ := os.ReadFile(w.Backup); string(b) != old {
		t.Errorf("backup %q", b)
	}
	if entries, _ := os.ReadDir(dotfiles); len(entries) != 2 {
		t.Errorf("left in the target's directory: %v", entries)
	}
}

// What Write refuses at the path of a configuration file, writing nothing
// (no backup, no file, the link as it was): a link to nothing, a loop,
// anything that is not a regular file — a device that never ends, a named
// pipe that never writes, a directory — and a file over MaxFileBytes. A
// named pipe is refused at once: its open does not wait for a writer.
func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"dangling link", func(t *testing.T, path string) {
			symlink(t, filepath.Join(filepath.Dir(path), "gone.json"), path)
		}, "which does not exist"},
		{"link loop", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other.json")
			symlink(t, other, path)
			symlink(t, path, other)
		}, "symbolic links (a loop?)"},
		{"link to /dev/zero", func(t *testing.T, path string) {
			symlink(t, "/dev/zero", path)
		}, "not a regular file: /dev/zero (a character device)"},
		{"named pipe", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "(a named pipe)"},
		{"link to a named pipe", func(t *testing.T, path string) {
			fifo := filepath.Join(filepath.Dir(path), "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, fifo, path)
		}, "(a named pipe)"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "(a directory)"},
		{"over the size limit", func(t *testing.T, path string) {
			data := "{\"pad\": \"" + strings.Repeat("x", mcpconfig.MaxFileBytes) + "\"}\n"
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "is larger than 4 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".mcp.json")
			tc.make(t, path)
			before := listing(t, dir)
			done := make(chan error, 1)
			go func() {
				_, err := mcpconfig.Clients["claude-code"].Write(path, server(), false, "T1")
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Write did not return within 10 s") // a pipe it waits on, a device it reads forever
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("Write: %v; want an error saying %q and that nothing was written", err, tc.want)
			}
			if after := listing(t, dir); after != before {
				t.Errorf("a refused write changed the directory:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// listing is each entry of dir with its type and size (a link's target).
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		link, _ := os.Readlink(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name() + " " + fi.Mode().String() + " " + link)
		if fi.Mode().IsRegular() {
			b.WriteString(" " + strconv.FormatInt(fi.Size(), 10))
		}
		b.WriteString("\n")
	}
	return b.String()
}
