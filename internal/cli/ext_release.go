//go:build !rukh_oneshot

package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/source"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/spf13/cobra"
)

func newExtPackCmd(f *Factory) *cobra.Command {
	var keyFile, out string
	cmd := &cobra.Command{
		Use:   "pack DIR --key KEYFILE -o FILE.tar.gz",
		Short: "Sign a release directory and pack it into an archive",
		Args:  exactArgs(1, "ext pack takes a release directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyFile == "" || out == "" {
				return &UsageError{errors.New("ext pack needs --key KEYFILE and -o FILE.tar.gz")}
			}
			typedOut := out
			// Against the command line's directory, never this process's
			// (through rukhd they differ).
			dir, out := f.Abs(args[0]), f.Abs(out)
			if inside(out, dir) {
				return &UsageError{fmt.Errorf("-o %s is inside the release directory %s; write the archive elsewhere", typedOut, args[0])}
			}
			k, err := trust.ReadPrivateKey(f.Abs(keyFile))
			if err != nil {
				return err
			}
			// Write beside the target and rename, so a failed pack leaves
			// no partial archive behind.
			tmp, err := os.CreateTemp(filepath.Dir(out), ".pack-*")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			m, err := trust.Pack(dir, k, tmp)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return reportDescriptorErrors(f, args[0], err)
			}
			if err := os.Chmod(tmp.Name(), 0o644); err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), out); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "%s: %s %s by %s, %d files\ndigest %s\n", typedOut, m.Package, m.Version, m.Publisher, len(m.Files), m.Digest())
			return nil
		},
	}
	cmd.Flags().StringVar(&keyFile, "key", "", "the publisher's private key (from `trust keygen`)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the archive to write")
	return cmd
}

// inside reports whether path is within dir (both absolute).
func inside(path, dir string) bool {
	return strings.HasPrefix(filepath.Clean(path), filepath.Clean(dir)+string(filepath.Separator))
}

func newExtInstallCmd(f *Factory) *cobra.Command {
	var pin, newPublisher string
	var sf sourceFlags
	cmd := &cobra.Command{
		Use:   "install FILE|DIR|oci://HOST/REPO:TAG|oci://HOST/REPO@sha256:HEX|https://…/NAME.tar.gz [--pin sha256:HEX] [--new-publisher NAME]",
		Short: "Verify, install and activate a release",
		Long: `Verify a release archive or directory and install and activate it as one
new profile revision. It is accepted only when it is signed by a trusted key
of its publisher, or when --pin names its exact digest (local development).
A release can also be fetched from an OCI registry (oci://HOST/REPO:TAG, or
@sha256:HEX for exactly that manifest) or an https URL, and is then verified
the same way; the source is kept with it for ` + "`ext outdated`" + ` and ` + "`ext upgrade`" + `.`,
		Args: exactArgs(1, "ext install takes a release archive or directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if source.IsSource(args[0]) {
				return installSource(cmd, f, args[0], pin, admin.InstallOptions{NewPublisher: newPublisher}, &sf)
			}
			h, err := f.Host()
			if err != nil {
				return err
			}
			res, err := h.Admin().InstallContext(cmd.Context(), f.Abs(args[0]), pin, admin.InstallOptions{NewPublisher: newPublisher})
			if err != nil {
				return reportDescriptorErrors(f, args[0], err)
			}
			printInstalled(f, res)
			return nil
		},
	}
	cmd.Flags().StringVar(&pin, "pin", "", "accept this exact release digest even if unsigned (sha256:HEX)")
	cmd.Flags().StringVar(&newPublisher, "new-publisher", "", "let this release's publisher take over a package name that another publisher holds")
	sf.add(cmd)
	return cmd
}

// printInstalled says what an install did, on stderr.
func printInstalled(f *Factory, res *admin.InstallResult) {
	r := res.Release
	what := fmt.Sprintf("installed %s %s (%s)", r.Package, r.Version, r.Digest)
	switch {
	case res.NowSigned:
		what = fmt.Sprintf("%s %s is already installed (%s), pinned; it is now trusted as signed by %s key %s", r.Package, r.Version, r.Digest, r.Publisher, r.SignedBy)
	case res.AlreadyInstalled:
		what = fmt.Sprintf("%s %s is already installed (%s)", r.Package, r.Version, r.Digest)
	}
	printChange(f, res.Result, what)
	if res.Bound && res.PreviousPublisher != "" {
		fmt.Fprintf(f.IO.ErrOut, "%s now belongs to publisher %q instead of %q\n", r.Package, r.Publisher, res.PreviousPublisher)
	}
	if res.Bound && len(res.Inherits) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "%s of %q inherits these rules of the profile:\n", r.Package, r.Publisher)
		for _, rule := range res.Inherits {
			fmt.Fprintf(f.IO.ErrOut, "  %s\n", rule)
		}
	}
}

type releaseJSON struct {
	Package     string    `json:"package"`
	Version     string    `json:"version,omitzero"`
	Publisher   string    `json:"publisher"`
	Digest      string    `json:"digest,omitzero"`
	Active      bool      `json:"active"`
	SignedBy    string    `json:"signedBy,omitempty"`
	Pinned      bool      `json:"pinned"`
	InstalledAt time.Time `json:"installedAt,omitzero"`
	Dir         string    `json:"dir,omitzero"`
	// Held: a package name kept for its publisher with no release of it
	// installed (the row has no version, digest or dir): another
	// publisher's release of it is refused without --new-publisher.
	Held bool `json:"held,omitempty"`
	// Source is where the release was fetched from (`ext install
	// oci://…|https://…`), with the digest fetched; absent for a local one.
	Source *sourceJSON `json:"source,omitempty"`
}

type sourceJSON struct {
	Ref      string `json:"ref"`
	Resolved string `json:"resolved"`
	Fixed    bool   `json:"fixed"`
}

// heldRows are the names held with no release installed.
func heldRows(st *admin.State) []releaseJSON {
	installed := map[string]bool{}
	for _, r := range st.Releases {
		installed[r.Package] = true
	}
	var rows []releaseJSON
	for _, n := range st.Names {
		if !installed[n.Package] {
			rows = append(rows, releaseJSON{Package: n.Package, Publisher: n.Publisher, Held: true})
		}
	}
	return rows
}

func releaseRows(st *admin.State) []releaseJSON {
	active := map[string]bool{}
	if st.Revision != nil {
		for _, ap := range st.Revision.Packages {
			active[ap.Digest] = true
		}
	}
	rows := []releaseJSON{}
	for _, r := range st.Releases {
		row := releaseJSON{r.Package, r.Version, r.Publisher, r.Digest, active[r.Digest], r.SignedBy, r.Pinned, r.InstalledAt, r.Dir, false, nil}
		if s := r.Source; s != nil {
			row.Source = &sourceJSON{s.Ref, s.Resolved, s.Fixed}
		}
		rows = append(rows, row)
	}
	return rows
}

func newExtListCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List installed releases, and package names held with none installed",
		Args:  exactArgs(0, "ext list takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := state(cmd, f)
			if err != nil {
				return err
			}
			held := heldRows(st)
			rows := releaseRows(st)
			if asJSON {
				return writeJSON(f.IO.Out, append(rows, held...))
			}
			if len(rows) == 0 {
				fmt.Fprintf(f.IO.ErrOut, "no releases installed; install one with `%s ext install FILE`\n", f.Name)
				if len(held) == 0 {
					return nil
				}
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			// The SOURCE column only when a release has one.
			sourced := slices.ContainsFunc(rows, func(r releaseJSON) bool { return r.Source != nil })
			src := func(r releaseJSON) string {
				switch {
				case !sourced:
					return ""
				case r.Source == nil:
					return "\t-"
				}
				return "\t" + safe(source.Redact(r.Source.Ref))
			}
			if sourced {
				fmt.Fprintln(tw, "PACKAGE\tVERSION\tACTIVE\tTRUST\tDIGEST\tSOURCE")
			} else {
				fmt.Fprintln(tw, "PACKAGE\tVERSION\tACTIVE\tTRUST\tDIGEST")
			}
			for _, r := range rows {
				act := "-"
				if r.Active {
					act = "active"
				}
				how := "signed by " + r.Publisher
				if r.Pinned {
					how = "pinned"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\n", r.Package, r.Version, act, how, shortDigest(r.Digest), src(r))
			}
			for _, r := range held {
				fmt.Fprintf(tw, "%s\t-\t-\theld for %s\t-\n", r.Package, r.Publisher)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(held) > 0 {
				fmt.Fprintf(f.IO.ErrOut, "a held package has no release installed but its name stays with its publisher: another publisher's release of it is refused; `%s ext remove PACKAGE --forget-publisher` releases the name\n", f.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newExtShowCmd(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show PACKAGE[@VERSION]|sha256:HEX",
		Short: "Show an installed release and its commands",
		Args:  exactArgs(1, "ext show takes a package, package@version or digest"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := state(cmd, f)
			if err != nil {
				return err
			}
			var match []releaseJSON
			for _, r := range releaseRows(st) {
				if r.Digest == args[0] || r.Package+"@"+r.Version == args[0] || r.Package == args[0] {
					match = append(match, r)
				}
			}
			if len(match) == 0 {
				return fmt.Errorf("%s is not installed; see `%s ext list`", args[0], f.Name)
			}
			type shown struct {
				releaseJSON
				Commands []validateCommand `json:"commands"`
			}
			var out []shown
			for _, r := range match {
				for _, x := range st.Releases {
					if x.Digest != r.Digest {
						continue
					}
					d, err := descriptor.Decode(x.Descriptor)
					if err != nil {
						return err
					}
					out = append(out, shown{r, commandRows(d)})
					if !asJSON {
						if len(out) > 1 {
							fmt.Fprintln(f.IO.Out)
						}
						fmt.Fprintf(f.IO.Out, "digest: %s\nactive: %v\ndir:    %s\n", r.Digest, r.Active, r.Dir)
						printCommandTable(f.IO.Out, d)
					}
				}
			}
			if asJSON {
				return writeJSON(f.IO.Out, out)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newExtRefCmd(f *Factory, use, short string, run func(a *admin.Admin, ref string) (*admin.Result, error)) *cobra.Command {
	verb := strings.Fields(use)[0]
	var forget bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(1, "ext "+verb+" takes one package"),
		// Completion offers the installed packages, and for all but
		// deactivate each release as PACKAGE@VERSION.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			st, err := state(cmd, f)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, r := range st.Releases {
				if !slices.Contains(names, r.Package) {
					names = append(names, r.Package)
				}
				if verb != "deactivate" {
					names = append(names, r.Package+"@"+r.Version)
				}
			}
			if verb == "remove" {
				for _, n := range st.Names { // a held name, for --forget-publisher
					if !slices.Contains(names, n.Package) {
						names = append(names, n.Package)
					}
				}
			}
			slices.Sort(names)
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := f.Host()
			if err != nil {
				return err
			}
			if forget {
				return forgetPublisher(f, h.Admin(), args[0])
			}
			res, err := run(h.Admin(), args[0])
			if err != nil {
				return err
			}
			if verb == "remove" && !res.Changed {
				// The release went, its revision did not: it was not active.
				fmt.Fprintf(f.IO.ErrOut, "removed %s, which was not active: revision %d is unchanged\n", args[0], res.New)
				return nil
			}
			printChange(f, res, verb+" "+args[0])
			return nil
		},
	}
	if verb == "remove" {
		cmd.Use = "remove PACKAGE[@VERSION]|sha256:HEX [--forget-publisher]"
		cmd.Long = `Uninstall a release, deactivating it in the same revision if it is active.
The package's name stays with its publisher even when its last release is
removed, so that another publisher's release of it is refused (it would
inherit the profile's rules for the package) unless installed with
--new-publisher. --forget-publisher releases the name, removing the
package's last release too when one is installed: then any trusted
publisher's release of it installs again.`
		cmd.Flags().BoolVar(&forget, "forget-publisher", false, "release the package's name from its publisher (and remove its last release)")
	}
	return cmd
}

// forgetPublisher is `ext remove PACKAGE --forget-publisher`.
func forgetPublisher(f *Factory, a *admin.Admin, pkg string) error {
	res, err := a.ForgetPublisher(pkg)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s no longer belongs to publisher %q; any trusted publisher's release of it installs", pkg, res.Name.Publisher)
	if res.Removed != nil {
		what = fmt.Sprintf("removed %s %s; ", pkg, res.Removed.Version) + what
	}
	if !res.Changed {
		fmt.Fprintf(f.IO.ErrOut, "%s: revision %d is unchanged\n", what, res.New)
		return nil
	}
	printChange(f, res.Result, what)
	return nil
}
