//go:build !rukh_oneshot

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/source"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/run/envpolicy"
	"github.com/spf13/cobra"
)

// Release sources: `ext publish`, `ext install oci://…|https://…`, `ext
// outdated` and `ext upgrade` (docs/releases.md, "Registries and URLs";
// docs/adr/0016-release-sources.md). A registry is never a source of
// trust: what these fetch is verified by the install path like a local
// archive.

// sourceFlags are the transport flags of every command that reaches a
// source.
type sourceFlags struct {
	plainHTTP bool
	timeout   time.Duration
}

func (sf *sourceFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&sf.plainHTTP, "plain-http", false, "allow plain HTTP to a registry or URL that is not on a loopback address")
	cmd.Flags().DurationVar(&sf.timeout, "timeout", source.DefaultTimeout, "fail a request that makes no progress for this long")
}

func (sf *sourceFlags) client(f *Factory) (*source.Client, error) {
	if sf.timeout <= 0 || sf.timeout > source.MaxTimeout {
		return nil, &UsageError{fmt.Errorf("--timeout %s is out of range: give more than 0 and at most %s", sf.timeout, source.MaxTimeout)}
	}
	return &source.Client{Getenv: envpolicy.Lookup(f.Env), Stderr: f.IO.ErrOut, PlainHTTP: sf.plainHTTP, Timeout: sf.timeout}, nil
}

// sourced is what outdated and upgrade start from: the source client,
// the owner's admin and the installed state.
func (sf *sourceFlags) sourced(f *Factory) (*source.Client, *admin.Admin, *admin.State, error) {
	c, err := sf.client(f)
	if err != nil {
		return nil, nil, nil, err
	}
	h, err := f.Host()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := h.Admin().State()
	if err != nil {
		return nil, nil, nil, err
	}
	return c, h.Admin(), st, nil
}

// sourceError makes err of a source say that nothing changed, with the
// exit status of an unreachable service when the source could not be
// reached or stalled.
func sourceError(err error) error {
	var se *source.Error
	if !errors.As(err, &se) {
		return err
	}
	err = fmt.Errorf("%w; nothing was changed", err)
	if unavailable(err) {
		return &ExitError{Status: exitcode.Unavailable, Err: err}
	}
	return err
}

// unavailable reports whether err is a source that could not be reached
// or stalled.
func unavailable(err error) bool {
	var ue *source.UnreachableError
	var st *source.StallError
	return errors.As(err, &ue) || errors.As(err, &st)
}

// scratchDir is a fresh private directory for unpacking an archive
// outside the store (`ext publish` reads what it publishes), removed by
// the returned func.
func scratchDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "release-publish-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

func newExtPublishCmd(f *Factory) *cobra.Command {
	var sf sourceFlags
	cmd := &cobra.Command{
		Use:   "publish ARCHIVE oci://HOST/REPO:TAG",
		Short: "Push a signed release archive to an OCI registry",
		Long: `Push a release archive made by ` + "`ext pack --key`" + ` to an OCI registry as an
artifact of type ` + source.ArtifactType + `: the archive is its one layer
(` + source.LayerMediaType + `), and annotations name its package, version
and publisher. The signature stays inside the archive: whoever installs it
verifies it against the publishers they trust, never against the registry.
Tag releases with their version (1.4.0) so that ` + "`ext outdated`" + ` finds the newest.
Credentials come from the container credential file (~/.docker/config.json,
$DOCKER_CONFIG) and its helpers, as ` + "`docker login`" + ` or ` + "`oras login`" + ` wrote them.`,
		Args: exactArgs(2, "ext publish takes a release archive and an oci://HOST/REPO:TAG reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.client(f)
			if err != nil {
				return err
			}
			ref, err := source.Parse(args[1], sf.plainHTTP)
			if err != nil {
				return &UsageError{err}
			}
			if ref.Scheme != source.SchemeOCI || ref.Tag == "" || ref.Digest != "" {
				return &UsageError{fmt.Errorf("%s: publish to a registry tag, oci://HOST/REPO:TAG", args[1])}
			}
			meta, err := archiveMeta(f.Abs(args[0]), args[0])
			if err != nil {
				return err
			}
			if source.Canonical(ref.Tag) != "" && source.Canonical(ref.Tag) != source.Canonical(meta.Version) {
				return &UsageError{fmt.Errorf("%s: the tag %s is a version, but the release is %s %s; tag it %s, or with a tag that is not a version, like latest", args[1], ref.Tag, meta.Package, meta.Version, meta.Version)}
			}
			digest, err := c.Push(cmd.Context(), ref, f.Abs(args[0]), meta)
			if err != nil {
				return sourceError(err)
			}
			fmt.Fprintf(f.IO.Out, "published %s %s by %s to %s\ndigest %s\n", meta.Package, meta.Version, meta.Publisher, ref, digest)
			fmt.Fprintf(f.IO.ErrOut, "install it with `%s ext install %s`, or exactly this digest with `%s ext install %s`\n", f.Name, ref, f.Name, ref.WithTag("").WithDigest(digest))
			return nil
		},
	}
	sf.add(cmd)
	return cmd
}

// archiveMeta reads what the annotations say from a signed release
// archive: it is unpacked into a scratch directory and its files are
// checked against its manifest. A publisher need not trust its own key,
// but an unsigned archive is not published.
func archiveMeta(path, typed string) (source.Meta, error) {
	var meta source.Meta
	fh, err := os.Open(path)
	if err != nil {
		return meta, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil {
		return meta, err
	} else if !fi.Mode().IsRegular() {
		return meta, fmt.Errorf("%s is not a release archive (a regular .tar.gz file made by `ext pack`)", typed)
	}
	dir, done, err := scratchDir()
	if err != nil {
		return meta, err
	}
	defer done()
	if err := trust.Unpack(fh, dir); err != nil {
		return meta, fmt.Errorf("%s: %w", typed, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, trust.ManifestName))
	if err != nil {
		return meta, fmt.Errorf("%s is not a packed release (it has no %s); pack and sign it with `ext pack DIR --key KEY -o FILE.tar.gz`", typed, trust.ManifestName)
	}
	m, err := trust.ParseManifest(data)
	if err != nil {
		return meta, fmt.Errorf("%s: %w", typed, err)
	}
	rel, err := trust.Verify(dir, trust.KeyMap{}, m.Digest())
	if err != nil {
		return meta, fmt.Errorf("%s: %w", typed, err)
	}
	if rel.Signature == nil {
		return meta, fmt.Errorf("%s (%s %s) is not signed: sign it with `ext pack DIR --key KEY` before publishing; a registry is never a source of trust", typed, m.Package, m.Version)
	}
	return source.Meta{Package: m.Package, Version: m.Version, Publisher: m.Publisher, ReleaseDigest: m.Digest(), Key: rel.Signature.Key}, nil
}

// annotationsAgree refuses a release whose manifest annotations name
// another package, version or publisher than its signed descriptor.
func annotationsAgree(ann map[string]string) func(d *descriptor.Descriptor) error {
	return func(d *descriptor.Descriptor) error {
		for _, c := range []struct{ key, want string }{
			{source.AnnotationPackage, d.Package},
			{source.AnnotationVersion, d.Version},
			{source.AnnotationPublisher, d.Publisher},
		} {
			if got, ok := ann[c.key]; ok && got != c.want {
				return fmt.Errorf("the registry's manifest says %s %q, but the signed release says %q; it was not published by `ext publish`, or was edited", c.key, got, c.want)
			}
		}
		return nil
	}
}

// installSource is `ext install oci://…|https://…`: fetch, then the
// install path of a local archive, recording the source.
func installSource(cmd *cobra.Command, f *Factory, arg, pin string, opts admin.InstallOptions, sf *sourceFlags) error {
	c, err := sf.client(f)
	if err != nil {
		return err
	}
	ref, err := source.Parse(arg, sf.plainHTTP)
	if err != nil {
		return &UsageError{err}
	}
	h, err := f.Host()
	if err != nil {
		return err
	}
	res, err := fetchAndInstall(cmd.Context(), c, h.Admin(), ref, pin, opts, ref.Digest != "" || pin != "", sf.plainHTTP)
	if err != nil {
		return err
	}
	printInstalled(f, res)
	return nil
}

// fetchAndInstall fetches ref and installs what it fetched, recording
// the source with the digest actually fetched.
func fetchAndInstall(ctx context.Context, c *source.Client, a *admin.Admin, ref *source.Ref, pin string, opts admin.InstallOptions, fixed, plain bool) (*admin.InstallResult, error) {
	dir, done, err := a.FetchDir()
	if err != nil {
		return nil, err
	}
	defer done()
	got, err := c.Fetch(ctx, ref, dir)
	if err != nil {
		return nil, sourceError(err)
	}
	opts.Source = &store.Source{Ref: ref.String(), Resolved: got.Resolved, Fixed: fixed, PlainHTTP: plain && !loopbackRef(ref)}
	check := annotationsAgree(got.Annotations)
	if more := opts.Check; more != nil {
		opts.Check = func(d *descriptor.Descriptor) error {
			if err := check(d); err != nil {
				return err
			}
			return more(d)
		}
	} else {
		opts.Check = check
	}
	res, err := a.InstallContext(ctx, got.Path, pin, opts)
	if err != nil {
		var errs descriptor.Errors
		if errors.As(err, &errs) {
			return nil, fmt.Errorf("%s (%s) is not a valid release: %w; nothing was installed", ref.Display(), got.Resolved, err)
		}
		return nil, fmt.Errorf("%s (%s): %w; nothing was installed", ref.Display(), got.Resolved, err)
	}
	return res, nil
}

func loopbackRef(ref *source.Ref) bool { return source.LoopbackHost(ref.Host()) }

// outdatedRow is one package with a source, as `ext outdated` reports it.
type outdatedRow struct {
	Package   string `json:"package"`
	Installed string `json:"installed"`
	Source    string `json:"source"`
	Resolved  string `json:"resolved"`
	// Latest is the newest version the source offers (a tag), or
	// "changed" when a non-version tag or an https URL now serves
	// another digest; "" when it could not be asked.
	Latest string `json:"latest,omitempty"`
	// Next is the reference an upgrade would fetch.
	Next string `json:"next,omitempty"`
	// Upgrade: Next is newer than what is installed.
	Upgrade bool `json:"upgrade"`
	// Fixed: installed by digest or with --pin; `ext upgrade` moves it
	// only when named with a new reference.
	Fixed bool   `json:"fixed"`
	Error string `json:"error,omitempty"`

	plain bool
	ref   *source.Ref
	next  *source.Ref
	err   error // what Error says, typed
}

// sourcedReleases are the releases with a source to ask: per package,
// its active release, or for a package not active, its latest installed
// one with a source.
func sourcedReleases(st *admin.State) []*store.Release {
	active := map[string]string{}
	if st.Revision != nil {
		for _, ap := range st.Revision.Packages {
			active[ap.Package] = ap.Digest
		}
	}
	byPkg := map[string]*store.Release{}
	for _, r := range st.Releases { // by package, then installation time
		if d, ok := active[r.Package]; ok {
			if r.Digest == d {
				byPkg[r.Package] = r
			}
			continue
		}
		if r.Source != nil {
			byPkg[r.Package] = r
		}
	}
	var out []*store.Release
	for _, r := range byPkg {
		if r.Source != nil {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *store.Release) int { return strings.Compare(a.Package, b.Package) })
	return out
}

// checkSource asks r's source for what it offers now, without
// installing anything.
func checkSource(ctx context.Context, c *source.Client, a *admin.Admin, r *store.Release, pre bool) outdatedRow {
	row := outdatedRow{Package: r.Package, Installed: r.Version, Source: r.Source.Ref, Resolved: r.Source.Resolved, Fixed: r.Source.Fixed, plain: r.Source.PlainHTTP}
	ref, err := source.Parse(r.Source.Ref, true)
	if err != nil {
		row.Error, row.err = err.Error(), err
		return row
	}
	row.ref = ref
	switch {
	case ref.Scheme == source.SchemeHTTPS:
		dir, done, err := a.FetchDir()
		if err != nil {
			row.Error, row.err = err.Error(), err
			return row
		}
		defer done()
		got, err := c.Fetch(ctx, ref, dir)
		if err != nil {
			row.Error, row.err = err.Error(), err
			return row
		}
		row.Latest = r.Version
		if got.Resolved != r.Source.Resolved {
			row.Latest, row.Next, row.next, row.Upgrade = "changed", ref.String(), ref, true
		}
	case source.Canonical(ref.Tag) != "" || ref.Tag == "":
		// A version tag, or a digest: the newest version tag is the
		// latest.
		tags, err := c.Tags(ctx, ref)
		if err != nil {
			row.Error, row.err = err.Error(), err
			return row
		}
		newest := source.Newest(tags, pre)
		if newest == "" {
			row.Error = fmt.Sprintf("%s: no tag of %s is a semantic version", ref, ref.Repository)
			return row
		}
		row.Latest = strings.TrimPrefix(newest, "v")
		if source.Newer(newest, r.Version) {
			row.next = ref.WithTag(newest)
			row.Next, row.Upgrade = row.next.String(), true
		}
	default:
		// A tag that is not a version (latest, stable): it is outdated
		// when it names another manifest now.
		d, ann, err := c.Resolve(ctx, ref)
		if err != nil {
			row.Error, row.err = err.Error(), err
			return row
		}
		row.Latest = r.Version
		if d != r.Source.Resolved {
			// The registry's annotation is shown only when it is a
			// version; it is unverified until the signed release is.
			row.Latest = "changed"
			if v := ann[source.AnnotationVersion]; source.Canonical(v) != "" {
				row.Latest = strings.TrimPrefix(v, "v")
			}
			row.next, row.Next, row.Upgrade = ref, ref.String(), true
		}
	}
	if row.Fixed {
		row.Upgrade = false
	}
	return row
}

func newExtOutdatedCmd(f *Factory) *cobra.Command {
	var sf sourceFlags
	var asJSON, pre bool
	cmd := &cobra.Command{
		Use:   "outdated [--json] [--pre]",
		Short: "List installed packages whose source offers a newer release",
		Long: `Ask the source of each installed package that has one (installed from
oci://… or https://…) what it offers now, and list the installed version
beside the newest: for a registry, the highest tag that is a semantic
version (pre-releases with --pre); for a tag that is not a version (latest)
or an https URL, whether it now serves another digest ("changed"). Nothing
is installed. A package installed by digest or with --pin is listed but not
marked for upgrade.`,
		Args: exactArgs(0, "ext outdated takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, adm, st, err := sf.sourced(f)
			if err != nil {
				return err
			}
			rows := []outdatedRow{}
			failed := 0
			for _, r := range sourcedReleases(st) {
				row := checkSource(cmd.Context(), clientFor(c, r), adm, r, pre)
				if row.Error != "" {
					failed++
					fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", row.Package, safe(row.Error))
				}
				rows = append(rows, row)
			}
			if asJSON {
				if err := writeJSON(f.IO.Out, rows); err != nil {
					return err
				}
			} else if len(rows) == 0 {
				fmt.Fprintf(f.IO.ErrOut, "no installed package has a source; install one with `%s ext install oci://HOST/REPO:TAG`\n", f.Name)
			} else {
				tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PACKAGE\tINSTALLED\tLATEST\tSOURCE")
				for _, r := range rows {
					latest := r.Latest
					switch {
					case r.Error != "":
						latest = "?"
					case r.Fixed:
						latest += " (fixed)"
					case r.Upgrade:
						latest += " ↑"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Package, r.Installed, safe(latest), safe(source.Redact(r.Source)))
				}
				tw.Flush()
			}
			if failed > 0 {
				return &ExitError{Status: exitcode.Unavailable, Err: fmt.Errorf("%d source%s could not be asked", failed, plural(failed)), Reported: true}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&pre, "pre", false, "consider pre-release versions (1.5.0-rc.1)")
	sf.add(cmd)
	return cmd
}

// clientFor is c, speaking plain HTTP when r's source was installed so.
func clientFor(c *source.Client, r *store.Release) *source.Client {
	return plainClient(c, r.Source != nil && r.Source.PlainHTTP)
}

// plainClient is c, speaking plain HTTP when plain is set.
func plainClient(c *source.Client, plain bool) *source.Client {
	if !plain || c.PlainHTTP {
		return c
	}
	return &source.Client{Getenv: c.Getenv, Stderr: c.Stderr, PlainHTTP: true, Timeout: c.Timeout}
}

func newExtUpgradeCmd(f *Factory) *cobra.Command {
	var sf sourceFlags
	var all, dryRun, pre bool
	var pin string
	cmd := &cobra.Command{
		Use:   "upgrade [PKG…|oci://…|https://…|--all] [--dry-run]",
		Short: "Fetch, verify, install and activate the newest release of packages with a source",
		Long: `For each package named (or every package with a source, with --all), ask
its source for the newest release as ` + "`ext outdated`" + ` does, and when it is newer,
fetch it, verify it exactly as ` + "`ext install`" + ` does (a trusted signature of the
package's publisher; another publisher is refused) and activate it: one
profile revision per package, after which the CLI routes and MCP tools
that changed are printed. A package installed by digest or with --pin is
not moved by its name or --all: name the new reference instead
(` + "`ext upgrade oci://HOST/REPO@sha256:HEX`" + `), which must be a newer release of an
installed package. A failed upgrade leaves the previous release active.
--dry-run only says what would be upgraded.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return &UsageError{errors.New("ext upgrade takes packages or references to upgrade, or --all")}
			}
			if pin != "" && (all || slices.ContainsFunc(args, func(a string) bool { return !source.IsSource(a) })) {
				return &UsageError{errors.New("--pin goes with a named reference (ext upgrade oci://HOST/REPO@sha256:HEX --pin sha256:…): it accepts that exact release, not whatever --all or a package's source offers")}
			}
			c, adm, st, err := sf.sourced(f)
			if err != nil {
				return err
			}
			plans, err := upgradePlans(cmd.Context(), f, c, adm, st, args, all, pre)
			if err != nil {
				return err
			}
			failed, offline := 0, 0
			for _, p := range plans {
				if p.err != nil {
					failed++
					if unavailable(p.err) {
						offline++
					}
					fmt.Fprintf(f.IO.ErrOut, "%s: not upgraded: %s\n", safe(p.pkg), safe(p.err.Error()))
					continue
				}
				if p.next == nil {
					fmt.Fprintf(f.IO.ErrOut, "%s %s is up to date (%s)\n", p.pkg, p.installed, safe(source.Redact(p.source)))
					continue
				}
				if dryRun {
					fmt.Fprintf(f.IO.Out, "would upgrade %s %s to %s from %s\n", safe(p.pkg), p.installed, safe(p.latest), safe(p.next.Display()))
					continue
				}
				if err := upgradeOne(cmd.Context(), f, adm, plainClient(c, p.plain), p, pin); err != nil {
					failed++
					if unavailable(err) {
						offline++
					}
					fmt.Fprintf(f.IO.ErrOut, "%s: upgrade failed, %s stays active: %s\n", safe(p.pkg), p.installed, safeLines(err.Error()))
				}
			}
			if failed > 0 {
				// Offline (every failure a source not reached or stalled):
				// the status of an unreachable service, as outdated and
				// install exit.
				status := exitcode.Failed
				if offline == failed {
					status = exitcode.Unavailable
				}
				return &ExitError{Status: status, Err: fmt.Errorf("%d package%s not upgraded", failed, plural(failed)), Reported: true}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "upgrade every package that has a source")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be upgraded; change nothing")
	cmd.Flags().BoolVar(&pre, "pre", false, "consider pre-release versions")
	cmd.Flags().StringVar(&pin, "pin", "", "accept this exact release digest even if unsigned (sha256:HEX), with a named reference")
	sf.add(cmd)
	return cmd
}

// upgradePlan is what `ext upgrade` does for one package.
type upgradePlan struct {
	pkg, installed, latest, source string
	next                           *source.Ref // nil: up to date
	fixed                          bool        // the reference was named: it is recorded as given
	plain                          bool
	err                            error
}

func upgradePlans(ctx context.Context, f *Factory, c *source.Client, adm *admin.Admin, st *admin.State, args []string, all, pre bool) ([]upgradePlan, error) {
	sourced := sourcedReleases(st)
	var plans []upgradePlan
	if all {
		for _, r := range sourced {
			if r.Source.Fixed {
				fmt.Fprintf(f.IO.ErrOut, "%s %s was installed by digest or with --pin (%s): not moved; name a new reference to upgrade it\n", r.Package, r.Version, safe(source.Redact(r.Source.Ref)))
				continue
			}
			plans = append(plans, planFrom(checkSource(ctx, clientFor(c, r), adm, r, pre)))
		}
		return plans, nil
	}
	installed := map[string]bool{}
	for _, r := range st.Releases {
		installed[r.Package] = true
	}
	for _, a := range args {
		if source.IsSource(a) {
			ref, err := source.Parse(a, c.PlainHTTP)
			if err != nil {
				return nil, &UsageError{err}
			}
			plans = append(plans, upgradePlan{pkg: a, installed: "the installed release", latest: "the release it names", source: a, next: ref, fixed: true, plain: c.PlainHTTP})
			continue
		}
		i := slices.IndexFunc(sourced, func(r *store.Release) bool { return r.Package == a })
		switch {
		case i < 0 && installed[a]:
			plans = append(plans, upgradePlan{pkg: a, err: fmt.Errorf("%s was installed from a local file, not a source; upgrade it by installing a newer release, or name a reference: `%s ext upgrade oci://HOST/REPO:TAG`", a, f.Name)})
		case i < 0:
			plans = append(plans, upgradePlan{pkg: a, err: fmt.Errorf("%s is not installed; see `%s ext list`", a, f.Name)})
		case sourced[i].Source.Fixed:
			r := sourced[i]
			plans = append(plans, upgradePlan{pkg: a, err: fmt.Errorf("%s %s was installed by digest or with --pin (%s) and is not moved by name; name the new reference: `%s ext upgrade oci://HOST/REPO@sha256:HEX`", a, r.Version, source.Redact(r.Source.Ref), f.Name)})
		default:
			plans = append(plans, planFrom(checkSource(ctx, clientFor(c, sourced[i]), adm, sourced[i], pre)))
		}
	}
	return plans, nil
}

func planFrom(row outdatedRow) upgradePlan {
	p := upgradePlan{pkg: row.Package, installed: row.Installed, latest: row.Latest, source: row.Source, plain: row.plain}
	if row.Error != "" {
		p.err = row.err
		if p.err == nil {
			p.err = errors.New(row.Error)
		}
	} else if row.Upgrade {
		p.next = row.next
	}
	return p
}

// upgradeOne fetches p.next, verifies and installs it as a newer release
// of p's package, and prints the routes and tools that changed.
func upgradeOne(ctx context.Context, f *Factory, a *admin.Admin, c *source.Client, p upgradePlan, pin string) error {
	before, err := a.State()
	if err != nil {
		return err
	}
	versions := map[string]string{} // package → active version
	if before.Revision != nil {
		for _, ap := range before.Revision.Packages {
			versions[ap.Package] = ap.Version
		}
	}
	named := p.fixed
	check := func(d *descriptor.Descriptor) error {
		if !named && d.Package != p.pkg {
			return fmt.Errorf("it is a release of %s, not of %s", d.Package, p.pkg)
		}
		return nil
	}
	// Newer than what is active when the change commits, not when this
	// command read the state: decided inside the transaction.
	from := versions[p.pkg]
	newer := func(d *descriptor.Descriptor, active *store.ActivePackage) error {
		if active == nil {
			return fmt.Errorf("%s %s is not an upgrade: %s is not active; install it with `ext install`", d.Package, d.Version, d.Package)
		}
		if !source.Newer(d.Version, active.Version) {
			return fmt.Errorf("%s %s is not newer than the active %s", d.Package, d.Version, active.Version)
		}
		from = active.Version
		return nil
	}
	res, err := fetchAndInstall(ctx, c, a, p.next, pin, admin.InstallOptions{Check: check, CheckActive: newer}, named && (p.next.Digest != "" || pin != ""), p.plain)
	if err != nil {
		return err
	}
	after, err := a.State()
	if err != nil {
		return err
	}
	r := res.Release
	printChange(f, res.Result, fmt.Sprintf("upgraded %s %s → %s (%s, %s)", r.Package, from, r.Version, source.Redact(r.Source.Ref), shortDigest(r.Source.Resolved)))
	if printProjectionDiff(f.IO.Out, r.Package, before, after) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "no CLI route or MCP tool of %s changed\n", r.Package)
	}
	return nil
}

// printProjectionDiff prints the CLI routes and MCP tool names of pkg
// that the change from before to after added, removed or renamed, and
// returns how many lines it printed.
func printProjectionDiff(w io.Writer, pkg string, before, after *admin.State) int {
	mine := func(identity string) bool { return strings.HasPrefix(identity, pkg+"/") }
	routes := func(st *admin.State) map[string]string {
		m := map[string]string{}
		if st.Projection != nil {
			for _, r := range st.Projection.Routes {
				if mine(r.Identity) {
					m[strings.Join(r.Words, " ")] = r.Identity
				}
			}
		}
		return m
	}
	tools := func(st *admin.State) map[string]string {
		m := map[string]string{}
		if st.Projection != nil {
			for _, t := range st.Projection.Tools {
				if mine(t.Identity) {
					m[t.Identity] = t.Name
				}
			}
		}
		return m
	}
	var lines []string
	rb, ra := routes(before), routes(after)
	for words, id := range ra {
		if _, ok := rb[words]; !ok {
			lines = append(lines, fmt.Sprintf("+ route %s (%s)", words, id))
		}
	}
	for words, id := range rb {
		if _, ok := ra[words]; !ok {
			lines = append(lines, fmt.Sprintf("- route %s (%s)", words, id))
		}
	}
	tb, ta := tools(before), tools(after)
	for id, name := range ta {
		switch old, ok := tb[id]; {
		case !ok:
			lines = append(lines, fmt.Sprintf("+ tool %s (%s)", name, id))
		case old != name:
			lines = append(lines, fmt.Sprintf("~ tool %s → %s (%s)", old, name, id))
		}
	}
	for id, name := range tb {
		if _, ok := ta[id]; !ok {
			lines = append(lines, fmt.Sprintf("- tool %s (%s)", name, id))
		}
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[2:], b[2:]) })
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	return len(lines)
}
