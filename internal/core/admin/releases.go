package admin

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/wrapper"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// InstallResult is what an install did.
type InstallResult struct {
	*Result
	Release          *store.Release
	AlreadyInstalled bool
	// NowSigned: the release was installed pinned, and this install
	// verified its signature: its record now says who signed it.
	NowSigned bool
	// Bound: this install bound the package name to the release's
	// publisher — a name no publisher held, or, with NewPublisher, one
	// PreviousPublisher held.
	Bound             bool
	PreviousPublisher string
	// Inherits are the rules of the profile that name the package and
	// that its commands now fall under ("mcp.expose rt.attack/*", "tasks.agent.commands rt.*/*"),
	// when Bound: what the new publisher gets without the owner writing
	// a rule for it.
	Inherits []string
}

// trustedKeys is the keys of the active revision as a trust.Keyring.
func (a *Admin) trustedKeys() (trust.KeyMap, error) {
	keys, err := a.TrustedKeys()
	kr := trust.KeyMap{}
	for _, k := range keys {
		kr[k.Publisher] = append(kr[k.Publisher], trust.PublicKey(k.Public))
	}
	return kr, err
}

// InstallOptions are what an owner may say about one install.
type InstallOptions struct {
	// NewPublisher lets a release of this publisher take over a package
	// name that another publisher holds (PublisherChangeError).
	NewPublisher string
	// Source, when set, is recorded with the release: where it was
	// fetched from (`ext install oci://…`). Installing a release that is
	// installed already records the new source on it.
	Source *store.Source
	// Check, when set, is asked about the verified release before
	// anything is written (an upgrade requires the same package and a
	// newer version; a registry's annotations must match it); its error
	// refuses the install.
	Check func(d *descriptor.Descriptor) error
	// CheckActive, when set, is asked inside the change's transaction,
	// under the store's lock, about the verified release and its
	// package's active release at that moment (nil when none is active);
	// its error refuses the install. An upgrade's "newer than the active
	// release" is decided here, so a release activated since the fetch
	// is compared against, and an upgrade never downgrades.
	CheckActive func(d *descriptor.Descriptor, active *store.ActivePackage) error
	// builtin: the core's own release of its built-in commands
	// (EnsureBuiltins), the only one that may have the CLI's name.
	builtin bool
	// wrappers: the owner's release of its wrappers (ApplyProfile), the
	// only one that may be package "owner".
	wrappers bool
}

// ReservedError refuses a release of the package that is the CLI's own
// namespace: its built-in commands.
type ReservedError struct{ Package string }

func (e *ReservedError) Error() string {
	if e.Package == wrapper.Package {
		return "package owner holds the owner's wrappers of version 1 commands: no release takes it, and it is not deactivated or removed by hand; change the profile's \"wrappers\" and apply it"
	}
	return fmt.Sprintf("package %s is the CLI's own namespace (its built-in commands): no release takes it, and it is not deactivated or removed; rename the release's package, or leave its commands unexposed in the profile", e.Package)
}

// PublisherChangeError refuses a release whose package name another
// publisher holds: the one whose release of that package was installed
// first, or whom the owner let take it over. The name stays held when
// every release of it is removed, until the owner releases it (`ext
// remove PKG --forget-publisher`). Without that, any trusted publisher
// could ship a release of another's package and inherit every rule the
// profile has for it.
type PublisherChangeError struct {
	Package, Owner, Publisher string
	Version                   string // an installed release of Owner's; "" when none is installed
}

func (e *PublisherChangeError) Error() string {
	held := fmt.Sprintf("whose release %s is installed", e.Version)
	if e.Version == "" {
		held = fmt.Sprintf("no release of it is installed, but the name stays held for %q until you release it with `ext remove %s --forget-publisher`", e.Owner, e.Package)
	}
	return fmt.Sprintf("package %s belongs to publisher %q (%s); this release is by %q. A package name stays with the publisher that first installed it: if %q has taken %s over with your consent, install again with --new-publisher %s",
		e.Package, e.Owner, held, e.Publisher, e.Publisher, e.Package, e.Publisher)
}

// Install verifies the release at src (a .tar.gz archive or a directory)
// and installs and activates it as one new revision. A release is accepted
// only when its signature verifies under a trusted key of its publisher, or
// when pin names its exact digest; and, when releases of its package are
// installed or were (the name is held), only when the name is its
// publisher's (or opts.NewPublisher names it). Nothing is written unless
// it is.
func (a *Admin) Install(src, pin string, opts InstallOptions) (*InstallResult, error) {
	return a.InstallContext(context.Background(), src, pin, opts)
}

// InstallContext is Install that ctx can stop (Ctrl-C): it is checked
// between the copy, the verification and the commit, and once more in
// the transaction, so a stopped install writes nothing and leaves no
// files behind.
func (a *Admin) InstallContext(ctx context.Context, src, pin string, opts InstallOptions) (*InstallResult, error) {
	pi, err := a.prepareInstall(ctx, src, pin, opts)
	if err != nil {
		return nil, err
	}
	defer pi.cleanup()
	res, err := a.publish(pi.op, func(tx *store.Tx, c *Candidate) error { return pi.apply(ctx, tx, c) })
	if err != nil {
		return nil, err
	}
	return pi.result(res), nil
}

// pendingInstall is a release copied into staging and verified, ready to
// be installed and activated by one revision's change (apply).
type pendingInstall struct {
	a                *Admin
	op               string
	staging          string
	final            string
	digest           string
	record           *store.Release
	d                *descriptor.Descriptor
	opts             InstallOptions
	cleanup          func()
	existing         *store.Release
	nowSigned, bound bool
	previous         string
	inherits         []string
}

// prepareInstall copies src into staging and verifies it; nothing is in
// the store yet.
func (a *Admin) prepareInstall(ctx context.Context, src, pin string, opts InstallOptions) (*pendingInstall, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(a.ReleasesDir(), 0o700); err != nil {
		return nil, err
	}
	stagingMu.Lock()
	a.removeStaleStaging()
	staging, err := os.MkdirTemp(a.ReleasesDir(), stagingPrefix+strconv.Itoa(os.Getpid())+"-")
	if err == nil {
		liveStaging.Store(staging, true)
	}
	stagingMu.Unlock()
	if err != nil {
		return nil, err
	}
	pi := &pendingInstall{a: a, staging: staging, opts: opts, cleanup: func() {
		liveStaging.Delete(staging)
		removeTree(staging) // a no-op once it has been renamed into place
	}}
	ok := false
	defer func() {
		if !ok {
			pi.cleanup()
		}
	}()
	if err := stage(src, staging); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keys, err := a.trustedKeys()
	if err != nil {
		return nil, err
	}
	rel, err := trust.Verify(staging, keys, pin)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pi.digest = rel.Manifest.Digest()
	pi.final = a.releaseDir(pi.digest)
	d := rel.Descriptor
	pi.d = d
	if opts.Check != nil {
		if err := opts.Check(d); err != nil {
			return nil, err
		}
	}
	if d.Package == cliname.Name() && !opts.builtin || d.Package == wrapper.Package && !opts.wrappers {
		return nil, &ReservedError{Package: d.Package}
	}
	pi.record = &store.Release{
		Digest: pi.digest, Package: d.Package, Version: d.Version, Publisher: d.Publisher,
		Dir: pi.final, Pinned: rel.Key == nil, InstalledAt: a.Now().UTC(), InstalledBy: a.UID,
		Source: opts.Source,
	}
	if rel.Key != nil {
		pi.record.SignedBy = rel.Key.ID()
	}
	if pi.record.Descriptor, err = os.ReadFile(filepath.Join(staging, descriptor.FileName)); err != nil {
		return nil, err
	}
	pi.op = fmt.Sprintf("install %s %s", d.Package, d.Version)
	ok = true
	return pi, nil
}

// apply installs the release, when it is not yet, and activates it in
// c. Whether the release exists, and its files, are decided under the
// store's lock: another install of the same release waits for it.
func (pi *pendingInstall) apply(ctx context.Context, tx *store.Tx, c *Candidate) error {
	d, final, digest, record := pi.d, pi.final, pi.digest, pi.record
	if pi.opts.CheckActive != nil {
		var active *store.ActivePackage
		if ap, ok := c.Packages[d.Package]; ok {
			active = &ap
		}
		if err := pi.opts.CheckActive(d, active); err != nil {
			return err
		}
	}
	var err error
	if pi.existing, err = tx.Release(digest); err != nil {
		return err
	}
	held, err := packageOwner(tx, d.Package, d.Publisher, pi.opts.NewPublisher)
	if err != nil {
		return err
	}
	if held == nil || held.Publisher != d.Publisher {
		if held != nil {
			pi.previous = held.Publisher
		}
		if err := tx.PutName(&store.Name{Package: d.Package, Publisher: d.Publisher, Since: pi.a.Now().UTC(), By: pi.a.UID}); err != nil {
			return err
		}
		pi.bound, pi.inherits = true, inheritedRules(c.Profile, d)
	}
	if pi.existing == nil || !hasFile(filepath.Join(final, descriptor.FileName)) {
		// No record: a directory here is left over from an install that
		// was killed before it committed. A record without files is
		// repaired. Either way the verified copy takes its place.
		if err := removeTree(final); err != nil {
			return err
		}
		if err := os.Rename(pi.staging, final); err != nil {
			return err
		}
		if hookAfterRename != nil {
			hookAfterRename() // tests: a crash here leaves an orphan
		}
		if pi.existing == nil {
			c.undo = append(c.undo, func() { removeTree(final) })
		}
		if err := makeReadOnly(final); err != nil {
			return err
		}
	}
	if pi.existing == nil {
		if err := tx.PutRelease(record); err != nil {
			return err
		}
	} else {
		again, changed := *pi.existing, false
		if pi.existing.Pinned && !record.Pinned {
			// Pinned first, now signed: the same files, now trusted by
			// their publisher's key.
			again.Pinned, again.SignedBy = false, record.SignedBy
			changed, pi.nowSigned = true, true
		}
		if record.Source != nil && (again.Source == nil || *again.Source != *record.Source) {
			again.Source, changed = record.Source, true
		}
		if changed {
			if err := tx.PutRelease(&again); err != nil {
				return err
			}
			pi.existing = &again
		}
	}
	c.Packages[d.Package] = store.ActivePackage{Package: d.Package, Version: d.Version, Digest: digest}
	return ctx.Err() // stopped now: rolled back, the copy undone
}

// result is what the committed install did.
func (pi *pendingInstall) result(res *Result) *InstallResult {
	record := pi.record
	if pi.existing != nil {
		record = pi.existing
	}
	return &InstallResult{Result: res, Release: record, AlreadyInstalled: pi.existing != nil, NowSigned: pi.nowSigned,
		Bound: pi.bound, PreviousPublisher: pi.previous, Inherits: pi.inherits}
}

// packageOwner refuses a release of pkg by publisher when another
// publisher holds the name, unless allow names publisher, and returns
// the name's binding (nil when no publisher holds it). A name not held
// although another publisher's release of it is installed (a store
// damaged or edited by hand; version 2 binds every installed package)
// is refused the same way.
func packageOwner(tx *store.Tx, pkg, publisher, allow string) (*store.Name, error) {
	held, err := tx.Name(pkg)
	if err != nil {
		return nil, err
	}
	rels, err := tx.Releases()
	if err != nil {
		return nil, err
	}
	owner := ""
	if held != nil {
		owner = held.Publisher
	}
	version := ""
	for _, r := range rels {
		if r.Package != pkg {
			continue
		}
		if owner == "" && r.Publisher != publisher {
			owner = r.Publisher
		}
		if r.Publisher == owner {
			version = r.Version
		}
	}
	if owner != "" && owner != publisher && allow != publisher {
		return nil, &PublisherChangeError{Package: pkg, Owner: owner, Publisher: publisher, Version: version}
	}
	return held, nil
}

// inheritedRules are the rules of p that name package d.Package and that
// one of its commands falls under: mcp.expose entries, and the command
// patterns of tasks. A pattern for every package ("*/*") names none.
func inheritedRules(p *profile.Profile, d *descriptor.Descriptor) []string {
	matchesOne := func(pattern string) bool {
		pkgPart, _, _ := strings.Cut(pattern, "/")
		if pkgPart == "*" {
			return false
		}
		for _, cmd := range d.Commands {
			if profile.Matches(pattern, d.Package+"/"+cmd.ID) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, e := range p.MCP.Expose {
		if matchesOne(e) {
			out = append(out, "mcp.expose "+e)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Tasks)) {
		for _, pat := range p.Tasks[name].Commands {
			if matchesOne(pat) {
				out = append(out, fmt.Sprintf("tasks.%s.commands %s", name, pat))
			}
		}
	}
	return out
}

// releaseDir is where the release with digest lives. It is derived from
// the data dir every time, never taken from a stored path, so a copied or
// moved data dir never points at another one's files.
func (a *Admin) releaseDir(digest string) string {
	return filepath.Join(a.ReleasesDir(), strings.TrimPrefix(digest, "sha256:"))
}

func hasFile(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

const stagingPrefix = ".staging-"

// FetchDir is a new private directory for archives fetched from a source
// (`ext install oci://…`) while they wait for the install path, and its
// removal. It is a staging directory of this process in the releases
// directory: on the store's filesystem, and swept like any staging
// directory once this process is gone (a fetch killed with SIGKILL
// leaves nothing for good).
func (a *Admin) FetchDir() (string, func(), error) {
	if err := os.MkdirAll(a.ReleasesDir(), 0o700); err != nil {
		return "", nil, err
	}
	stagingMu.Lock()
	a.removeStaleStaging()
	dir, err := os.MkdirTemp(a.ReleasesDir(), stagingPrefix+strconv.Itoa(os.Getpid())+"-fetch-")
	if err == nil {
		liveStaging.Store(dir, true)
	}
	stagingMu.Unlock()
	if err != nil {
		return "", nil, err
	}
	return dir, func() {
		liveStaging.Delete(dir)
		removeTree(dir)
	}, nil
}

// stage copies or unpacks the release at src into the empty dir staging.
// src is opened without blocking, so a named pipe or device given as the
// release (or swapped in for it) is refused rather than waited on.
func stage(src, staging string) error {
	f, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return copyRelease(src, staging)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is neither a release archive nor a directory (%s)", src, trust.KindOf(fi.Mode()))
	}
	return trust.Unpack(f, staging)
}

// copyRelease copies a release directory (trust.CopyRelease): every file
// BuildManifest finds, which refuses symlinks, special files, setuid bits
// and unsafe names, plus the manifest and signature when present. Each
// file must still be the regular file that was hashed when it is copied,
// and is opened without blocking. Verification then runs on the copy, so
// what is verified is exactly what is installed — a file added, renamed
// or changed after signing is caught there.
func copyRelease(src, dst string) error {
	_, err := trust.CopyRelease(src, dst)
	return err
}

// liveStaging holds the staging directories of installs running in this
// process.
var (
	liveStaging sync.Map
	stagingMu   sync.Mutex // a sweep never sees a staging dir not yet registered
)

// hookAfterRename, when set (by tests), runs right after an install has
// moved its verified copy into place and before its transaction commits.
var hookAfterRename func()

// sweepReleases removes, inside an owner change's transaction and so under
// the store's lock, every release directory that no stored release record
// names — what an install killed after moving its copy into place, or a
// remove killed before deleting the files, left behind — and the staging
// directories of installs that are gone. Only directories named by a
// digest are release directories; anything else is left alone. Under the
// lock no install is between its rename and its commit, so a directory
// without a record is an orphan.
//
// A record names its directory twice, by its digest and by the directory
// it was installed to, and either keeps it. When the release records do
// not all read, the store is damaged and nothing is removed: the files
// may be what the owner recovers from. Nor is anything removed while the
// store has published no revision: a store that was never used, or that
// replaced a lost store.db, knows nothing of the releases on disk, and
// its empty release list proves nothing. Sweeping is best effort: a
// directory that cannot be removed now is tried again at the next change.
func (a *Admin) sweepReleases(tx *store.Tx) {
	stagingMu.Lock()
	a.removeStaleStaging()
	stagingMu.Unlock()
	if n, err := tx.ActiveNumber(); err != nil || n == 0 {
		return
	}
	rels, err := tx.Releases()
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, r := range rels {
		named[strings.TrimPrefix(r.Digest, "sha256:")] = true
		named[filepath.Base(r.Dir)] = true
	}
	entries, err := os.ReadDir(a.ReleasesDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && descriptor.Hex64(e.Name()) && !named[e.Name()] {
			removeTree(filepath.Join(a.ReleasesDir(), e.Name()))
		}
	}
}

// removeStaleStaging removes staging directories whose installing process
// is gone (killed mid-install). The caller holds stagingMu.
func (a *Admin) removeStaleStaging() {
	entries, _ := os.ReadDir(a.ReleasesDir())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stagingPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err == nil && pid != os.Getpid() && processAlive(pid) {
			continue
		}
		if _, live := liveStaging.Load(filepath.Join(a.ReleasesDir(), e.Name())); live {
			continue // an install running in this process (rukhd runs several)
		}
		removeTree(filepath.Join(a.ReleasesDir(), e.Name()))
	}
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// makeReadOnly drops write permission from every file and directory of an
// installed release.
func makeReadOnly(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() &^ 0o222
		if d.IsDir() {
			mode = 0o555
		}
		return os.Chmod(p, mode)
	})
}

// removeTree removes a directory tree even when it was made read-only.
func removeTree(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// findRelease resolves PACKAGE, PACKAGE@VERSION or sha256:HEX to one
// installed release. A bare package name must be unambiguous.
func findRelease(tx *store.Tx, ref string) (*store.Release, error) {
	if strings.HasPrefix(ref, "sha256:") {
		rel, err := tx.Release(ref)
		if err == nil && rel == nil {
			err = fmt.Errorf("no installed release has digest %s; see `ext list`", ref)
		}
		return rel, err
	}
	pkg, version, _ := strings.Cut(ref, "@")
	all, err := tx.Releases()
	if err != nil {
		return nil, err
	}
	var found []*store.Release
	for _, r := range all {
		if r.Package == pkg && (version == "" || r.Version == version) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s is not installed; see `ext list`", ref)
	case 1:
		return found[0], nil
	}
	vs := make([]string, len(found))
	for i, r := range found {
		vs[i] = r.Package + "@" + r.Version
	}
	return nil, fmt.Errorf("%s names %d installed releases; name one: %s", ref, len(found), strings.Join(vs, ", "))
}

// Activate makes an installed release the active version of its package.
func (a *Admin) Activate(ref string) (*Result, error) {
	return a.publish("activate "+ref, func(tx *store.Tx, c *Candidate) error {
		rel, err := findRelease(tx, ref)
		if err != nil {
			return err
		}
		c.Packages[rel.Package] = store.ActivePackage{Package: rel.Package, Version: rel.Version, Digest: rel.Digest}
		return nil
	})
}

// Deactivate removes a package's commands from the CLI and MCP; the
// release stays installed.
func (a *Admin) Deactivate(pkg string) (*Result, error) {
	if pkg == cliname.Name() || pkg == wrapper.Package {
		return nil, &ReservedError{Package: pkg}
	}
	return a.publish("deactivate "+pkg, func(tx *store.Tx, c *Candidate) error {
		if _, ok := c.Packages[pkg]; !ok {
			return fmt.Errorf("%s is not active; see `ext list`", pkg)
		}
		delete(c.Packages, pkg)
		return nil
	})
}

// Remove uninstalls a release, deactivating it in the same revision if it
// is active. Its files are deleted after the revision is published. The
// package's name stays held for its publisher, even when this was its
// last release (ForgetPublisher releases it).
func (a *Admin) Remove(ref string) (*Result, *store.Release, error) {
	var rel *store.Release
	res, err := a.publishAudited("remove "+ref, func(tx *store.Tx, c *Candidate) error {
		var err error
		if rel, err = findRelease(tx, ref); err != nil {
			return err
		}
		if (rel.Package == cliname.Name() || rel.Package == wrapper.Package) && c.Packages[rel.Package].Digest == rel.Digest {
			return &ReservedError{Package: rel.Package}
		}
		a.removeRelease(c, rel, ref)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return res, rel, nil
}

// removeRelease has change c uninstall rel: deactivated in the revision,
// its record deleted once it is published, its files after.
func (a *Admin) removeRelease(c *Candidate, rel *store.Release, ref string) {
	if ap, ok := c.Packages[rel.Package]; ok && ap.Digest == rel.Digest {
		delete(c.Packages, rel.Package)
	}
	digest, dir := rel.Digest, a.releaseDir(rel.Digest)
	c.then = append(c.then, func(tx *store.Tx) error { return tx.DeleteRelease(digest) })
	c.after = append(c.after, func() error {
		if err := removeTree(dir); err != nil {
			return fmt.Errorf("removed %s from the store, but deleting %s failed: %w", ref, dir, err)
		}
		return nil
	})
}

// ForgetResult is what ForgetPublisher did.
type ForgetResult struct {
	*Result
	Removed *store.Release // the package's last release, removed too; nil when none was installed
	Name    *store.Name    // the binding released
}

// ForgetPublisher releases package pkg's name from the publisher that
// holds it, so that any trusted publisher's release of it installs again
// (`ext remove PKG --forget-publisher`): the owner's explicit word that
// the name may change hands, as --new-publisher is for one install. It
// removes the package's release too when one is installed, in the same
// change; while more than one is, it is refused, since the name stays
// with an installed release's publisher. Like every owner change it is
// one store transaction with an audit entry (the revision changes only
// when an active release goes).
func (a *Admin) ForgetPublisher(pkg string) (*ForgetResult, error) {
	if !descriptor.ValidPackage(pkg) {
		return nil, fmt.Errorf("--forget-publisher takes a package name, not %q: the name is released for every version", pkg)
	}
	out := &ForgetResult{}
	res, err := a.publishAudited("remove "+pkg+" --forget-publisher", func(tx *store.Tx, c *Candidate) error {
		all, err := tx.Releases()
		if err != nil {
			return err
		}
		var rels []*store.Release
		for _, r := range all {
			if r.Package == pkg {
				rels = append(rels, r)
			}
		}
		if len(rels) > 1 {
			vs := make([]string, len(rels))
			for i, r := range rels {
				vs[i] = r.Package + "@" + r.Version
			}
			return fmt.Errorf("%s has %d releases installed (%s); remove all but one first: the name stays with its publisher while a release of it is installed", pkg, len(rels), strings.Join(vs, ", "))
		}
		if out.Name, err = tx.Name(pkg); err != nil {
			return err
		}
		if out.Name == nil && len(rels) == 0 {
			return fmt.Errorf("%s is not installed and no publisher holds its name; see `ext list`", pkg)
		}
		if len(rels) == 1 {
			out.Removed = rels[0]
			a.removeRelease(c, rels[0], pkg)
		}
		if out.Name == nil {
			// A store damaged or edited by hand: the release is the binding.
			out.Name = &store.Name{Package: pkg, Publisher: rels[0].Publisher}
		}
		_, err = tx.DeleteName(pkg)
		return err
	})
	if err != nil {
		return nil, err
	}
	out.Result = res
	return out, nil
}
