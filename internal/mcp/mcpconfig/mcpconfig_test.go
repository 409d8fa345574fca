package mcpconfig_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/mcp/mcpconfig"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./mcpconfig -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func server() *mcpconfig.Server {
	return &mcpconfig.Server{Name: "rukh", Command: "/usr/bin/rukh", Args: []string{"mcp"}, Env: map[string]string{"RUKH_HOME": "/home/ada/team \"rukh\""}}
}

// Each client's entry, as printed for a person to add by hand.
func TestSnippets(t *testing.T) {
	for _, name := range mcpconfig.Names() {
		t.Run(name, func(t *testing.T) {
			got, err := mcpconfig.Clients[name].Snippet(server())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "snippet-"+name, []byte(got))
			// What was printed is what a merge into an empty file writes.
			merged, err := mcpconfig.Clients[name].Merge("f", nil, server(), false)
			if err != nil || string(merged) != got {
				t.Errorf("merge into nothing: %v\n%s", err, merged)
			}
		})
	}
}

// Where each client's file is, per scope and platform, as the clients
// document it.
func TestFiles(t *testing.T) {
	env := func(goos string, vars map[string]string) mcpconfig.Env {
		return mcpconfig.Env{Home: "/home/ada", Dir: "/src/app", GOOS: goos, Getenv: func(k string) string { return vars[k] }}
	}
	for _, tc := range []struct {
		client, scope string
		env           mcpconfig.Env
		want          string
	}{
		{"claude-code", "user", env("linux", nil), "/home/ada/.claude.json"},
		{"claude-code", "user", env("linux", map[string]string{"CLAUDE_CONFIG_DIR": "/cfg/claude"}), "/cfg/claude/.claude.json"},
		{"claude-code", "user", env("linux", map[string]string{"CLAUDE_CONFIG_DIR": "relative"}), "/home/ada/.claude.json"},
		{"claude-code", "project", env("linux", map[string]string{"CLAUDE_CONFIG_DIR": "/cfg/claude"}), "/src/app/.mcp.json"},
		{"claude-code", "project", env("linux", nil), "/src/app/.mcp.json"},
		{"claude-desktop", "user", env("linux", nil), "/home/ada/.config/Claude/claude_desktop_config.json"},
		{"claude-desktop", "user", env("linux", map[string]string{"XDG_CONFIG_HOME": "/cfg"}), "/cfg/Claude/claude_desktop_config.json"},
		{"claude-desktop", "user", env("darwin", nil), "/home/ada/Library/Application Support/Claude/claude_desktop_config.json"},
		{"vscode", "user", env("linux", nil), "/home/ada/.config/Code/User/mcp.json"},
		{"vscode", "user", env("darwin", nil), "/home/ada/Library/Application Support/Code/User/mcp.json"},
		{"vscode", "project", env("linux", nil), "/src/app/.vscode/mcp.json"},
		{"cursor", "user", env("linux", nil), "/home/ada/.cursor/mcp.json"},
		{"cursor", "project", env("linux", nil), "/src/app/.cursor/mcp.json"},
		{"codex", "user", env("linux", nil), "/home/ada/.codex/config.toml"},
		{"codex", "user", env("linux", map[string]string{"CODEX_HOME": "/opt/codex"}), "/opt/codex/config.toml"},
		{"zed", "user", env("linux", nil), "/home/ada/.config/zed/settings.json"},
		{"zed", "user", env("darwin", nil), "/home/ada/.config/zed/settings.json"},
		{"zed", "project", env("linux", nil), "/src/app/.zed/settings.json"},
	} {
		got, err := mcpconfig.Clients[tc.client].File(tc.scope, tc.env)
		if err != nil || got != tc.want {
			t.Errorf("%s %s %s: %q %v, want %q", tc.client, tc.scope, tc.env.GOOS, got, err, tc.want)
		}
	}
	for _, c := range []string{"claude-desktop", "codex"} {
		if _, err := mcpconfig.Clients[c].File("project", env("linux", nil)); err == nil || !strings.Contains(err.Error(), "its scopes: user") {
			t.Errorf("%s project: %v", c, err)
		}
	}
}

// A merge adds the entry and keeps every other byte: comments, other
// servers and members, indentation, one-line objects, trailing commas.
func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name, client, in string
		force            bool
		err              string // the error's text, when it must fail
	}{
		{name: "json-others", client: "claude-desktop", in: "{\n  // my servers\n  \"mcpServers\": {\n    \"other\": {\"command\": \"/bin/other\"}\n  },\n  \"theme\": \"dark\"\n}\n"},
		{name: "json-no-key", client: "cursor", in: "{\n  \"theme\": \"dark\"\n}\n"},
		{name: "json-empty-key", client: "claude-code", in: "{\n  \"numStartups\": 3,\n  \"mcpServers\": {}\n}\n"},
		{name: "json-one-line", client: "cursor", in: `{"mcpServers": {"other": {"command": "/bin/other"}}}`},
		{name: "json-tabs", client: "vscode", in: "{\n\t\"servers\": {\n\t\t\"other\": {\n\t\t\t\"command\": \"/bin/other\"\n\t\t}\n\t}\n}\n"},
		{name: "jsonc-trailing-comma", client: "zed", in: "// Zed settings\n{\n  \"theme\": \"One Dark\",\n  \"context_servers\": {\n    \"other\": { \"command\": \"/bin/other\" },\n  },\n}\n"},
		{name: "json-same-name", client: "cursor", in: "{\n  \"mcpServers\": {\n    \"rukh\": {\"command\": \"/old/rukh\"}\n  }\n}\n", err: `f already has a server "rukh" (mcpServers.rukh); nothing was written: pass --force to replace it, or --name to add another`},
		{name: "json-same-name-force", client: "cursor", in: "{\n  \"mcpServers\": {\n    \"rukh\": {\"command\": \"/old/rukh\"},\n    \"other\": {}\n  }\n}\n", force: true},
		{name: "json-invalid", client: "cursor", in: "{\n  \"mcpServers\": {\n", err: "f: not valid JSON: hujson: line 3, column 1: parsing value: unexpected EOF; nothing was written: fix the file, or move it away to start a new one"},
		{name: "json-array", client: "cursor", in: "[]", err: "f: the top level is not a JSON object; nothing was written: fix the file, or move it away to start a new one"},
		{name: "json-key-not-object", client: "cursor", in: `{"mcpServers": []}`, err: `f: "mcpServers" is not an object; nothing was written: fix the file, or move it away to start a new one`},
		{name: "toml-others", client: "codex", in: "# Codex\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"/bin/other\"\n"},
		{name: "toml-no-newline", client: "codex", in: "model = \"o3\""},
		{name: "toml-same-name", client: "codex", in: "[mcp_servers.rukh]\ncommand = \"/old\"\n", err: `f already has a server "rukh" (mcp_servers.rukh); nothing was written: pass --force to replace it, or --name to add another`},
		{name: "toml-same-name-force", client: "codex", in: "model = \"o3\"\n\n[mcp_servers.rukh]\ncommand = \"/old\"\nargs = []\n\n[mcp_servers.rukh.env]\nA = \"1\"\n\n[mcp_servers.other]\ncommand = \"/bin/other\"\n", force: true},
		// However the headers quote and space the keys, the table is the
		// same one, and so is its sub-table.
		{name: "toml-quoted-headers-force", client: "codex", in: "['mcp_servers'.rukh]\ncommand = \"/old\"\n\n[ mcp_servers . \"rukh\" . env ]\nA = \"1\"\n\n[\"mcp_servers\".other]\ncommand = \"/bin/other\"\n", force: true},
		// Servers in an inline table get one more member there; a server
		// that is an inline table is replaced where it is.
		{name: "toml-inline", client: "codex", in: "model = \"o3\"\nmcp_servers = { other = { command = \"/bin/other\" } } # mine\n\n[tui]\nnotifications = true\n"},
		{name: "toml-inline-empty", client: "codex", in: "mcp_servers = {}\n"},
		{name: "toml-inline-trailing-comma", client: "codex", in: "mcp_servers = {\n  other = { command = \"/bin/other\" },\n}\n"},
		{name: "toml-inline-same-name", client: "codex", in: "mcp_servers = { rukh = { command = \"/old\" } }\n", err: `f already has a server "rukh" (mcp_servers.rukh); nothing was written: pass --force to replace it, or --name to add another`},
		{name: "toml-inline-force", client: "codex", in: "mcp_servers = { other = { command = \"/bin/other\" }, rukh = { command = \"/old\" } }\n", force: true},
		{name: "toml-table-inline-force", client: "codex", in: "[mcp_servers]\nother = { command = \"/bin/other\" }\nrukh = { command = \"/old\", args = [] }\n", force: true},
		{name: "toml-dotted-key-force", client: "codex", in: "model = \"o3\"\nmcp_servers.rukh.command = \"/old\"\n", force: true, err: "f: line 2: mcp_servers.rukh is written as dotted keys (mcp_servers.rukh.command = …), which this command does not rewrite; replace its lines with a [mcp_servers.rukh] table, or remove them, and run it again; nothing was written"},
		{name: "toml-dotted-others", client: "codex", in: "mcp_servers.other.command = \"/bin/other\"\n"},
		{name: "toml-invalid", client: "codex", in: "model = \"o3\"\n[mcp_servers\n", err: "f: not valid TOML: line 2, column 13: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := mcpconfig.Clients[tc.client].Merge("f", []byte(tc.in), server(), tc.force)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if strings.Contains(tc.err, "already has") != errors.Is(err, mcpconfig.ErrExists) {
					t.Errorf("errors.Is(ErrExists) = %v", errors.Is(err, mcpconfig.ErrExists))
				}
				golden(t, "merge-"+tc.name+".err", []byte(err.Error()+"\n"))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "merge-"+tc.name, out)
			if !tc.force {
				// Every byte of the file is still there, in order, around
				// one inserted run.
				i := 0
				for i < len(tc.in) && i < len(out) && tc.in[i] == out[i] {
					i++
				}
				if !strings.HasSuffix(string(out), tc.in[i:]) {
					t.Errorf("bytes of the file changed:\n%s", out)
				}
			}
		})
	}
}

// A file that holds the entry exactly as it would be written is left as
// it is, with --force too: comments, spacing and all.
func TestMergeSame(t *testing.T) {
	for _, tc := range []struct{ name, client, in string }{
		{"json", "cursor", "{\n  // mine\n  \"mcpServers\": {\"rukh\": {\"command\": \"/usr/bin/rukh\", \"args\": [\"mcp\"],\n    \"env\": {\"RUKH_HOME\": \"/home/ada/team \\\"rukh\\\"\"}}}\n}\n"},
		{"json-type", "claude-code", "{\"mcpServers\": {\"rukh\": {\"type\": \"stdio\", \"command\": \"/usr/bin/rukh\", \"args\": [\"mcp\"], \"env\": {\"RUKH_HOME\": \"/home/ada/team \\\"rukh\\\"\"}}}}"},
		{"toml-table", "codex", "[mcp_servers.rukh] # mine\ncommand = \"/usr/bin/rukh\"\nargs = [ \"mcp\" ]\n\n[mcp_servers.rukh.env]\nRUKH_HOME = '/home/ada/team \"rukh\"'\n"},
		{"toml-inline", "codex", "mcp_servers = { rukh = { command = \"/usr/bin/rukh\", args = [\"mcp\"], env = { RUKH_HOME = \"/home/ada/team \\\"rukh\\\"\" } } }\n"},
	} {
		for _, force := range []bool{false, true} {
			out, err := mcpconfig.Clients[tc.client].Merge("f", []byte(tc.in), server(), force)
			if err != nil || string(out) != tc.in {
				t.Errorf("%s (force %v): %v\n%s", tc.name, force, err, out)
			}
		}
	}
	// Not the same: another command, or a member more.
	for _, in := range []string{
		"{\"mcpServers\": {\"rukh\": {\"command\": \"/old/rukh\", \"args\": [\"mcp\"], \"env\": {\"RUKH_HOME\": \"/home/ada/team \\\"rukh\\\"\"}}}}",
		"{\"mcpServers\": {\"rukh\": {\"command\": \"/usr/bin/rukh\", \"args\": [\"mcp\"], \"env\": {\"RUKH_HOME\": \"/home/ada/team \\\"rukh\\\"\"}, \"disabled\": true}}}",
	} {
		if _, err := mcpconfig.Clients["cursor"].Merge("f", []byte(in), server(), false); !errors.Is(err, mcpconfig.ErrExists) {
			t.Errorf("%s: %v, want ErrExists", in, err)
		}
	}
}

// Write creates the file and its directory, or replaces it atomically
// keeping a backup and the file's mode; a file it refuses, or a directory
// it cannot make, leaves everything as it was.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	c := mcpconfig.Clients["cursor"]
	path := filepath.Join(dir, ".cursor", "mcp.json")
	if w, err := c.Write(path, server(), false, "T1"); err != nil || w.Backup != "" || w.File != path {
		t.Fatalf("new file: %+v %v", w, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file: %v %v", fi, err)
	}
	// An existing file of mode 0600 with another server.
	old := "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"/bin/other\"}\n  }\n}\n"
	os.WriteFile(path, []byte(old), 0o600)
	os.Chmod(path, 0o600)
	w, err := c.Write(path, server(), false, "T2")
	if err != nil || w.Backup != path+".bak-T2" {
		t.Fatalf("merge: %+v %v", w, err)
	}
	backup := w.Backup
	if b, _ := os.ReadFile(backup); string(b) != old {
		t.Errorf("backup %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's 0600", fi.Mode())
	}
	merged, _ := os.ReadFile(path)
	if !strings.Contains(string(merged), `"other": {"command": "/bin/other"}`) || !strings.Contains(string(merged), `"/usr/bin/rukh"`) {
		t.Errorf("merged:\n%s", merged)
	}
	// The same entry again: already configured, nothing written, no
	// backup. The same name for another entry: refused, likewise.
	if w, err := c.Write(path, server(), false, "T3"); err != nil || !w.Unchanged || w.Backup != "" {
		t.Errorf("the same again: %+v %v", w, err)
	}
	other := server()
	other.Command = "/opt/rukh/bin/rukh"
	if _, err := c.Write(path, other, false, "T3"); !errors.Is(err, mcpconfig.ErrExists) {
		t.Errorf("another entry of the name: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(merged) {
		t.Errorf("a write that changed nothing changed the file")
	}
	if _, err := os.Stat(path + ".bak-T3"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write that changed nothing left a backup: %v", err)
	}
	// Invalid: refused, untouched.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{oops"), 0o644)
	var ie *mcpconfig.InvalidError
	if _, err := c.Write(bad, server(), false, "T4"); !errors.As(err, &ie) || ie.File != bad {
		t.Errorf("invalid: %v", err)
	}
	if b, _ := os.ReadFile(bad); string(b) != "{oops" {
		t.Errorf("an invalid file was changed: %q", b)
	}
	// A directory that cannot be made (a file is in the way), as root too.
	blocked := filepath.Join(dir, "file")
	os.WriteFile(blocked, nil, 0o644)
	if _, err := c.Write(filepath.Join(blocked, "sub", "mcp.json"), server(), false, "T5"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("blocked directory: %v", err)
	}
	// A directory this user may not write (only where that stops it: not
	// for root): the file stays as it was, and no backup or temporary
	// file is left.
	if os.Getuid() != 0 {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o755)
		file := filepath.Join(ro, "mcp.json")
		os.WriteFile(file, []byte(old), 0o644)
		os.Chmod(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		if _, err := c.Write(file, server(), false, "T6"); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("read-only directory: %v", err)
		}
		if b, _ := os.ReadFile(file); string(b) != old {
			t.Errorf("the file changed")
		}
		if entries, _ := os.ReadDir(ro); len(entries) != 1 {
			t.Errorf("left in the directory: %v", entries)
		}
	}
}

// Writes within one second (the same TIME) keep every backup: the
// second is PATH.bak-TIME-2, the third -3; none is ever replaced.
func TestWriteBackupsOfOneSecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	c := mcpconfig.Clients["cursor"]
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i, name := range []string{"a", "b", "c"} {
		before, _ := os.ReadFile(path)
		s := server()
		s.Name = name
		w, err := c.Write(path, s, false, "20261202T064039Z")
		if err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
		wantName := path + ".bak-20261202T064039Z"
		if i > 0 {
			wantName += "-" + strconv.Itoa(i+1)
		}
		if w.Backup != wantName {
			t.Errorf("write %d: backup %s, want %s", i+1, w.Backup, wantName)
		}
		want[w.Backup] = string(before)
	}
	for name, content := range want {
		if b, err := os.ReadFile(name); err != nil || string(b) != content {
			t.Errorf("%s holds %q, %v; want %q", name, b, err, content)
		}
	}
}

// Names a client could not keep, and commands that are not absolute, are
// refused before anything is written.
func TestServerCheck(t *testing.T) {
	for _, s := range []mcpconfig.Server{
		{Name: "", Command: "/usr/bin/rukh"}, {Name: "a b", Command: "/usr/bin/rukh"}, {Name: "a.b", Command: "/usr/bin/rukh"},
		{Name: strings.Repeat("x", 65), Command: "/usr/bin/rukh"}, {Name: "rukh", Command: "rukh"},
	} {
		if err := s.Check(); err == nil {
			t.Errorf("%+v: accepted", s)
		}
	}
}
