package app_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/internal/cli"
	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/paths"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func environ(kv ...string) []string {
	var out []string
	for i := 0; i < len(kv); i += 2 {
		out = append(out, kv[i]+"="+kv[i+1])
	}
	return out
}

func TestPaths(t *testing.T) {
	tests := []struct {
		name    string
		cfg     app.Config
		env     func(string) string
		want    paths.Paths
		wantErr string
	}{
		{"home wins", app.Rukh, env("RUKH_HOME", "/h", "XDG_DATA_HOME", "/x"), paths.Paths{Data: "/h/data", Config: "/h/config", Runtime: "/h/run"}, ""},
		{"embedder's own variable", app.Config{Name: "acme"}, env("RUKH_HOME", "/h", "ACME_HOME", "/a"), paths.Paths{Data: "/a/data", Config: "/a/config", Runtime: "/a/run"}, ""},
		{"xdg", app.Rukh, env("HOME", "/u", "XDG_DATA_HOME", "/xd", "XDG_CONFIG_HOME", "/xc", "XDG_RUNTIME_DIR", "/run/user/1"), paths.Paths{Data: "/xd/rukh", Config: "/xc/rukh", Runtime: "/run/user/1/rukh"}, ""},
		{"xdg defaults", app.Rukh, env("HOME", "/u"), paths.Paths{Data: "/u/.local/share/rukh", Config: "/u/.config/rukh", Runtime: "/u/.local/share/rukh/run"}, ""},
		{"relative xdg is ignored", app.Rukh, env("HOME", "/u", "XDG_DATA_HOME", "rel"), paths.Paths{Data: "/u/.local/share/rukh", Config: "/u/.config/rukh", Runtime: "/u/.local/share/rukh/run"}, ""},
		{"relative home", app.Rukh, env("RUKH_HOME", "rel"), paths.Paths{}, `RUKH_HOME="rel" is not an absolute path`},
		{"nothing set", app.Rukh, env(), paths.Paths{}, "neither XDG_DATA_HOME nor $HOME is set; set RUKH_HOME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.Paths(tt.env)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Paths() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		args       []string
		want       int
		wantStderr string
	}{
		{[]string{"version"}, exitcode.OK, ""},
		{[]string{"--help"}, exitcode.OK, ""},
		{[]string{}, exitcode.OK, ""},
		{[]string{"nosuch"}, exitcode.Usage, `rukh: unknown command "nosuch"`},
		{[]string{"ext", "nosuch"}, exitcode.Usage, `unknown command "nosuch" for "rukh ext"`},
		{[]string{"version", "--colour"}, exitcode.Usage, "unknown flag: --colour"},
		{[]string{"ext", "validate"}, exitcode.Usage, "takes exactly one release directory"},
		{[]string{"ext", "validate", "../examples/greet"}, exitcode.OK, ""},
		{[]string{"ext", "validate", "../examples/nosuch"}, exitcode.Failed, "descriptor_missing"},
		{[]string{"ext", "validate", "../tests/testdata/broken-release"}, exitcode.Failed, "not_eligible"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			ios := cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
			got := app.Run(context.Background(), app.Rukh, tt.args, ios, environ("RUKH_HOME", t.TempDir()))
			if got != tt.want {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, &out, &errOut)
			}
			if tt.wantStderr == "" && errOut.Len() > 0 {
				t.Errorf("unexpected stderr: %s", &errOut)
			}
			if !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", &errOut, tt.wantStderr)
			}
		})
	}
}

// A store written by a newer build is refused with a clear message and
// the store-unavailable status, and is left untouched.
func TestFutureStore(t *testing.T) {
	home := t.TempDir()
	ios := cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	if got := app.Run(context.Background(), app.Rukh, []string{"profile", "apply", "-f", "testdata/profile.json"}, ios, environ("RUKH_HOME", home)); got != 0 {
		t.Fatalf("profile apply: exit %d: %s", got, ios.ErrOut)
	}
	db, err := bbolt.Open(filepath.Join(home, "data", "store.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, store.SchemaVersion+1))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	ios.ErrOut = &errOut
	got := app.Run(context.Background(), app.Rukh, []string{"profile", "show"}, ios, environ("RUKH_HOME", home))
	if got != exitcode.TempFail {
		t.Errorf("exit status %d, want %d", got, exitcode.TempFail)
	}
	if want := fmt.Sprintf("has schema version %d; this build supports up to %d; upgrade rukh", store.SchemaVersion+1, store.SchemaVersion); !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q does not say %q", &errOut, want)
	}
}

// A store held by another process is a clear, bounded error, not a hang.
func TestLockedStore(t *testing.T) {
	home := t.TempDir()
	s, err := store.Open(filepath.Join(home, "data", "store.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var errOut bytes.Buffer
	ios := cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
	got := app.Run(context.Background(), app.Rukh, []string{"profile", "apply", "-f", "testdata/profile.json"}, ios, environ("RUKH_HOME", home))
	if got != exitcode.TempFail {
		t.Errorf("exit status %d, want %d", got, exitcode.TempFail)
	}
	if !strings.Contains(errOut.String(), "locked by another process") {
		t.Errorf("stderr %q does not explain the lock", &errOut)
	}
}

// An embedder's CLI is named in the messages the core's packages make
// (item 4 of the thin-client issue): what to run next names acme, not
// rukh.
func TestEmbedderNameInMessages(t *testing.T) {
	t.Cleanup(func() { cliname.Set(app.Rukh.Name) })
	acme := app.Config{Name: "acme"}
	home := t.TempDir()
	run := func(args ...string) (int, string) {
		var errOut bytes.Buffer
		ios := cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
		return app.Run(context.Background(), acme, args, ios, environ("ACME_HOME", home)), errOut.String()
	}
	if got, stderr := run("profile", "apply", "-f", "testdata/profile.json"); got != 0 {
		t.Fatalf("profile apply: exit %d: %s", got, stderr)
	}
	junk := filepath.Join(t.TempDir(), "x.tar.gz")
	if err := os.WriteFile(junk, []byte("not an archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, stderr := run("ext", "install", junk)
	if want := "; make one with `acme ext pack`"; got == 0 || !strings.Contains(stderr, want) {
		t.Errorf("install of a file that is no archive: exit %d, stderr %q; want it to say %q", got, stderr, want)
	}

	s, err := store.Open(filepath.Join(home, "data", "store.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, stderr = run("profile", "show")
	if want := "most likely acmed or another acme command; run `acme daemon status`, or retry"; got != exitcode.TempFail || !strings.Contains(stderr, want) {
		t.Errorf("locked store: exit %d, stderr %q; want %d saying %q", got, stderr, exitcode.TempFail, want)
	}
	if rest := strings.ReplaceAll(stderr, home, "HOME"); strings.Contains(rest, "rukh") {
		t.Errorf("stderr names rukh outside the home's path: %q", rest)
	}
}

// A core whose built-in is declared wrongly does not run: every command
// line exits 70 naming the built-in and the field, before the store is
// touched.
func TestBadBuiltinStopsTheCore(t *testing.T) {
	t.Cleanup(func() { cliname.Set(app.Rukh.Name) })
	cfg := app.Config{Name: "acme", Builtins: []app.Builtin{{
		Declaration: `{"id":"status","path":["status"],"summary":"S","inputs":[{"id":"x","type":"strin"}],"result":{"kind":"text"},"effects":{"class":"none"}}`,
	}}}
	home := t.TempDir()
	var errOut bytes.Buffer
	ios := cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
	got := app.Run(context.Background(), cfg, []string{"ext", "list"}, ios, environ("ACME_HOME", home))
	want := `acme: built-in command "status" is declared wrongly: /commands/0/inputs/0/type: invalid_input_type: "strin" is not an input type`
	if got != 70 || !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("exit %d, stderr %q; want 70 and %q…", got, errOut.String(), want)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the home was written: %v", entries)
	}
}
