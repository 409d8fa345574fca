package invoke

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolvePath resolves as the kernel opens: `..` after a link climbs from
// the link's target, dangling links are followed, a missing tail is taken
// as written, and a loop is an error.
func TestResolvePath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"pub", "private/sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"pub/lnk":      "../private/sub",
		"pub/abs":      filepath.Join(dir, "private"),
		"pub/dangling": "../private/new.txt",
		"pub/loop":     "loop",
		"pub/chain":    "lnk",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ in, want, err string }{
		{"/pub/a.txt", "/pub/a.txt", ""},
		{"/pub/../private/a.txt", "/private/a.txt", ""},
		{"/pub/lnk/../secret", "/private/secret", ""},
		{"/pub/lnk/x", "/private/sub/x", ""},
		{"/pub/chain/../../pub/a.txt", "/pub/a.txt", ""},
		{"/pub/abs/sub", "/private/sub", ""},
		{"/pub/dangling", "/private/new.txt", ""},
		{"/pub/missing/../lnk/x", "/private/sub/x", ""}, // once missing is created, the kernel follows lnk
		{"/pub/loop", "", "more than 40 symbolic links"},
		{"//pub/./lnk/", "/private/sub", ""},
	} {
		got, err := resolvePath(dir + tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != dir+tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.in, got, err, dir+tc.want)
		}
	}
}

func TestWholeInput(t *testing.T) {
	for _, tc := range []struct {
		template string
		id       string
		ok       bool
	}{{"path:{arg}", "arg", true}, {"path:/srv/{arg}", "", false}, {"path:{a}{b}", "", false}, {"url:{arg}", "", false}, {"path:{arg}/x", "", false}} {
		if id, ok := wholeInput(tc.template, "path:"); id != tc.id || ok != tc.ok {
			t.Errorf("%s: %q %v", tc.template, id, ok)
		}
	}
}
