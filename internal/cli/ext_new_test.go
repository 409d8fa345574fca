package cli

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runExtNew runs `ext new acme.hello --lang LANG` in dir.
func runExtNew(t *testing.T, dir, lang string) error {
	t.Helper()
	f := &Factory{Name: "rukh", Dir: dir, IO: IOStreams{Out: io.Discard, ErrOut: io.Discard}}
	cmd := newExtNewCmd(f)
	cmd.SetArgs([]string{"acme.hello", "--lang", lang})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.Execute()
}

// scaffoldPaths are the paths `ext new acme.hello` creates, in order, as
// the hook sees them.
func scaffoldPaths(t *testing.T, lang string) []string {
	t.Helper()
	var seen []string
	scaffoldHook = func(rel string) { seen = append(seen, rel) }
	defer func() { scaffoldHook = nil }()
	if err := runExtNew(t, t.TempDir(), lang); err != nil {
		t.Fatal(err)
	}
	return seen
}

// A symbolic link planted at any path `ext new` creates, after its
// check that the directory is free and right before it creates that path
// (as another user of a shared sticky directory can), makes it fail
// naming the path, and nothing is written through the link: the link's
// target, a directory or a file outside, is as it was. So is a directory
// of the scaffold replaced by a link between two files (renamed away, a
// link in its place). Planted deterministically by a hook, not raced.
func TestExtNewRefusesPlantedLinks(t *testing.T) {
	for _, lang := range []string{"sh", "go"} {
		paths := scaffoldPaths(t, lang)
		if !slices.Contains(paths, "hello") || !slices.Contains(paths, "hello/bin") || !slices.Contains(paths, "hello/rukh-extension.json") {
			t.Fatalf("%s: the scaffold creates %v", lang, paths)
		}
		for i, at := range paths {
			// A link to a directory outside, and one to a file outside,
			// in place of the path about to be created.
			for _, toDir := range []bool{true, false} {
				t.Run(lang+"/link at "+at+map[bool]string{true: " to a directory", false: " to a file"}[toDir], func(t *testing.T) {
					work, outside := t.TempDir(), t.TempDir()
					target := filepath.Join(outside, "victim")
					if toDir {
						if err := os.Mkdir(target, 0o755); err != nil {
							t.Fatal(err)
						}
					} else if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					before := tree(t, outside)
					scaffoldHook = func(rel string) {
						if rel == at {
							if err := os.Symlink(target, filepath.Join(work, rel)); err != nil {
								t.Error(err)
							}
						}
					}
					defer func() { scaffoldHook = nil }()
					err := runExtNew(t, work, lang)
					if err == nil || !strings.Contains(err.Error(), filepath.FromSlash(at)) {
						t.Fatalf("ext new with a link planted at %s: %v; want a refusal naming it", at, err)
					}
					if after := tree(t, outside); after != before {
						t.Errorf("written through the link at %s:\n%s\nwas\n%s", at, after, before)
					}
				})
			}
			// A directory of the scaffold, already made, replaced by a
			// link right before a later path is created.
			if i == 0 {
				continue
			}
			for _, dir := range []string{"hello", "hello/bin"} {
				if !slices.Contains(paths[:i], dir) {
					continue // not made yet
				}
				t.Run(lang+"/"+dir+" replaced by a link before "+at, func(t *testing.T) {
					work, outside := t.TempDir(), t.TempDir()
					before := tree(t, outside)
					scaffoldHook = func(rel string) {
						if rel == at {
							p := filepath.Join(work, dir)
							if err := os.Rename(p, p+".moved"); err != nil {
								t.Error(err)
							}
							if err := os.Symlink(outside, p); err != nil {
								t.Error(err)
							}
						}
					}
					defer func() { scaffoldHook = nil }()
					err := runExtNew(t, work, lang)
					if err == nil || !strings.Contains(err.Error(), filepath.FromSlash(dir)) {
						t.Fatalf("ext new with %s replaced by a link: %v; want a refusal naming it", dir, err)
					}
					if after := tree(t, outside); after != before {
						t.Errorf("written through the link at %s:\n%s\nwas\n%s", dir, after, before)
					}
				})
			}
		}
	}
}

// tree lists every path under dir with its content.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The python and sh templates end quietly on SIGINT (Ctrl-C at a
// terminal reaches the program itself) and on SIGTERM (rukh stopping the
// call): no traceback on stderr, and the status a shell gives a program
// that signal ends, 128 plus its number. The program is held in its
// handler by a line the test adds there, which says when it is reached.
func TestTemplateSignals(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the python and sh templates run python3:", err)
	}
	for _, lang := range []string{"python", "sh"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(lang+"/"+sig.String(), func(t *testing.T) {
				files, _, _ := scaffolds(lang, "acme", "acme.hello", "hello")
				prog := files["bin/hello"]
				const at = "def greet(inputs):\n"
				if !strings.Contains(prog, at) {
					t.Fatalf("the %s program has no %q to hold it at:\n%s", lang, at, prog)
				}
				prog = strings.Replace(prog, at, at+"    print(\"held\", flush=True)\n    import time\n    time.sleep(600)\n", 1)
				path := filepath.Join(t.TempDir(), "hello")
				if err := os.WriteFile(path, []byte(prog), 0o755); err != nil {
					t.Fatal(err)
				}
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				host, child := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "child")
				defer host.Close()
				cmd := exec.Command(path)
				cmd.Env = append(os.Environ(), "RUKH_IPC_FD=3", "RUKH_IPC_TOKEN="+strings.Repeat("ab", 32))
				cmd.ExtraFiles = []*os.File{child}
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				child.Close()
				exited := make(chan error, 1)
				held := make(chan string, 1)
				go func() {
					line, _ := bufio.NewReader(stdout).ReadString('\n')
					held <- line
					io.Copy(io.Discard, stdout)
					exited <- cmd.Wait()
				}()
				t.Cleanup(func() { cmd.Process.Kill() })
				frame := `{"type":"invoke","protocol":"rukh.ipc/1","invocationId":"` + strings.Repeat("0", 32) + `","command":"acme.hello/hello","transport":"cli","interactive":true,"deadlineMs":10000,"inputs":{"name":{"value":"Ada","explicit":true},"shout":{"value":false,"explicit":false}}}` + "\n"
				if _, err := host.Write([]byte(frame)); err != nil {
					t.Fatal(err)
				}
				select {
				case line := <-held:
					if line != "held\n" {
						t.Fatalf("the program said %q before it was held; stderr:\n%s", line, stderr.String())
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the program did not reach its handler within 30 s")
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				var err2 error
				select {
				case err2 = <-exited:
				case <-time.After(30 * time.Second):
					t.Fatalf("the program did not end within 30 s of %v", sig)
				}
				var ee *exec.ExitError
				if !errors.As(err2, &ee) || ee.ExitCode() != 128+int(sig) {
					t.Errorf("after %v the program ended with %v; want exit status %d", sig, err2, 128+int(sig))
				}
				if stderr.Len() != 0 {
					t.Errorf("after %v the program wrote to stderr:\n%s", sig, stderr.String())
				}
			})
		}
	}
}
