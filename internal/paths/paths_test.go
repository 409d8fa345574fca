package paths

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Secure refuses what another user could change under the CLI, and says
// what to do; a missing directory is created private.
func TestSecure(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name string
		dir  string
		want string // "" for accepted
	}{
		{"missing: created 0700", filepath.Join(base, "new", "data"), ""},
		{"private", mk("private", 0o700), ""},
		{"readable by others", mk("readable", 0o755), ""},
		{"writable by all", mk("open", 0o777), "may be written by others (mode 0777); run `chmod 700"},
		{"writable by group", mk("group", 0o770), "may be written by others (mode 0770)"},
		{"a file", file, "is not a directory"},
	} {
		err := Secure(tc.dir)
		var ie *InsecureError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if fi, err := os.Stat(filepath.Join(base, "new", "data")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created with %v, %v", fi.Mode(), err)
	}
	if os.Getuid() == 0 {
		other := mk("other", 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := Secure(other); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to you") {
			t.Errorf("a directory of another user: %v", err)
		}
	}
}
