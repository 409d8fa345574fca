package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/cli"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/systemd"
	"github.com/rukh-cli/rukh/thin"
	"github.com/spf13/cobra"
)

// need returns the path of a tool the test cannot do without: missing, it
// fails the test in CI and skips it elsewhere.
func need(t *testing.T, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing (%v): .ci/run must install %s", tool, err, pkg)
		}
		t.Skipf("%s is missing (%v); `apt-get install %s` enables this test", tool, err, pkg)
	}
	return p
}

func TestDebVersion(t *testing.T) {
	for _, c := range []struct{ describe, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2", "1.2"},
		{"v1.2.3-dirty", "1.2.3+0.dirty"},
		{"v1.2.3-rc.1", "1.2.3~rc.1"},
		{"v1.2.3-4-gabc1234", "1.2.3+4.gabc1234"},
		{"v1.2.3-4-gabc1234-dirty", "1.2.3+4.gabc1234.dirty"},
		{"v1.2.3-rc.1-4-gabc1234", "1.2.3~rc.1+4.gabc1234"},
		{"abc1234", "0.0.0~dev+abc1234"},
		{"1234567", "0.0.0~dev+1234567"}, // an all-digit hash is no tag
		{"abc1234-dirty", "0.0.0~dev+abc1234.dirty"},
		{"release_2-1-gabc1234", "0.0.0~dev+release.2.1.gabc1234"},
		{"", "0.0.0~dev"},
	} {
		if got := debVersion(c.describe); got != c.want {
			t.Errorf("debVersion(%q) = %q, want %q", c.describe, got, c.want)
		}
	}

	// Valid Debian versions that sort as their commits do.
	dpkg := need(t, "dpkg", "dpkg")
	order := []string{"0.0.0~dev", "0.0.0~dev+abc1234", "0.0.0~dev+abc1234.dirty", "1.2.3~rc.1",
		"1.2.3~rc.1+4.gabc1234", "1.2.3", "1.2.3+0.dirty", "1.2.3+4.gabc1234", "1.2.3+4.gabc1234.dirty", "1.2.3+10.g0123456", "1.10.0"}
	for i := 1; i < len(order); i++ {
		out, err := exec.Command(dpkg, "--compare-versions", order[i-1], "lt", order[i]).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("dpkg --compare-versions %s lt %s: %v %s", order[i-1], order[i], err, out)
		}
	}
}

// TestStamp checks that mkdeb computes the source stamp as the Makefile
// does, so that `make build` binaries and the package's agree on what is
// one build.
func TestStamp(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	mk := need(t, "make", "make")
	var got, want string
	// Both read the tree; a file saved in between (by someone working in
	// it) makes them differ, so a mismatch is tried again.
	for try := 0; try < 3; try++ {
		out, err := exec.Command(mk, "-s", "-C", root, "--eval", "print-stamp: ; @echo $(STAMP)", "print-stamp").Output()
		if err != nil {
			t.Fatalf("make: %v", err)
		}
		if got, err = sourceStamp(root); err != nil {
			t.Fatal(err)
		}
		if want = strings.TrimSpace(string(out)); got == want {
			break
		}
	}
	if got != want || len(got) != 16 {
		t.Errorf("sourceStamp = %q, the Makefile's STAMP = %q", got, want)
	}
}

// debArch is the Debian name of the architecture mkdeb builds for.
func debArch() string {
	switch runtime.GOARCH {
	case "386":
		return "i386"
	case "ppc64le":
		return "ppc64el"
	}
	return runtime.GOARCH
}

// manPageNames are the pages the CLI's tree should give: one for rukh and
// one per available built-in command, completion included.
func manPageNames(t *testing.T) []string {
	root := cli.NewRoot(&cli.Factory{Name: "rukh"})
	root.InitDefaultCompletionCmd()
	var names []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		names = append(names, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1.gz")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	names = append(names, "rukhd.1.gz", "rukh-oneshot.1.gz", "rukh-sandbox.1.gz") // hand-written (packaging/man), as rukh.1 is
	slices.Sort(names)
	return names
}

// TestDeb builds the package as `make deb` does, unpacks it with dpkg-deb
// and checks its control fields, its layout and modes, that its binaries
// are static, stripped and run, that the units, completions and man pages
// are the ones the tree gives, that the copyright file and changelog are
// there and valid, that lintian finds nothing (but what
// packaging/lintian-overrides says is deliberate), and that
// systemd-analyze verify accepts the installed units with the installed
// man page (Documentation=man:rukhd(1)).
func TestDeb(t *testing.T) {
	dpkgDeb := need(t, "dpkg-deb", "dpkg")
	root := filepath.Join("..", "..", "..")
	// The version make deb would use, taken once: others may commit while
	// the test runs.
	version := gitVersion(root)
	if out, err := exec.Command(need(t, "dpkg", "dpkg"), "--compare-versions", version, "eq", version).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("git describe gives %q, not a valid Debian version: %v %s", version, err, out)
	}
	stamp, err := sourceStamp(root)
	if err != nil {
		t.Fatal(err)
	}
	deb, err := build(options{Root: root, OutDir: t.TempDir(), Version: version, Stamp: stamp})
	if err != nil {
		t.Fatal(err)
	}
	if want := "rukh_" + version + "_" + debArch() + ".deb"; filepath.Base(deb) != want {
		t.Errorf("package file %s, want %s", filepath.Base(deb), want)
	}

	t.Run("control", func(t *testing.T) {
		control, err := exec.Command(dpkgDeb, "-I", deb, "control").Output()
		if err != nil {
			t.Fatalf("dpkg-deb -I: %v", err)
		}
		fields := map[string]string{}
		var last string
		sc := bufio.NewScanner(bytes.NewReader(control))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, " ") {
				fields[last] += "\n" + line[1:]
				continue
			}
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				t.Fatalf("control: bad line %q", line)
			}
			fields[k], last = v, k
		}
		for k, want := range map[string]string{
			"Package": "rukh", "Version": version, "Architecture": debArch(),
			"Section": "utils", "Priority": "optional", "Maintainer": defaultMaintainer,
			"Recommends": "bash-completion", // the bash completion needs it
		} {
			if fields[k] != want {
				t.Errorf("control %s: %q, want %q", k, fields[k], want)
			}
		}
		if !strings.HasPrefix(fields["Description"], summary+"\n") || !strings.Contains(fields["Description"], "rukhd.socket") {
			t.Errorf("control Description: %q", fields["Description"])
		}
		if fields["Installed-Size"] == "" {
			t.Errorf("control has no Installed-Size")
		}
		// The binaries are static (checked below): nothing to depend on.
		for _, k := range []string{"Depends", "Pre-Depends"} {
			if v, ok := fields[k]; ok {
				t.Errorf("control %s: %q, want none", k, v)
			}
		}
	})

	listing, err := exec.Command(dpkgDeb, "-c", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb -c: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(listing)), "\n") {
		if f := strings.Fields(line); len(f) < 2 || f[1] != "root/root" {
			t.Errorf("not owned by root/root: %s", line)
		}
	}

	dir := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-x", deb, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	got := map[string]fs.FileMode{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if info.Mode().Perm() != 0o755 {
				t.Errorf("directory /%s: mode %v, want 0755", rel, info.Mode().Perm())
			}
			return nil
		}
		if !info.Mode().IsRegular() {
			t.Errorf("/%s is not a regular file: %v", rel, info.Mode())
		}
		got["/"+filepath.ToSlash(rel)] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{
		"/usr/bin/rukh":                                  0o755,
		"/usr/bin/rukhd":                                 0o755,
		"/usr/bin/rukh-oneshot":                          0o755,
		"/usr/bin/rukh-sandbox":                          0o755,
		"/usr/lib/systemd/user/rukhd.socket":             0o644,
		"/usr/lib/systemd/user/rukhd.service":            0o644,
		"/usr/lib/systemd/user/rukh-mcp-http@.service":   0o644,
		"/usr/share/bash-completion/completions/rukh":    0o644,
		"/usr/share/zsh/vendor-completions/_rukh":        0o644,
		"/usr/share/fish/vendor_completions.d/rukh.fish": 0o644,
		"/usr/share/doc/rukh/copyright":                  0o644,
		"/usr/share/doc/rukh/changelog.gz":               0o644, // a native package's: the version has no revision
		"/usr/share/lintian/overrides/rukh":              0o644,
	}
	pages := manPageNames(t)
	for _, p := range pages {
		want["/usr/share/man/man1/"+p] = 0o644
	}
	for _, p := range []string{"rukh.1.gz", "rukh-ext-install.1.gz", "rukh-trust-add.1.gz", "rukh-profile-apply.1.gz", "rukh-mcp.1.gz", "rukh-completion-bash.1.gz"} {
		if _, ok := want["/usr/share/man/man1/"+p]; !ok {
			t.Errorf("the CLI tree gives no man page %s", p)
		}
	}
	for path, mode := range want {
		if m, ok := got[path]; !ok {
			t.Errorf("missing %s", path)
		} else if m != mode {
			t.Errorf("%s: mode %v, want %v", path, m, mode)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("unexpected file %s", path)
		}
	}
	file := func(path string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	home := t.TempDir() // a RUKH_HOME, so the packaged rukh never reads the tester's own
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "usr", "bin", name), args...)
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		return string(out)
	}

	t.Run("binaries", func(t *testing.T) {
		for _, name := range []string{"rukh", "rukhd", "rukh-oneshot", "rukh-sandbox"} {
			f, err := elf.Open(filepath.Join(dir, "usr", "bin", name))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("/usr/bin/%s is dynamically linked; the package declares no Depends", name)
				}
			}
			for _, s := range f.Sections {
				if s.Type == elf.SHT_SYMTAB || strings.HasPrefix(s.Name, ".debug") {
					t.Errorf("/usr/bin/%s has section %s: it is not stripped", name, s.Name)
				}
			}
			f.Close()
		}
		if out := run("rukh", "version"); !strings.HasPrefix(out, "rukh ") {
			t.Errorf("rukh version: %q", out)
		}
		// rukhd carries the source stamp (internal/buildid), as rukh does.
		if out := run("rukhd", "--version"); !strings.HasPrefix(out, "rukhd ") || !strings.HasSuffix(out, "/"+stamp+"\n") {
			t.Errorf("rukhd --version: %q, want a build id with the source stamp %s", out, stamp)
		}
	})

	t.Run("units", func(t *testing.T) {
		for _, unit := range systemd.UnitNames {
			src, err := systemd.Units.ReadFile(unit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(file("usr/lib/systemd/user/"+unit), src) {
				t.Errorf("/usr/lib/systemd/user/%s differs from systemd/%s", unit, unit)
			}
		}
	})

	t.Run("completions", func(t *testing.T) {
		for _, c := range []struct{ shell, path, head string }{
			{"bash", "usr/share/bash-completion/completions/rukh", "# bash completion V2 for rukh"},
			{"zsh", "usr/share/zsh/vendor-completions/_rukh", "#compdef rukh"},
			{"fish", "usr/share/fish/vendor_completions.d/rukh.fish", "# fish completion for rukh"},
		} {
			data := file(c.path)
			if !bytes.HasPrefix(data, []byte(c.head)) {
				t.Errorf("/%s does not start with %q", c.path, c.head)
			}
			if string(data) != run("rukh", "completion", c.shell) {
				t.Errorf("/%s is not what the packaged `rukh completion %s` prints", c.path, c.shell)
			}
		}
	})

	t.Run("man pages", func(t *testing.T) {
		for _, p := range pages {
			zr, err := gzip.NewReader(bytes.NewReader(file("usr/share/man/man1/" + p)))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			page, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			th := `.TH "` + strings.ToUpper(strings.TrimSuffix(p, ".1.gz")) + `" "1"`
			if !bytes.HasPrefix(page, []byte(".nh\n"+th)) {
				t.Errorf("%s does not start with %s: %.80q", p, th, page)
			}
			if !bytes.Contains(page, []byte("rukh "+version)) {
				t.Errorf("%s does not name rukh %s", p, version)
			}
			if p == "rukh.1.gz" || p == "rukhd.1.gz" {
				for _, sect := range []string{".SH DESCRIPTION", ".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH SEE ALSO"} {
					if !bytes.Contains(page, []byte(sect)) {
						t.Errorf("%s has no %s section", p, sect)
					}
				}
			}
			if p == "rukh-sandbox.1.gz" || p == "rukh-oneshot.1.gz" {
				for _, sect := range []string{".SH DESCRIPTION", ".SH EXIT STATUS", ".SH SEE ALSO"} {
					if !bytes.Contains(page, []byte(sect)) {
						t.Errorf("%s has no %s section", p, sect)
					}
				}
			}
			if p == "rukh.1.gz" {
				env := section(string(page), "ENVIRONMENT")
				for _, v := range []string{paths.HomeEnv("rukh"), thin.AutoStartEnv("rukh")} {
					if !strings.Contains(env, "\n.B "+v+"\n") {
						t.Errorf("rukh.1's ENVIRONMENT does not document %s:\n%s", v, env)
					}
				}
			}
		}
	})

	t.Run("copyright", func(t *testing.T) {
		checkCopyright(t, string(file("usr/share/doc/rukh/copyright")), filepath.Join(dir, "usr", "bin"), []string{"rukh", "rukhd"})
	})

	t.Run("changelog", func(t *testing.T) {
		checkChangelog(t, file("usr/share/doc/rukh/changelog.gz"), "rukh", version)
	})

	t.Run("lintian", func(t *testing.T) {
		checkLintian(t, deb)
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		sa := need(t, "systemd-analyze", "systemd")
		args := []string{"verify", "--user"}
		if _, err := exec.LookPath("man"); err != nil {
			// verify runs man for Documentation=; without man-db it cannot.
			t.Logf("man is missing: not checking Documentation=man:rukhd(1)")
			args = append(args, "--man=no")
		}
		tmp := t.TempDir()
		for _, d := range []string{"units", "run", "home"} {
			if err := os.Mkdir(filepath.Join(tmp, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		for _, unit := range []string{"rukhd.socket", "rukhd.service"} {
			// ExecStart=/usr/bin/rukhd must exist: point it at the
			// unpacked one.
			text := strings.ReplaceAll(string(file("usr/lib/systemd/user/"+unit)), "/usr/bin/rukhd", filepath.Join(dir, "usr", "bin", "rukhd"))
			p := filepath.Join(tmp, "units", unit)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, p)
		}
		cmd := exec.Command(sa, args...)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+filepath.Join(tmp, "run"), "HOME="+filepath.Join(tmp, "home"),
			"XDG_CONFIG_HOME="+filepath.Join(tmp, "home", ".config"), "MANPATH="+filepath.Join(dir, "usr", "share", "man"))
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "rukhd") {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		} else if len(out) > 0 {
			t.Logf("systemd-analyze verify (not about the units): %s", out)
		}
	})
}

// TestDebEmbedder builds the package of the example embedder acme
// (examples/acme, -name acme -module), at a version with a Debian
// revision: its binaries, units, completions and man pages are acme's,
// nothing it installs names rukh, in a path or in a text, format
// identifiers and the copyright file aside, its changelog is
// changelog.Debian.gz, and lintian reports nothing on it.
func TestDebEmbedder(t *testing.T) {
	dpkgDeb := need(t, "dpkg-deb", "dpkg")
	root := filepath.Join("..", "..", "..")
	deb, err := build(options{Root: root, Name: "acme", Module: filepath.Join(root, "examples", "acme"), OutDir: t.TempDir(), Version: "1.2.0-1", Stamp: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "acme_1.2.0-1_" + debArch() + ".deb"; filepath.Base(deb) != want {
		t.Errorf("package file %s, want %s", filepath.Base(deb), want)
	}
	control, err := exec.Command(dpkgDeb, "-I", deb, "control").Output()
	if err != nil {
		t.Fatalf("dpkg-deb -I: %v", err)
	}
	if n := rukhsIn(string(control)); n > 0 || !strings.Contains(string(control), "Package: acme") {
		t.Errorf("control names rukh %d times:\n%s", n, control)
	}
	dir := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-x", deb, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	var paths []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = "/" + filepath.ToSlash(rel)
		paths = append(paths, rel)
		if strings.Contains(rel, "rukh") {
			t.Errorf("the package installs %s", rel)
		}
		if strings.HasPrefix(rel, "/usr/bin/") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			if data, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		if n := rukhsIn(string(data)); n > 0 && rel != "/usr/share/doc/acme/copyright" { // which names the modules linked in, rukh's among them
			t.Errorf("%s names rukh %d times", rel, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/usr/bin/acme", "/usr/bin/acmed", "/usr/bin/acme-oneshot", "/usr/bin/acme-sandbox",
		"/usr/lib/systemd/user/acmed.socket", "/usr/lib/systemd/user/acmed.service", "/usr/lib/systemd/user/acme-mcp-http@.service",
		"/usr/share/bash-completion/completions/acme", "/usr/share/man/man1/acme.1.gz", "/usr/share/man/man1/acmed.1.gz",
		"/usr/share/man/man1/acme-sandbox.1.gz", "/usr/share/doc/acme/copyright", "/usr/share/doc/acme/changelog.Debian.gz", // a version with a revision
		"/usr/share/lintian/overrides/acme"} {
		if !slices.Contains(paths, want) {
			t.Errorf("the package has no %s; it has %v", want, paths)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "usr", "bin", "acme"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "acme ") {
		t.Errorf("the packaged acme version: %v\n%s", err, out)
	}
	read := func(rel string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(read("usr/share/man/man1/acme.1.gz")))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if env := section(string(page), "ENVIRONMENT"); !strings.Contains(env, "\n.B ACME_DAEMON\n") || !strings.Contains(env, "\n.B ACME_HOME\n") {
		t.Errorf("acme.1's ENVIRONMENT does not document ACME_DAEMON and ACME_HOME:\n%s", env)
	}
	checkCopyright(t, string(read("usr/share/doc/acme/copyright")), filepath.Join(dir, "usr", "bin"), []string{"acme", "acmed"})
	checkChangelog(t, read("usr/share/doc/acme/changelog.Debian.gz"), "acme", "1.2.0-1")
	checkLintian(t, deb)
}

// section is the text of a man page's section, from its .SH line to the
// next one.
func section(page, name string) string {
	_, rest, ok := strings.Cut(page, "\n.SH "+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n.SH ")
	return "\n" + body + "\n"
}

// checkCopyright checks a package's copyright file: the machine-readable
// format (DEP-5) with its Format line, a Files: * paragraph for the CLI's
// own code, and a paragraph with a Copyright and a License for Go's
// standard library and for every module linked into the binaries, as
// their build information lists them (not as mkdeb's go list did).
func checkCopyright(t *testing.T, text, bin string, binaries []string) {
	t.Helper()
	paras := strings.Split(text, "\n\n")
	if !strings.HasPrefix(paras[0], "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") {
		t.Errorf("copyright: not the machine-readable format:\n%.200s", text)
	}
	files := map[string]map[string]string{} // Files → field → value
	for _, p := range paras[1:] {
		fields := map[string]string{}
		var last string
		for _, line := range strings.Split(strings.TrimSpace(p), "\n") {
			if strings.HasPrefix(line, " ") {
				fields[last] += "\n" + line[1:]
				continue
			}
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				t.Fatalf("copyright: bad line %q in\n%s", line, p)
			}
			fields[k], last = v, k
		}
		if fields["Copyright"] == "" || fields["License"] == "" {
			t.Errorf("copyright: a paragraph without Copyright or License:\n%s", p)
		}
		files[fields["Files"]] = fields
	}
	if files["*"] == nil {
		t.Errorf("copyright: no Files: * paragraph for the CLI's own code")
	}
	want := map[string]bool{}
	for _, b := range binaries {
		info, err := buildinfo.ReadFile(filepath.Join(bin, b))
		if err != nil {
			t.Fatal(err)
		}
		want["std@"+info.GoVersion+"/*"] = true
		for _, d := range info.Deps {
			if d.Replace != nil && !strings.HasPrefix(d.Replace.Path, ".") && !strings.HasPrefix(d.Replace.Path, "/") { // not a directory
				want[d.Replace.Path+"@"+d.Replace.Version+"/*"] = true
			} else {
				want[d.Path+"@"+d.Version+"/*"] = true
			}
		}
	}
	for f := range want {
		if files[f] == nil {
			t.Errorf("copyright: no paragraph Files: %s, a module linked into %v", f, binaries)
		}
	}
	if v := files["github.com/modelcontextprotocol/go-sdk@v1.8.0/*"]; v != nil && !strings.HasPrefix(v["License"], "Apache-2.0 and MIT\n") {
		t.Errorf("copyright: the MCP Go SDK's License: %.40q, want Apache-2.0 and MIT", v["License"])
	}
}

// checkChangelog checks a package's gzipped changelog: compressed as
// gzip -9n (the best compression, no name, no time), and one entry for
// the package's version that dpkg-parsechangelog reads.
func checkChangelog(t *testing.T, gz []byte, name, version string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || len(gz) < 10 || gz[8] != 2 {
		t.Errorf("changelog: gzip header with name %q, time %v, XFL %d; want gzip -9n's", zr.Name, zr.ModTime, gz[8])
	}
	cmd := exec.Command(need(t, "dpkg-parsechangelog", "dpkg-dev"), "-l", "-")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-parsechangelog: %v\n%s\n%s", err, out, text)
	}
	for _, f := range []string{"Source: " + name, "Version: " + version, "Distribution: unstable", "Maintainer: "} {
		if !strings.Contains(string(out), "\n"+f) && !strings.HasPrefix(string(out), f) {
			t.Errorf("dpkg-parsechangelog: no %q in\n%s", f, out)
		}
	}
	if bytes.Contains(out, []byte("warning")) {
		t.Errorf("dpkg-parsechangelog warns:\n%s", out)
	}
}

// checkLintian runs lintian on the package and fails on every error and
// warning it reports: what the package does on purpose is overridden in
// packaging/lintian-overrides, which says why.
func checkLintian(t *testing.T, deb string) {
	t.Helper()
	cmd := exec.Command(need(t, "lintian", "lintian"), "--tag-display-limit", "0", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var tags []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "W: ") {
			tags = append(tags, line)
		}
	}
	if len(tags) > 0 || err != nil {
		t.Errorf("lintian %s: %v\n%s\n%s", filepath.Base(deb), err, strings.Join(tags, "\n"), stderr.Bytes())
	}
}

// rukhsIn counts the names rukh in text that are not format identifiers.
func rukhsIn(text string) int {
	n := 0
	lower := strings.ToLower(text)
	for i := strings.Index(lower, "rukh"); i >= 0; i = strings.Index(lower, "rukh") {
		rest := lower[i+4:]
		format := false
		for _, f := range formatSuffixes {
			format = format || strings.HasPrefix(rest, strings.ToLower(f))
		}
		if !format {
			n++
		}
		lower = rest
	}
	return n
}
