package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// An embedder's CLI (ADR 0012; issue 27): the example embedder acme
// (examples/acme, a module of its own), a thin client and a core of about
// ten lines each, with
// Go built-ins. They are commands like any other: in help and
// did-you-mean, run through the one invocation core from the CLI and
// over MCP once the profile exposes them, kept for approval by a task,
// recorded; a panic is an execution failure; and nothing acme prints or
// keeps says "rukh" (format identifiers aside). Both hosts.

// acmeBinaries builds acme, acmed, acme-oneshot and acme-sandbox into a
// directory of the test's, whose path names no rukh.
func acmeBinaries(t *testing.T) (acme, acmed string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "acme-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// examples/acme is a module of its own, as an embedder's is (a
	// replace to this repository): built from its own directory.
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/acme", "./cmd/acmed")
	build.Dir = "../examples/acme"
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build acme: %v\n%s", err, out)
	}
	// Its one-shot core, as `make build` builds rukh's: the command lines
	// of one command below run in it.
	build = exec.Command("go", "build", "-tags", "rukh_oneshot", "-o", filepath.Join(dir, "acme-oneshot"), "./cmd/acmed")
	build.Dir = "../examples/acme"
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags rukh_oneshot acmed: %v\n%s", err, out)
	}
	if err := sandbox.Build(filepath.Join(dir, "acme-sandbox")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "acme"), filepath.Join(dir, "acmed")
}

type acmeHome struct {
	acme, acmed, home string
	env               []string
	said              strings.Builder // everything acme printed
}

func (h *acmeHome) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.acme, args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("acme %s: %v", strings.Join(args, " "), err)
	}
	h.said.Write(out)
	return string(out), cmd.ProcessState.ExitCode()
}

func TestEmbedderBuiltins(t *testing.T) {
	acme, acmed := acmeBinaries(t)
	for _, daemon := range []bool{false, true} {
		name := map[bool]string{false: "in-process", true: "daemon"}[daemon]
		t.Run(name, func(t *testing.T) {
			h := &acmeHome{acme: acme, acmed: acmed, home: filepath.Join(testhome.TempDir(t), "home")}
			h.env = append(os.Environ(), "ACME_HOME="+h.home)
			// The first command installs the built-ins as revision 1.
			if out, code := h.run(t, "status", "db", "--json"); code != 0 || strings.TrimSpace(out) != `{"healthy":true,"service":"db"}` {
				t.Fatalf("acme status db --json: exit %d: %s", code, out)
			}
			// And trusts its publisher, and applied its starting profile
			// (examples/acme/cmd/acmed/profile.json), after the built-ins it
			// exposes.
			if out, _ := h.run(t, "trust", "list"); !strings.Contains(out, "acme-release") {
				t.Errorf("acme trust list does not show the built-in publisher:\n%s", out)
			}
			if out, _ := h.run(t, "profile", "history"); !strings.Contains(out, "trust add acme-release") || !strings.Contains(out, "install acme 1.2.0") || !strings.Contains(out, "profile apply") {
				t.Errorf("acme profile history after the first command:\n%s", out)
			}
			// A release its publisher signed installs without `trust add`.
			rel := filepath.Join(testhome.TempDir(t), "tools")
			testhome.WriteFiles(t, rel, map[string]string{
				"bin/hi": "#!/bin/sh\nprintf '{\"type\":\"complete\",\"token\":\"%s\",\"status\":\"succeeded\",\"commandResult\":{\"kind\":\"text\",\"text\":\"hi\"}}\\n' \"$RUKH_IPC_TOKEN\" >&3\n",
				"rukh-extension.json": `{"schema":"rukh.extension/2","package":"acme.tools","version":"1.0.0","publisher":"acme-release","commands":[
					{"id":"hi","path":["hi"],"summary":"Say hi","execute":{"mapping":"managed","program":"bin/hi","result":{"kind":"text"}},"effects":{"class":"none"}}]}`,
			})
			key := filepath.Join(testhome.TempDir(t), "release.key")
			if data, err := os.ReadFile("../examples/acme/test-release.key"); err != nil {
				t.Fatal(err)
			} else if err := os.WriteFile(key, data, 0o600); err != nil {
				t.Fatal(err)
			}
			archive := filepath.Join(testhome.TempDir(t), "tools.tar.gz")
			if out, code := h.run(t, "ext", "pack", rel, "--key", key, "-o", archive); code != 0 {
				t.Fatalf("acme ext pack: exit %d: %s", code, out)
			}
			if out, code := h.run(t, "ext", "install", archive); code != 0 {
				t.Fatalf("acme ext install of a release by the built-in publisher: exit %d: %s", code, out)
			}
			if out, code := h.run(t, "hi"); code != 0 || !strings.Contains(out, "hi") {
				t.Errorf("acme hi: exit %d: %s", code, out)
			}
			if daemon {
				if out, code := h.run(t, "daemon", "start"); code != 0 {
					t.Fatalf("acme daemon start: exit %d: %s", code, out)
				}
				t.Cleanup(func() { h.run(t, "daemon", "stop") })
				if out, code := h.run(t, "daemon", "status"); code != 0 || !strings.Contains(out, "acmed is running") {
					t.Fatalf("acme daemon status: exit %d: %s", code, out)
				}
			}

			// Help, did-you-mean and the tools the owner sees.
			if out, _ := h.run(t, "--help"); !strings.Contains(out, "status") || !strings.Contains(out, "Show the service's status") {
				t.Errorf("acme --help does not list the built-in status:\n%s", out)
			}
			if out, code := h.run(t, "stauts"); code != 2 || !strings.Contains(out, `did you mean "status"`) {
				t.Errorf("acme stauts: exit %d: %s", code, out)
			}
			if out, _ := h.run(t, "tools"); !strings.Contains(out, "acme/status") || !strings.Contains(out, "acme/purge") {
				t.Errorf("acme tools does not show the exposed built-ins:\n%s", out)
			}

			// From the CLI (the owner's host task): both run.
			if out, code := h.run(t, "purge", "sessions"); code != 0 || !strings.Contains(out, "purged sessions") {
				t.Errorf("acme purge sessions: exit %d: %s", code, out)
			}
			// A built-in that panics is an execution failure, recorded once;
			// the host goes on serving.
			if out, code := h.run(t, "boom"); code != 70 {
				t.Errorf("acme boom: exit %d, want 70: %s", code, out)
			}
			if _, code := h.run(t, "status"); code != 0 {
				t.Errorf("acme status after a panicking built-in: exit %d", code)
			}

			// Over MCP: listed once exposed, called through the core; the
			// destructive one is kept for the owner, approved at a
			// terminal, and then runs.
			cs := acmeSession(t, h)
			tools, names := toolsByTitle(t, cs)
			if len(tools) != 2 || names["Show the service's status"] == "" || names["Purge a cache"] == "" {
				t.Fatalf("acme mcp lists %d tools: %v", len(tools), names)
			}
			env, _ := call(t, cs, names["Show the service's status"], map[string]any{"service": "api"})
			if res, _ := env["commandResult"].(map[string]any); env["outcome"] != "succeeded" || fmt.Sprint(res["data"]) != "map[healthy:true service:api]" {
				t.Errorf("status over MCP: %v", env)
			}
			env, _ = call(t, cs, names["Purge a cache"], map[string]any{"cache": "tiles"})
			id, _ := env["approvalId"].(string)
			if env["reason"] != "approval_required" || id == "" {
				t.Fatalf("purge over MCP: %v; want approval_required", env)
			}
			ah := &approvalHome{rukh: h.acme, home: h.home, env: h.env}
			if shown, out, status := ah.approveAtTerminal(t, id, "yes"); status != 0 {
				t.Fatalf("acme approve %s at a terminal: exit %d: %s\n%s", id, status, out, shown)
			} else {
				h.said.WriteString(shown + out)
			}
			env, text := call(t, cs, names["Purge a cache"], map[string]any{"cache": "tiles"})
			if env["outcome"] != "succeeded" || text != "purged tiles" {
				t.Errorf("purge over MCP once approved: %v %q", env, text)
			}
			cs.Close()

			// The one-shot core installs the built-in release with a copy
			// of acmed, as acmed does: it was installed once, whichever
			// ran first, and never again.
			if out, _ := h.run(t, "profile", "history"); strings.Count(out, "install acme 1.2.0") != 1 {
				t.Errorf("the built-in release was installed other than once:\n%s", out)
			}

			// The records name the built-ins as any command.
			out, _ := h.run(t, "invocations", "list", "--json")
			var recs []map[string]any
			if err := json.Unmarshal([]byte(out), &recs); err != nil {
				t.Fatalf("invocations list: %v\n%s", err, out)
			}
			got := map[string]int{}
			for _, r := range recs {
				got[fmt.Sprint(r["command"], " ", r["transport"], " ", r["outcome"])]++
			}
			for key, n := range map[string]int{
				"acme/status cli succeeded": 2, "acme/purge cli succeeded": 1, "acme/boom cli execution_failed": 1,
				"acme/status mcp succeeded": 1, "acme/purge mcp rejected": 1, "acme/purge mcp succeeded": 1,
			} {
				if got[key] != n {
					t.Errorf("%d records %q, want %d; all: %v", got[key], key, n, got)
				}
			}

			// Nothing acme printed or keeps names rukh, but the formats.
			for _, args := range [][]string{{"version"}, {"doctor"}, {"ext", "list"}, {"nosuch"}, {"status", "--bogus"}, {"daemon", "status"}} {
				h.run(t, args...)
			}
			// The test's own directories are no part of what acme says
			// (under .ci/nonroot, TMPDIR is /var/tmp/rukh-test).
			said := strings.ReplaceAll(h.said.String(), os.TempDir(), "$TMPDIR")
			for _, format := range []string{"rukh.extension/1", "rukh.extension/2", "rukh.ipc/1"} {
				said = strings.ReplaceAll(said, format, "")
			}
			if i := strings.Index(strings.ToLower(said), "rukh"); i >= 0 {
				t.Errorf("acme printed %q:\n%s", "rukh", said[max(0, i-200):min(len(said), i+200)])
			}
			filepath.WalkDir(h.home, func(p string, d os.DirEntry, err error) error {
				// The release format's file names are format identifiers.
				format := map[string]bool{"rukh-extension.json": true, "rukh-release.json": true, "rukh-release.sig": true}
				if err == nil && strings.Contains(strings.ToLower(d.Name()), "rukh") && !format[d.Name()] {
					t.Errorf("a file in acme's home is named %s", p)
				}
				return nil
			})
		})
	}
}

// acmeSession starts `acme mcp` with the go-sdk client.
func acmeSession(t *testing.T, h *acmeHome) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(h.acme, "mcp")
	cmd.Env = h.env
	ctx, cancel := context.WithTimeout(context.Background(), dtHangGuard)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if info := cs.InitializeResult(); info != nil && strings.Contains(strings.ToLower(info.ServerInfo.Name+info.Instructions), "rukh") {
		t.Errorf("acme mcp's server info names rukh: %+v", info.ServerInfo)
	}
	return cs
}

// Built-ins that misbehave are recorded as an extension's program would
// be, on both hosts: a result its schema refuses is execution_failed
// (exit 70) and nothing of it is printed; one that ignores cancellation
// and SIGTERM is stopped at its deadline, cancelled/deadline (exit 124).
func TestEmbedderBuiltinsMisbehave(t *testing.T) {
	dir := testhome.TempDir(t)
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./testdata/tough/tough", "./testdata/tough/toughd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build tough: %v\n%s", err, out)
	}
	if err := sandbox.Build(filepath.Join(dir, "tough-sandbox")); err != nil {
		t.Fatal(err)
	}
	for _, daemon := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "daemon"}[daemon], func(t *testing.T) {
			h := &acmeHome{acme: filepath.Join(dir, "tough"), home: filepath.Join(testhome.TempDir(t), "home")}
			h.env = append(os.Environ(), "TOUGH_HOME="+h.home)
			if daemon {
				if out, code := h.run(t, "daemon", "start"); code != 0 {
					t.Fatalf("tough daemon start: exit %d: %s", code, out)
				}
				t.Cleanup(func() { h.run(t, "daemon", "stop") })
			}
			if out, code := h.run(t, "wrong"); code != 70 || strings.Contains(out, "not a number") || !strings.Contains(out, "result") {
				t.Errorf("tough wrong: exit %d: %s; want 70, the result refused", code, out)
			}
			if out, code := h.run(t, "hang"); code != 124 {
				t.Errorf("tough hang: exit %d: %s; want 124", code, out)
			}
			out, _ := h.run(t, "invocations", "list", "--json")
			var recs []map[string]any
			if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 2 {
				t.Fatalf("invocations list: %v\n%s", err, out)
			}
			if r := recs[1]; r["outcome"] != "execution_failed" || r["reason"] != "result_invalid" {
				t.Errorf("the record of wrong: %v", r)
			}
			if r := recs[0]; r["outcome"] != "cancelled" || r["reason"] != "deadline" {
				t.Errorf("the record of hang: %v", r)
			}
		})
	}
}
