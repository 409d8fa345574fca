// Command mkdeb builds the rukh Debian package with nfpm: /usr/bin/rukh and
// /usr/bin/rukhd (static, CGO_ENABLED=0) and the enforcement helper
// /usr/bin/rukh-sandbox (static, stripped), the systemd user units of rukhd,
// shell completions made by running the built `rukh completion SHELL`,
// gzipped man pages generated from the CLI's cobra tree beside the
// hand-written ones (packaging/man), and /usr/share/doc/rukh: the
// copyright file (DEP-5, with the license of every module linked in) and
// the changelog. `make deb` runs it from packaging/ and writes
// rukh_VERSION_ARCH.deb to the repository root; lintian finds nothing to
// report on it but what packaging/lintian-overrides says is deliberate.
//
//	go run ./cmd/mkdeb [-root ..] [-o DIR] [-version V] [-stamp S] [-maintainer 'Name <email>']
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/rukh-cli/rukh/internal/cli"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/systemd"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

const (
	summary = "Run trusted extension commands, for people and for agents"
	long    = `Rukh runs installed, signed extension commands. Each command is
declared once and presented twice: as a subcommand of rukh and, where the
owner's profile exposes it, as an MCP tool for AI agents (rukh mcp).
rukhd is its optional per-user daemon, started on demand by systemd:
systemctl --user enable --now rukhd.socket`
	// A placeholder (.invalid is reserved): set DEBFULLNAME and DEBEMAIL,
	// or -maintainer, for a package that is handed on.
	defaultMaintainer = "Rukh maintainers <maintainers@rukh.invalid>"
)

// options say what to build and where.
type options struct {
	Root       string    // the repository root
	Name       string    // the CLI's name: rukh, or an embedder's
	Module     string    // the module whose cmd/NAME and cmd/NAMEd are built; Root when empty
	OutDir     string    // where the .deb goes
	Version    string    // Debian version; from git describe when empty
	Maintainer string    // "Name <email>"
	Stamp      string    // the build's source stamp; the Makefile's STAMP when empty
	MTime      time.Time // of every file and man page; SOURCE_DATE_EPOCH or the commit's time when zero
}

func main() {
	var o options
	flag.StringVar(&o.Root, "root", "..", "the repository root (`make deb` runs mkdeb from packaging/)")
	flag.StringVar(&o.Name, "name", "rukh", "the CLI's name: an embedder's package is NAME, with NAME, NAMEd, NAME-oneshot, NAME-sandbox, its units, completions and man pages")
	flag.StringVar(&o.Module, "module", "", "the embedder's module directory, with cmd/NAME and cmd/NAMEd (default: -root)")
	flag.StringVar(&o.OutDir, "o", "", "directory to write rukh_VERSION_ARCH.deb to (default: the repository root)")
	flag.StringVar(&o.Version, "version", "", "Debian package version (default: from git describe --tags --always --dirty)")
	flag.StringVar(&o.Stamp, "stamp", "", "source stamp linked into both binaries (default: computed as the Makefile's STAMP)")
	flag.StringVar(&o.Maintainer, "maintainer", "", "Maintainer field (default: $DEBFULLNAME <$DEBEMAIL>, else a placeholder)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "mkdeb: no arguments expected")
		os.Exit(2)
	}
	path, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdeb:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

// build builds the package and returns its path.
func build(o options) (string, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(sandbox.SourcePath))); err != nil {
		return "", fmt.Errorf("-root %s is not the rukh repository: %w", o.Root, err)
	}
	name := o.Name
	if name == "" {
		name = "rukh"
	}
	module := root
	if o.Module != "" {
		if module, err = filepath.Abs(o.Module); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(filepath.Join(module, "cmd", name+"d")); err != nil {
		return "", fmt.Errorf("%s has no cmd/%sd, the core's main: %w", module, name, err)
	}
	if o.OutDir == "" {
		o.OutDir = root
	}
	if o.Version == "" {
		o.Version = gitVersion(module)
	}
	if o.Maintainer == "" {
		o.Maintainer = renamed(defaultMaintainer, name)
		if n, e := os.Getenv("DEBFULLNAME"), os.Getenv("DEBEMAIL"); n != "" && e != "" {
			o.Maintainer = n + " <" + e + ">"
		}
	}
	if o.MTime.IsZero() {
		o.MTime = sourceTime(module)
	}

	work, err := os.MkdirTemp("", "mkdeb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)

	// Static binaries: the package then depends on nothing, not even libc.
	// rukh and rukhd carry the source stamp, so the packaged rukh talks to the
	// packaged rukhd and to no daemon of other sources
	// (docs/adr/0003-daemon.md).
	stamp := o.Stamp
	if stamp == "" {
		if stamp, err = sourceStamp(module); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(work, "bin")
	ldflags := "-s -w -X " + stampVar + "=" + stamp
	gobuild := exec.Command("go", "build", "-trimpath", "-ldflags="+ldflags, "-o", bin+string(filepath.Separator), "./cmd/"+name, "./cmd/"+name+"d")
	gobuild.Dir = module
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := gobuild.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	// The one-shot core: NAMEd without the built-in commands, MCP or the
	// daemon, in which NAME runs a command line of one extension command
	// when no daemon serves (docs/adr/0017-one-shot-core.md).
	oneshot := exec.Command("go", "build", "-trimpath", "-tags=rukh_oneshot", "-ldflags="+ldflags, "-o", filepath.Join(bin, name+"-oneshot"), "./cmd/"+name+"d")
	oneshot.Dir, oneshot.Env = module, gobuild.Env
	if out, err := oneshot.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags=rukh_oneshot: %v\n%s", err, out)
	}
	// The enforcement helper is C without libc, static too; for this
	// machine's architecture, as the Go binaries are.
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(sandbox.SourcePath)))
	if err != nil {
		return "", err
	}
	if err := sandbox.BuildSource(src, filepath.Join(bin, name+"-sandbox")); err != nil {
		return "", err
	}
	rukh := filepath.Join(bin, name)
	mods, err := linkedModules(module, name, gobuild.Env)
	if err != nil {
		return "", err
	}

	contents := files.Contents{}
	add := func(src, dst string, mode fs.FileMode) {
		contents = append(contents, &files.Content{
			Source: src, Destination: dst, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: o.MTime},
		})
	}
	add(rukh, "/usr/bin/"+name, 0o755)
	add(filepath.Join(bin, name+"d"), "/usr/bin/"+name+"d", 0o755)
	add(filepath.Join(bin, name+"-oneshot"), "/usr/bin/"+name+"-oneshot", 0o755)
	// The enforcement helper: the CLI finds it beside itself.
	add(filepath.Join(bin, name+"-sandbox"), "/usr/bin/"+name+"-sandbox", 0o755)

	units := filepath.Join(work, "units")
	if err := os.Mkdir(units, 0o755); err != nil {
		return "", err
	}
	for _, unit := range systemd.UnitNames {
		data, err := systemd.Units.ReadFile(unit)
		if err != nil {
			return "", err
		}
		unit = renamed(unit, name)
		if err := os.WriteFile(filepath.Join(units, unit), []byte(renamed(string(data), name)), 0o644); err != nil {
			return "", err
		}
		add(filepath.Join(units, unit), "/usr/lib/systemd/user/"+unit, 0o644)
	}

	completions := filepath.Join(work, "completions")
	if err := os.Mkdir(completions, 0o755); err != nil {
		return "", err
	}
	for _, c := range []struct{ shell, dst string }{
		{"bash", "/usr/share/bash-completion/completions/" + name},
		{"zsh", "/usr/share/zsh/vendor-completions/_" + name},
		{"fish", "/usr/share/fish/vendor_completions.d/" + name + ".fish"},
	} {
		src := filepath.Join(completions, c.shell)
		if err := completion(rukh, name, c.shell, filepath.Join(work, "home"), src); err != nil {
			return "", err
		}
		add(src, c.dst, 0o644)
	}

	man := filepath.Join(work, "man")
	pages, err := manPages(man, filepath.Join(root, "packaging", "man"), name, o.Version, o.MTime)
	if err != nil {
		return "", err
	}
	for _, p := range pages {
		add(filepath.Join(man, p), "/usr/share/man/man1/"+p, 0o644)
	}

	// /usr/share/doc/NAME: the copyright file and the changelog, which
	// Debian policy asks of every package (12.5, 12.7); and lintian's
	// overrides, for what it reports that the package does on purpose.
	docs := filepath.Join(work, "doc")
	if err := os.Mkdir(docs, 0o755); err != nil {
		return "", err
	}
	text, err := copyright(name, o.Version, mods)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(docs, "copyright"), []byte(text), 0o644); err != nil {
		return "", err
	}
	add(filepath.Join(docs, "copyright"), "/usr/share/doc/"+name+"/copyright", 0o644)
	log, err := gzipped([]byte(changelog(name, o.Version, o.Maintainer, gitDescribe(module), o.MTime)))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(docs, "changelog.gz"), log, 0o644); err != nil {
		return "", err
	}
	add(filepath.Join(docs, "changelog.gz"), "/usr/share/doc/"+name+"/"+changelogName(o.Version), 0o644)
	overrides, err := os.ReadFile(filepath.Join(root, "packaging", "lintian-overrides"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(docs, "overrides"), []byte(renamed(string(overrides), name)), 0o644); err != nil {
		return "", err
	}
	add(filepath.Join(docs, "overrides"), "/usr/share/lintian/overrides/"+name, 0o644)

	info := nfpm.WithDefaults(&nfpm.Info{
		Name:          name,
		Arch:          runtime.GOARCH,
		Platform:      "linux",
		Version:       o.Version,
		VersionSchema: "none", // o.Version is a Debian version already
		Section:       "utils",
		Priority:      "optional",
		Maintainer:    o.Maintainer,
		Description:   renamed(summary+"\n"+long, name),
		MTime:         o.MTime,
		// The bash completion is loaded by bash-completion; the other
		// shells need nothing.
		Overridables: nfpm.Overridables{Contents: contents, Recommends: []string{"bash-completion"}},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.OutDir, deb.Default.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := deb.Default.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}

// completion writes what `rukh completion SHELL` prints to dst. A
// throwaway RUKH_HOME makes sure it reads nothing of the builder's own.
func completion(rukh, name, shell, home, dst string) error {
	cmd := exec.Command(rukh, "completion", shell)
	cmd.Env = append(os.Environ(), paths.HomeEnv(name)+"="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s completion %s: %v\n%s", name, shell, err, stderr.Bytes())
	}
	if len(out) == 0 {
		return fmt.Errorf("%s completion %s printed nothing", name, shell)
	}
	return os.WriteFile(dst, out, 0o644)
}

// manPages writes a gzipped page for rukh and each of its built-in
// commands (rukh.1.gz, rukh-ext-install.1.gz, …) into dir and returns their
// names. The tree is the CLI's own (cli.NewRoot) plus cobra's completion
// command; extension commands are installed per user and are not in it.
//
// The pages in handwritten (rukh.1 with FILES, ENVIRONMENT and EXIT
// STATUS; rukhd.1, which the units name; rukh-sandbox.1, the enforcement
// helper's) replace or join the generated ones, with the version and date
// filled into their .TH line.
func manPages(dir, handwritten, name, version string, date time.Time) ([]string, error) {
	f := &cli.Factory{
		Name:    name,
		IO:      cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard},
		HomeEnv: paths.HomeEnv(name),
		Paths:   func() (paths.Paths, error) { return paths.Paths{}, errors.New("man pages never read the store") },
		Dir:     "/",
	}
	root := cli.NewRoot(f)
	root.InitDefaultCompletionCmd()
	var noAutoGen func(*cobra.Command)
	noAutoGen = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no build date in the page
		for _, sub := range c.Commands() {
			noAutoGen(sub)
		}
	}
	noAutoGen(root)
	raw := filepath.Join(dir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return nil, err
	}
	manual := renamed("Rukh Manual", name)
	header := &doc.GenManHeader{Section: "1", Date: &date, Source: name + " " + version, Manual: manual}
	if err := doc.GenManTree(root, header, raw); err != nil {
		return nil, err
	}
	own, err := filepath.Glob(filepath.Join(handwritten, "*.1"))
	if err != nil || len(own) == 0 {
		return nil, fmt.Errorf("no hand-written man pages in %s (%v)", handwritten, err)
	}
	for _, src := range own {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		th := fmt.Sprintf(`"%s" "%s %s" "%s"`, date.UTC().Format("Jan 2006"), name, version, manual)
		data = []byte(renamed(string(data), name))
		data = bytes.Replace(data, []byte(`"" "" "`+manual+`"`), []byte(th), 1)
		if err := os.WriteFile(filepath.Join(raw, renamed(filepath.Base(src), name)), data, 0o644); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(raw)
	if err != nil {
		return nil, err
	}
	var pages []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(raw, e.Name()))
		if err != nil {
			return nil, err
		}
		gz, err := gzipped(data)
		if err != nil {
			return nil, err
		}
		page := e.Name() + ".gz"
		if err := os.WriteFile(filepath.Join(dir, page), gz, 0o644); err != nil {
			return nil, err
		}
		pages = append(pages, page)
	}
	return pages, nil
}

// gzipped is data compressed as gzip -9n does: the best compression, and
// no name and no time in the header, so that the same tree gives the same
// bytes.
func gzipped(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// changelogName is the changelog's name in /usr/share/doc/NAME: a version
// without a Debian revision (no "-", what debVersion gives) is a native
// package's, whose changelog is changelog.gz; one with a revision (a
// -version 1.2.3-1) has the upstream changelog apart, and this one is
// changelog.Debian.gz (Debian policy 12.7).
func changelogName(version string) string {
	if strings.Contains(version, "-") {
		return "changelog.Debian.gz"
	}
	return "changelog.gz"
}

// changelog is the package's changelog: one entry, for this version,
// saying what it was built from, by the maintainer, at the package's time.
func changelog(name, version, maintainer, describe string, date time.Time) string {
	from := "sources without git"
	if describe != "" {
		from = "git describe " + describe
	}
	return fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * Built by mkdeb from %s.\n\n -- %s  %s\n",
		name, version, from, maintainer, date.UTC().Format(time.RFC1123Z))
}

// formatSuffixes follow "rukh" in the format identifiers, which keep it
// whatever the CLI's name: rukh.extension/2, rukh-extension.json,
// rukh.ipc/1, rukh-release.json and .sig, rukh.release/1,
// rukh.signature/1, the release sources' media types and annotations
// (vnd.rukh.release.v1, dev.rukh.release.package), and the channel's RUKH_IPC_FD, RUKH_IPC_TOKEN,
// RUKH_INVOCATION_ID and RUKH_COMMAND.
var formatSuffixes = []string{".extension/", "-extension.json", ".ipc/", "-release.", ".release/", ".release.", ".signature/",
	"_IPC_", "_INVOCATION_ID", "_COMMAND"}

// renamed is text with the reference CLI's name replaced by name, as
// spelt: rukh, Rukh (the product, capitalized) and RUKH (the variables'
// prefix, NAME_HOME), format identifiers aside.
func renamed(text, name string) string {
	if name == "rukh" {
		return text
	}
	title := strings.ToUpper(name[:1]) + name[1:]
	upper := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	var b strings.Builder
	for {
		i := strings.Index(strings.ToLower(text), "rukh")
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		word, rest := text[i:i+4], text[i+4:]
		keep := false
		for _, f := range formatSuffixes {
			keep = keep || strings.HasPrefix(strings.ToLower(rest), strings.ToLower(f))
		}
		switch {
		case keep:
			b.WriteString(word)
		case word == "RUKH":
			b.WriteString(upper)
		case word == "Rukh":
			b.WriteString(title)
		default:
			b.WriteString(name)
		}
		text = rest
	}
}

// gitVersion is the Debian version of the checkout: debVersion of
// `git describe --tags --always --dirty`, or 0.0.0~dev without git.
func gitVersion(root string) string {
	describe := gitDescribe(root)
	if describe == "" {
		return "0.0.0~dev"
	}
	return debVersion(describe)
}

// gitDescribe is `git describe --tags --always --dirty` of the checkout,
// or "" without git.
func gitDescribe(root string) string {
	cmd := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

var describeRE = regexp.MustCompile(`^v?([0-9]+(?:\.[0-9]+)+)(?:-([0-9A-Za-z.]+))?(?:-([0-9]+)-g([0-9a-f]+))?$`)

// debVersion turns git describe output into a Debian version that sorts
// as the commits do:
//
//	v1.2.3            1.2.3
//	v1.2.3-rc.1       1.2.3~rc.1          (before 1.2.3)
//	v1.2.3-4-gabc1234 1.2.3+4.gabc1234    (4 commits after v1.2.3)
//	…-dirty           1.2.3+0.dirty, 1.2.3+4.gabc1234.dirty
//	abc1234[-dirty]   0.0.0~dev+abc1234[.dirty] (no tag yet: a bare hash)
func debVersion(describe string) string {
	base, dirty := strings.CutSuffix(describe, "-dirty")
	if m := describeRE.FindStringSubmatch(base); m != nil {
		v := m[1]
		if m[2] != "" {
			v += "~" + m[2]
		}
		if m[3] != "" {
			v += "+" + m[3] + ".g" + m[4]
		} else if dirty {
			v += "+0" // uncommitted changes on the tag: before its next commit
		}
		if dirty {
			v += ".dirty"
		}
		return v
	}
	// A bare hash, or a tag that is no version: keep what a Debian version
	// allows after the +.
	clean := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '~' {
			return r
		}
		return '.'
	}, base)
	if clean == "" {
		return "0.0.0~dev"
	}
	if dirty {
		clean += ".dirty"
	}
	return "0.0.0~dev+" + clean
}

// stampVar is the build identity's source stamp (internal/buildid).
const stampVar = "github.com/rukh-cli/rukh/internal/buildid.stamp"

// sourceStamp is the Makefile's STAMP: the first 16 hex digits of the
// SHA-256 of every Go source, go.mod and go.sum git knows of (tracked or
// untracked, not ignored), concatenated in byte order of their paths. A
// rukh built by `make build` and the packaged rukhd of the same sources
// are then one build.
func sourceStamp(root string) (string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "-co", "--exclude-standard", "*.go", "go.mod", "go.sum")
	cmd.Dir = root
	out, _ := cmd.Output() // without git, no files: the Makefile's STAMP then hashes nothing too
	var names []string
	if len(out) > 0 {
		names = strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(root, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted but not yet committed: cat skips it too
		} else if err != nil {
			return "", err
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// sourceTime is the time stamped on the package's files and man pages:
// SOURCE_DATE_EPOCH when set, else the time of the checked-out commit, so
// that one commit gives one package; now only without git.
func sourceTime(root string) time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	cmd := exec.Command("git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now().UTC().Truncate(time.Second)
}
