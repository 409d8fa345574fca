package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// devSettle is how long `ext dev` waits after a change for the next one
// (an editor's save, a build) before it installs: a burst is one install.
const devSettle = 200 * time.Millisecond

// newExtDevCmd is `ext dev DIR`: install the working directory pinned by
// its own digest, and again whenever its files change, until Ctrl-C — a
// fast edit-run loop for an extension's author. With --once it installs
// and returns, so that a script (the README's quickstart) can install
// before it starts the watcher in the background: `ext dev DIR &` alone
// races the commands after it.
func newExtDevCmd(f *Factory) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "dev DIR [--once]",
		Short: "Install a working release directory, and again each time it changes",
		Long: `Install the release in DIR pinned by its own digest (as --pin would) and
activate it; then watch DIR and, whenever its files change, install it
again, replacing the release this command installed before. A change that
makes the release invalid is reported and the last good one stays active.
Stop it with Ctrl-C (or SIGTERM: ` + "`kill`" + `). The line "installed …" says each
install is active. With --once, install and exit without watching (exit 1
if the release is invalid): run it before ` + "`ext dev DIR &`" + ` in a script, so
that the commands after it find the release installed. For local
development only: what it installs is trusted by digest, not by a
publisher's signature.`,
		Args: exactArgs(1, "ext dev takes a release directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			dir := f.Abs(args[0])
			if once {
				m, err := trust.BuildManifest(dir)
				if err != nil {
					return reportDescriptorErrors(f, args[0], err)
				}
				res, err := h.Admin().InstallContext(cmd.Context(), dir, m.Digest(), admin.InstallOptions{})
				if err != nil {
					return reportDescriptorErrors(f, args[0], err)
				}
				printDevInstall(f, res)
				return nil
			}
			w, err := fsnotify.NewWatcher()
			if err != nil {
				return err
			}
			defer w.Close()
			watchTree := func() { watchRelease(w, dir) }
			watchTree()
			installed := "" // the digest this command installed last
			install := func() {
				m, err := trust.BuildManifest(dir)
				if err != nil {
					reportDevError(f, args[0], err)
					return
				}
				digest := m.Digest()
				if digest == installed {
					return
				}
				res, err := h.Admin().InstallContext(cmd.Context(), dir, digest, admin.InstallOptions{})
				if err != nil {
					reportDevError(f, args[0], err)
					return
				}
				printDevInstall(f, res)
				if installed != "" {
					if _, _, err := h.Admin().Remove(installed); err != nil {
						fmt.Fprintf(f.IO.ErrOut, "%s: could not remove the previous dev release %s: %v\n", f.Name, installed, err)
					}
				}
				installed = digest
			}
			install()
			fmt.Fprintf(f.IO.ErrOut, "watching %s; Ctrl-C stops\n", args[0])
			var settle <-chan time.Time
			for {
				select {
				case <-cmd.Context().Done():
					return nil
				case ev, ok := <-w.Events:
					if !ok {
						return nil
					}
					if ev.Has(fsnotify.Create) {
						watchTree() // a new directory is watched too
					}
					settle = time.After(devSettle)
				case err, ok := <-w.Errors:
					if !ok {
						return nil
					}
					fmt.Fprintf(f.IO.ErrOut, "%s: watching %s: %v\n", f.Name, args[0], err)
				case <-settle:
					settle = nil
					install()
				}
			}
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "install the directory pinned, then exit instead of watching it")
	return cmd
}

// printDevInstall says that the release `ext dev` installed is active.
func printDevInstall(f *Factory, res *admin.InstallResult) {
	r := res.Release
	if res.AlreadyInstalled {
		fmt.Fprintf(f.IO.Out, "installed %s %s (%s) already: revision %d\n", r.Package, r.Version, r.Digest, res.New)
		return
	}
	fmt.Fprintf(f.IO.Out, "installed %s %s (%s): revision %d\n", r.Package, r.Version, r.Digest, res.New)
}

// reportDevError says why DIR could not be installed now; the loop goes on.
func reportDevError(f *Factory, dir string, err error) {
	if rerr := reportDescriptorErrors(f, dir, err); rerr != nil {
		var ee *ExitError
		if !errors.As(rerr, &ee) || !ee.Reported {
			fmt.Fprintf(f.IO.ErrOut, "%s: %s: %v\n", f.Name, dir, rerr)
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "%s: %s is not installed; fix it and save again\n", f.Name, dir)
}

// watchRelease watches every directory of the release dir but those its
// ignore list leaves out (.git and the like): what changes there is not
// packed, and a repository's objects would use up the user's inotify
// watches. A bad list hides nothing; the install reports it.
func watchRelease(w *fsnotify.Watcher, dir string) {
	ignored, err := trust.Ignores(dir)
	if err != nil {
		ignored = func(string, bool) bool { return false }
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if rel, _ := filepath.Rel(dir, p); rel != "." && ignored(filepath.ToSlash(rel), true) {
			return fs.SkipDir
		}
		w.Add(p)
		return nil
	})
}
