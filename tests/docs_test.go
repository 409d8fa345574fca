package tests

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The repository stands alone: its code and documents point only into
// themselves. docs/architecture.md is the reference that comments and
// documents cite ("docs/reference.md §3", "invariant I10").

// outsideDocs are names of documents that are not in this repository and
// must not be cited. They are spelled in pieces so that this file does not
// cite them itself.
var outsideDocs = []string{
	"DESIGN" + " §", "DESIGN" + " I", "DESIGN" + ".md",
	"Shared" + "OS", "stitch" + "kit",
}

// repoRoot is the module root, one directory above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	return root
}

// sourceFiles returns every .go, .md, .mjs, .py and .sh file of the
// repository, and every program in a bin directory, relative
// to root, leaving out node_modules, testdata and hidden directories
// (.git, and the throwaway home of `make demo`).
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		// The example extensions' programs cite the documents too.
		inBin := filepath.Base(filepath.Dir(p)) == "bin"
		if ext := filepath.Ext(p); ext == ".go" || ext == ".md" || ext == ".mjs" || ext == ".py" || ext == ".sh" || inBin {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("only %d .go and .md files found under %s; the walk is broken", len(files), root)
	}
	return files
}

var (
	// A relative path that climbs: "../x" at the start of a word, a
	// string, a code span or a link target (not inside a longer path).
	climbing = regexp.MustCompile("(?:^|[\\s\"'`(\\[<=])((?:\\.\\./)+[^\\s\"'`)\\]>#,;:]*)")
	// A Markdown link target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// inside reports whether path p, relative to the directory dir of a
// file (both relative to root), stays inside the repository.
func inside(dir, p string) bool {
	joined := filepath.Join(dir, filepath.FromSlash(p))
	return joined != ".." && !strings.HasPrefix(joined, ".."+string(filepath.Separator))
}

// TestDocsStandAlone fails when a .go or .md file cites a document that is
// not in the repository or points to a path outside it, and when a
// Markdown link into the repository leads nowhere.
func TestDocsStandAlone(t *testing.T) {
	root := repoRoot(t)
	for _, rel := range sourceFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(rel)
		for n, line := range strings.Split(string(data), "\n") {
			at := func(format string, args ...any) {
				t.Errorf("%s:%d: "+format, append([]any{rel, n + 1}, args...)...)
			}
			for _, name := range outsideDocs {
				if strings.Contains(line, name) {
					at("cites %q, which is not in this repository; point into docs/architecture.md instead", name)
				}
			}
			for _, m := range climbing.FindAllStringSubmatch(line, -1) {
				if !inside(dir, m[1]) {
					at("%q leads outside the repository", m[1])
				}
			}
			if filepath.Ext(rel) != ".md" {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				switch {
				case strings.HasPrefix(target, "/"):
					at("link %q is an absolute path; link relative to the file", m[1])
				case !inside(dir, target):
					at("link %q leads outside the repository", m[1])
				default:
					if _, err := os.Stat(filepath.Join(root, dir, filepath.FromSlash(target))); err != nil {
						at("link %q leads nowhere: %v", m[1], err)
					}
				}
			}
		}
	}
}

var (
	sectionHeading   = regexp.MustCompile(`(?m)^#{2,3} (\d+(?:\.\d+)?)\.? `)
	invariantHeading = regexp.MustCompile(`(?m)^### (I\d+)\. `)
	// "docs/reference.md §3", "[`architecture.md`](architecture.md) §2".
	sectionRef = regexp.MustCompile(`(architecture|reference)\.md\)? §(\d+(?:\.\d+)?)`)
	// "invariant I10", "invariants I2 and I5", "(I8)".
	invariantRef = regexp.MustCompile(`\bI(\d+)\b`)
	localRef     = regexp.MustCompile(`(^|[^)]) §(\d+(?:\.\d+)?)`)
)

// TestDocsReferences keeps the references into the numbered documents
// pointing at something: every "architecture.md §n" and "reference.md §n"
// names a numbered section of that document, every bare "§n" inside one
// names one of its own, and docs/invariants.md defines exactly the
// invariants I1 … I12 that "invariant In" may name.
func TestDocsReferences(t *testing.T) {
	root := repoRoot(t)
	sections := map[string]map[string]bool{}
	for _, name := range []string{"architecture", "reference"} {
		doc, err := os.ReadFile(filepath.Join(root, "docs", name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		sections[name] = map[string]bool{}
		for _, m := range sectionHeading.FindAllStringSubmatch(string(doc), -1) {
			sections[name][m[1]] = true
		}
		for _, m := range localRef.FindAllStringSubmatch(string(doc), -1) {
			if !sections[name][m[2]] {
				t.Errorf("docs/%s.md refers to §%s, which it does not have", name, m[2])
			}
		}
	}
	inv, err := os.ReadFile(filepath.Join(root, "docs", "invariants.md"))
	if err != nil {
		t.Fatal(err)
	}
	var invariants []string
	for _, m := range invariantHeading.FindAllStringSubmatch(string(inv), -1) {
		invariants = append(invariants, m[1])
	}
	var want []string
	for i := 1; i <= 12; i++ {
		want = append(want, "I"+strconv.Itoa(i))
	}
	if !slices.Equal(invariants, want) {
		t.Errorf("docs/invariants.md defines invariants %v; want %v, in order", invariants, want)
	}
	for _, rel := range sourceFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sectionRef.FindAllStringSubmatch(string(data), -1) {
			if !sections[m[1]][m[2]] {
				t.Errorf("%s refers to docs/%s.md §%s, which does not exist", rel, m[1], m[2])
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "invariant") {
				continue
			}
			for _, m := range invariantRef.FindAllStringSubmatch(line, -1) {
				if !slices.Contains(invariants, "I"+m[1]) {
					t.Errorf("%s names invariant I%s, which docs/invariants.md does not define", rel, m[1])
				}
			}
		}
	}
}

// TestArchitecturePackages keeps the package table of docs/architecture.md
// true: exactly the packages of this module, each with the packages of
// this module it imports; and the map itself short.
func TestArchitecturePackages(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc), "\n"); n > 300 {
		t.Errorf("docs/architecture.md has %d lines; it is a map (at most about 300): move detail to reference.md, invariants.md or limits.md", n)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9/-]+)` \\| .* \\| ([a-z0-9/, -]*) \\|$")
	table := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		table[m[1]] = strings.TrimSpace(m[2])
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/rukh-cli/rukh/"
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		seen[pkg] = true
		var imports []string
		for _, imp := range fields[1:] {
			if rest, ok := strings.CutPrefix(imp, mod); ok {
				imports = append(imports, rest)
			}
		}
		slices.Sort(imports)
		got, ok := table[pkg]
		switch {
		case !ok:
			t.Errorf("package %s is not in the table of docs/architecture.md", pkg)
		case got != strings.Join(imports, ", "):
			t.Errorf("docs/architecture.md says %s imports %q; it imports %q", pkg, got, strings.Join(imports, ", "))
		}
	}
	for pkg := range table {
		if !seen[pkg] {
			t.Errorf("docs/architecture.md lists %s, which is not a package of this module", pkg)
		}
	}
}
