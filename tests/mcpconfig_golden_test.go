package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/mcp/mcpconfig"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// configGolden compares got with testdata/mcpconfig/NAME.golden;
// -update rewrites it.
func configGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "mcpconfig", name+".golden")
	if *updateDeps {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tests -run TestMCPConfigCases -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// configRun is one `rukh mcp config` of a home: its environment (HOME a
// fresh directory, none of the clients' own variables unless given) and
// the text it printed with the test's directories named as variables.
type configRun struct {
	rukh, dir, home string
	env             []string
}

func newConfigRun(t *testing.T, rukh string, o *outlive) *configRun {
	r := &configRun{rukh: rukh, dir: o.dir, home: testhome.TempDir(t)}
	for _, kv := range o.env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME":
		default:
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "HOME="+r.home)
	return r
}

func (r *configRun) run(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(r.rukh, append([]string{"mcp", "config"}, args...)...)
	cmd.Env = append(r.env[:len(r.env):len(r.env)], env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return r.clean(out.String()), r.clean(errb.String()), exitCode(err)
}

// clean names the test's directories and binary as variables.
func (r *configRun) clean(s string) string {
	abs, _ := filepath.Abs(r.rukh)
	return strings.NewReplacer(r.home, "$HOME", r.dir, "$DIR", abs, "$RUKH").Replace(s)
}

// The config cases with goldens: the warning each client with a known
// tool-name limit gets (names in full, and compact names under a long
// server name), "already configured", CLAUDE_CONFIG_DIR, a Codex file
// whose servers are an inline table, and a TOML error with its line and
// column; two --writes in a row keep two backups. In process and with
// rukhd holding the store (`mcp config` runs in the caller's process and
// lists the tools through the daemon), with the same goldens.
func TestMCPConfigCases(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) { mcpConfigCases(t, h) })
}

func mcpConfigCases(t *testing.T, h *testHost) {
	rukh := h.Rukh
	o := newOutlive(t) // two tools, named in full
	h.serve(t, o.home)
	r := newConfigRun(t, rukh, o)

	t.Run("warnings", func(t *testing.T) {
		for _, client := range mcpconfig.Names() {
			_, stderr, code := r.run(t, nil, client)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", client, code, stderr)
			}
			if hasLimit := mcpconfig.Clients[client].Names != nil; hasLimit != strings.Contains(stderr, "warning:") {
				t.Errorf("%s (a known limit: %v):\n%s", client, hasLimit, stderr)
			}
			configGolden(t, "warning-"+client, stderr)
		}
		// --json carries the same warning.
		out, _, _ := r.run(t, nil, "claude-code", "--json")
		if !strings.Contains(out, `"warnings": [`+"\n"+`    "2 tool names longer than 64 characters with Claude Code's prefix mcp__rukh__; Claude Code rejects them.`) {
			t.Errorf("--json:\n%s", out)
		}
	})

	t.Run("write-twice", func(t *testing.T) {
		// The same entry again is already configured: exit 0, the file
		// as it was, no backup.
		file := filepath.Join(r.home, ".claude.json")
		if _, stderr, code := r.run(t, nil, "claude-code", "--write"); code != 0 {
			t.Fatalf("--write: exit %d\n%s", code, stderr)
		}
		first, _ := os.ReadFile(file)
		_, stderr, code := r.run(t, nil, "claude-code", "--write")
		if code != 0 {
			t.Fatalf("--write again: exit %d\n%s", code, stderr)
		}
		configGolden(t, "already-configured", stderr)
		if again, _ := os.ReadFile(file); string(again) != string(first) {
			t.Errorf("--write of the same entry changed the file")
		}
		if backups, _ := filepath.Glob(file + ".bak-*"); len(backups) != 0 {
			t.Errorf("--write of the same entry left backups %v", backups)
		}
		// Two other entries, one right after the other (in one second,
		// most often): each keeps its own backup of what it replaced.
		var named []string
		for _, name := range []string{"rukh-a", "rukh-b"} {
			_, stderr, code := r.run(t, nil, "claude-code", "--write", "--name", name)
			_, rest, ok := strings.Cut(stderr, "; the previous file is ")
			backup, _, _ := strings.Cut(rest, "\n")
			if code != 0 || !ok {
				t.Fatalf("--write --name %s: exit %d\n%s", name, code, stderr)
			}
			named = append(named, strings.Replace(backup, "$HOME", r.home, 1))
		}
		backups, _ := filepath.Glob(file + ".bak-*")
		if len(backups) != 2 || named[0] == named[1] {
			t.Fatalf("backups %v, named %v: want two, one per --write", backups, named)
		}
		for i, b := range named {
			data, err := os.ReadFile(b)
			if err != nil || strings.Contains(string(data), `"rukh-b"`) || (i == 1) != strings.Contains(string(data), `"rukh-a"`) {
				t.Errorf("backup %s of --write %d: %v\n%s", b, i+1, err, data)
			}
		}
	})

	t.Run("claude-config-dir", func(t *testing.T) {
		dir := filepath.Join(r.dir, "claude-config")
		env := []string{"CLAUDE_CONFIG_DIR=" + dir}
		_, printed, _ := r.run(t, env, "claude-code")
		_, wrote, code := r.run(t, env, "claude-code", "--write")
		if code != 0 {
			t.Fatalf("--write: exit %d\n%s", code, wrote)
		}
		configGolden(t, "claude-config-dir", printed+wrote)
		if data, err := os.ReadFile(filepath.Join(dir, ".claude.json")); err != nil || !strings.Contains(string(data), `"rukh"`) {
			t.Errorf("$CLAUDE_CONFIG_DIR/.claude.json: %v\n%s", err, data)
		}
		if _, err := os.Stat(filepath.Join(r.home, ".claude.json.bak")); err == nil {
			t.Errorf("wrote beside ~/.claude.json")
		}
	})

	t.Run("codex-inline-table", func(t *testing.T) {
		codexHome := filepath.Join(r.dir, "codex")
		testhome.WriteFiles(t, codexHome, map[string]string{
			"config.toml": "model = \"o3\"\nmcp_servers = { other = { command = \"/bin/other\" } }\n\n[tui]\nnotifications = true\n",
		})
		_, stderr, code := r.run(t, []string{"CODEX_HOME=" + codexHome}, "codex", "--write")
		if code != 0 {
			t.Fatalf("--write: exit %d\n%s", code, stderr)
		}
		data, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
		configGolden(t, "codex-inline-table", r.clean(string(data)))
	})

	t.Run("toml-error", func(t *testing.T) {
		codexHome := filepath.Join(r.dir, "codex-bad")
		bad := "model = \"o3\"\n[mcp_servers\ncommand = \"x\"\n"
		testhome.WriteFiles(t, codexHome, map[string]string{"config.toml": bad})
		_, stderr, code := r.run(t, []string{"CODEX_HOME=" + codexHome}, "codex", "--write")
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		configGolden(t, "toml-error", stderr)
		if data, _ := os.ReadFile(filepath.Join(codexHome, "config.toml")); string(data) != bad {
			t.Errorf("an invalid file was changed")
		}
	})

	t.Run("compact-long-name", func(t *testing.T) {
		// Compact names fit Claude Code's 64 with mcp__rukh__, but not
		// with a long server name: then the name is what to change.
		apply := exec.Command(rukh, "profile", "apply", "-f", "-")
		apply.Env = o.env
		apply.Stdin = strings.NewReader(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.out/*"],"task":"agent","naming":"compact"},
	"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
	         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"}}}`)
		if out, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("profile apply: %v\n%s", err, out)
		}
		_, short, _ := r.run(t, nil, "claude-code")
		if strings.Contains(short, "warning") {
			t.Errorf("compact names, server rukh:\n%s", short)
		}
		_, long, _ := r.run(t, nil, "claude-code", "--name", "my-team-deploy-tools-server")
		configGolden(t, "compact-long-name", long)
	})
}
