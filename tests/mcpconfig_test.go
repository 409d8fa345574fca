package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// `rukh mcp config` prints an entry that really starts this rukh serving
// the same home: a client started with exactly that command, arguments
// and environment (and nothing of the shell's but PATH and HOME) lists
// the tools a session of the shell lists. --write merges it into the
// client's file; the same entry again is "already configured" (exit 0),
// and another entry of the name is refused without --force (exit 1, the
// file untouched). In process and through rukhd.
func TestMCPConfigStartsTheSameServer(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		o := newOutlive(t)
		h.serve(t, o.home)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()

		cmd := exec.Command(h.Rukh, "mcp", "config", "claude-code", "--json")
		cmd.Env = o.env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mcp config: %v\n%s", err, out)
		}
		var entry struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		if err := json.Unmarshal(out, &entry); err != nil {
			t.Fatal(err)
		}
		if abs, _ := filepath.Abs(h.Rukh); entry.Command != abs || strings.Join(entry.Args, " ") != "mcp" || entry.Env["RUKH_HOME"] != o.home {
			t.Fatalf("entry %+v: want %s mcp with RUKH_HOME=%s", entry, abs, o.home)
		}

		_, _, want := o.mcp(t, ctx, h.Rukh)
		client := exec.CommandContext(ctx, entry.Command, entry.Args...)
		client.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + testhome.TempDir(t)}
		for k, v := range entry.Env {
			client.Env = append(client.Env, k+"="+v)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-code", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: client}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if got := toolNames(t, ctx, cs); len(got) == 0 || strings.Join(sortedValues(got), " ") != strings.Join(sortedValues(want), " ") {
			t.Errorf("the configured server lists %v, the shell's %v", got, want)
		}

		// --write into the project's .mcp.json, then the same again.
		project := filepath.Join(o.dir, "project")
		os.MkdirAll(project, 0o755)
		write := func() (string, error) {
			w := exec.Command(h.Rukh, "mcp", "config", "claude-code", "--scope", "project", "--write")
			w.Env, w.Dir = o.env, project
			out, err := w.CombinedOutput()
			return string(out), err
		}
		if out, err := write(); err != nil || !strings.Contains(out, `wrote "rukh" to `+filepath.Join(project, ".mcp.json")) {
			t.Fatalf("--write: %v\n%s", err, out)
		}
		first, _ := os.ReadFile(filepath.Join(project, ".mcp.json"))
		var file struct {
			MCPServers map[string]struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(first, &file); err != nil || file.MCPServers["rukh"].Command != entry.Command || file.MCPServers["rukh"].Type != "stdio" {
			t.Fatalf(".mcp.json: %v\n%s", err, first)
		}
		out2, err := write()
		if code := exitCode(err); code != 0 || !strings.Contains(out2, `"rukh" is already configured in `) {
			t.Errorf("--write again: exit %d\n%s", code, out2)
		}
		// Another entry of the name is refused.
		edited := strings.Replace(string(first), entry.Command, "/opt/old/rukh", 1)
		os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(edited), 0o644)
		out3, err := write()
		if code := exitCode(err); code != 1 || !strings.Contains(out3, `already has a server "rukh"`) {
			t.Errorf("--write over another entry: exit %d\n%s", code, out3)
		}
		if again, _ := os.ReadFile(filepath.Join(project, ".mcp.json")); string(again) != edited {
			t.Errorf("a refused --write changed the file")
		}
	})
}

func sortedValues(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	sort.Strings(v)
	return v
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
