package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// IgnoreName is the file at the root of a working release directory that
// lists what is not part of the release (docs/releases.md, "What a
// release holds").
const IgnoreName = ".rukhignore"

// MaxIgnoreBytes bounds IgnoreName.
const MaxIgnoreBytes = 64 << 10

// DefaultIgnore are the patterns every working directory ignores before
// the lines of its own IgnoreName (which may re-include one with "!"):
// version control, editors' and the system's litter, Python's byte code,
// a Python virtual environment and Go workspace files (they name paths
// of the author's machine), a .env file (where secrets live) and the
// ignore file itself. Written in IgnoreName's syntax.
var DefaultIgnore = []string{
	".git", ".gitignore", ".gitattributes", ".gitmodules",
	".hg", ".hgignore", ".svn", ".bzr",
	".DS_Store", "*.swp", "*.swo", "*~", ".#*", `\#*#`,
	"__pycache__/", "*.pyc", ".venv/",
	"go.work", "go.work.sum",
	".env",
	"/" + IgnoreName,
}

// ignoreRule is one pattern of an ignore list.
type ignoreRule struct {
	pattern  string // path.Match syntax, without the "!", leading or trailing "/"
	negate   bool   // "!": a match re-includes
	dirOnly  bool   // a trailing "/": matches directories only
	anchored bool   // a "/" at the start or inside: matched against the whole path
}

// ignorer decides which paths of a working directory are left out.
type ignorer struct{ rules []ignoreRule }

var defaultRules = func() []ignoreRule {
	rules, err := parseIgnore([]byte(strings.Join(DefaultIgnore, "\n")))
	if err != nil {
		panic("trust: DefaultIgnore: " + err.Error())
	}
	return rules
}()

// ignored reports whether the release path p (a directory if isDir) is
// left out: the last rule that matches decides. The descriptor at the
// root is never left out.
func (ig *ignorer) ignored(p string, isDir bool) bool {
	if ig == nil || p == descriptor.FileName {
		return false
	}
	out := false
	for _, r := range ig.rules {
		if r.dirOnly && !isDir {
			continue
		}
		subject := p
		if !r.anchored {
			subject = path.Base(p)
		}
		if ok, _ := path.Match(r.pattern, subject); ok {
			out = !r.negate
		}
	}
	return out
}

// Ignores returns which paths of the working directory dir its ignore
// list leaves out (the defaults, then dir's IgnoreName), exactly as
// BuildManifest leaves them out: p is slash-separated and relative to
// dir. A bad list is bad_ignore_file, naming the line.
func Ignores(dir string) (func(p string, isDir bool) bool, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open release directory: %w", err)
	}
	defer root.Close()
	ig, err := loadIgnore(root)
	if err != nil {
		return nil, err
	}
	return ig.ignored, nil
}

// loadIgnore reads the ignore list of the working directory at root: the
// defaults, then root's IgnoreName if it has one. A bad list is
// bad_ignore_file, naming the line.
func loadIgnore(root *os.Root) (*ignorer, error) {
	ig := &ignorer{rules: defaultRules}
	fi, err := root.Lstat(IgnoreName)
	if errors.Is(err, fs.ErrNotExist) {
		return ig, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreName, err)
	}
	if fi.IsDir() {
		return nil, refuse(CodeBadIgnoreFile, IgnoreName, "is a directory; it must be a file of patterns, one a line")
	}
	if e := checkFileMode(IgnoreName, fi.Mode()); e != nil {
		return nil, e
	}
	if fi.Size() > MaxIgnoreBytes {
		return nil, refuse(CodeBadIgnoreFile, IgnoreName, "file is %d bytes; the limit is %d", fi.Size(), MaxIgnoreBytes)
	}
	var buf strings.Builder
	if _, err := hashFile(root, IgnoreName, fi, &buf); err != nil {
		return nil, err
	}
	rules, err := parseIgnore([]byte(buf.String()))
	if err != nil {
		return nil, err
	}
	ig.rules = append(append([]ignoreRule{}, defaultRules...), rules...)
	return ig, nil
}

// parseIgnore reads ignore patterns, one a line (see docs/releases.md):
// blank lines and lines starting with "#" are skipped, leading and
// trailing white space is removed; "!" negates, a trailing "/" matches
// directories only, a "/" at the start or inside anchors the pattern to
// the root, and the rest is path.Match syntax ("*", "?", "[…]", "\"
// escapes). "**" is refused, as is anything path.Match cannot read.
func parseIgnore(data []byte) ([]ignoreRule, error) {
	var rules []ignoreRule
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		bad := func(format string, args ...any) error {
			return refuse(CodeBadIgnoreFile, IgnoreName, "line %d: %q "+format, append([]any{n, strings.TrimSpace(raw)}, args...)...)
		}
		if !utf8.ValidString(raw) {
			return nil, refuse(CodeBadIgnoreFile, IgnoreName, "line %d is not valid UTF-8", n)
		}
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
			r.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		if strings.HasPrefix(line, "/") {
			r.anchored, line = true, line[1:]
		}
		if strings.Contains(line, "/") {
			r.anchored = true
		}
		if line == "" {
			return nil, bad("matches nothing: the pattern is empty")
		}
		for _, c := range strings.Split(line, "/") {
			switch {
			case c == "":
				return nil, bad("has an empty component (//); write one / between names")
			case c == "." || c == "..":
				return nil, bad("has a %q component; patterns are relative to the release root and stay in it", c)
			case strings.Contains(c, "**"):
				return nil, bad("uses **, which is not supported: a pattern without / already matches at any depth, and * matches within one name")
			}
		}
		if _, err := path.Match(line, ""); err != nil {
			return nil, bad("is not a valid pattern (an unclosed [ or a \\ at the end?): %v", err)
		}
		r.pattern = line
		rules = append(rules, r)
	}
	return rules, nil
}
