package tests

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestDependencies keeps the seams by the import graph itself (go list
// -deps), not by reading source: the MCP presentation reaches the core
// only through seam and wire; the thin client, the wire protocol and the
// extension SDK link nothing of the core; the CLI never links the daemon,
// nor the daemon the CLI; the core's host (local) links no presentation.
// Each row forbids an import the compiler would allow (none is a cycle).
func TestDependencies(t *testing.T) {
	const r = "github.com/rukh-cli/rukh/"
	thin := []string{"thin", "internal/daemon/wire", "internal/paths", "internal/run/envpolicy", "internal/exitcode", "internal/run/spawn", "internal/buildid", "internal/fds", "internal/release/descriptor/format"}
	for _, tc := range []struct {
		pkg       string
		forbidden []string // import path prefixes that must not be reached; with a final $, one path
		onlyRukh  []string // when set: the only project packages allowed
	}{
		{"../internal/mcp", []string{"go.etcd.io/bbolt"}, []string{"internal/daemon/wire", "internal/mcp/seam", "internal/mcp"}},
		{"../thin", []string{"go.etcd.io/bbolt", "github.com/spf13/cobra"}, thin},
		{"../cmd/rukh", nil, append([]string{"cmd/rukh"}, thin...)},
		{"../internal/daemon/wire", nil, []string{"internal/daemon/wire"}},
		{"../internal/mcp/seam", nil, []string{"internal/daemon/wire", "internal/mcp/seam"}},
		// Nor the CBOR library: the thin client codes a command line's
		// frames by hand (internal/daemon/wire/codec.go).
		{"../cmd/rukh", []string{r + "internal/daemon$", "github.com/coreos/go-systemd", "github.com/fxamacker/cbor", r + "internal/daemon/wire/wirecbor"}, nil},
		{"../internal/cli", []string{r + "internal/daemon$", r + "app"}, nil},
		// The daemon is a library handed the command-line runner (app):
		// it links no presentation (ADR 0012).
		{"../internal/daemon", []string{r + "internal/cli$", r + "internal/mcp$", r + "internal/mcp/mcphttp", r + "internal/mcp/guard", "github.com/spf13/cobra", "github.com/modelcontextprotocol"}, nil},
		// The core as one host serves presentations and knows none of
		// them, nor how a client reaches a daemon.
		{"../internal/core/local", []string{r + "thin", r + "internal/mcp$", r + "internal/mcp/mcphttp", r + "internal/mcp/guard", "github.com/spf13/cobra", "github.com/modelcontextprotocol"}, nil},
	} {
		out, err := exec.Command("go", "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tc.forbidden {
				if exact, ok := strings.CutSuffix(f, "$"); ok && dep == exact || !ok && strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", tc.pkg, dep)
				}
			}
			rest, ok := strings.CutPrefix(dep, "github.com/rukh-cli/rukh/")
			if !ok || tc.onlyRukh == nil {
				continue
			}
			allowed := false
			for _, a := range tc.onlyRukh {
				allowed = allowed || rest == a
			}
			if !allowed {
				t.Errorf("%s depends on github.com/rukh-cli/rukh/%s; only %v may be reached", tc.pkg, rest, tc.onlyRukh)
			}
		}
	}
}

var updateDeps = flag.Bool("update", false, "rewrite cmd/rukh/depaware.txt, cmd/rukhd/depaware.txt and cmd/rukhd/depaware-oneshot.txt from what they link, and testdata/mcpconfig/*.golden")

// TestThinClientDeps: the thin `rukh` links exactly the packages listed in
// cmd/rukh/depaware.txt — leaf packages of this module and what they
// need, nothing of the core (no bbolt, MCP SDK, cobra or net/http, not
// the CBOR library, and not even package net: wire dials with socket(2)
// itself), so it starts
// about as fast as a program that does nothing. A change that
// makes it link more fails here; if that is meant, `go test ./tests -run
// 'TestThinClientDeps|TestCoreDeps|TestOneShotDeps' -update` rewrites the list for the
// reviewer to see. The standard library is checked by its absentees, since
// its internal packages change with the Go version.
func TestThinClientDeps(t *testing.T) {
	got := nonStdDeps(t, "rukh", "net", "net/http", "encoding/json", "crypto/tls", "text/template")
	checkDepaware(t, "rukh", got)
}

// TestCoreDeps: the core rukhd links the packages listed in
// cmd/rukhd/depaware.txt, and nothing more arrives unseen: a new module
// (or a package of one) in the core's build is a reviewed change.
func TestCoreDeps(t *testing.T) {
	got := nonStdDeps(t, "rukhd")
	mustLinkCodec(t, "rukhd", got)
	checkDepaware(t, "rukhd", got)
}

// mustLinkCodec fails unless deps has package wirecbor: a core binary
// reads frames that only the codec decodes (wire.Codec).
func mustLinkCodec(t *testing.T, binary string, deps []string) {
	t.Helper()
	if !slices.Contains(deps, "github.com/rukh-cli/rukh/internal/daemon/wire/wirecbor") {
		t.Errorf("%s does not link internal/daemon/wire/wirecbor: it could not read the frames only the codec decodes", binary)
	}
}

// TestOneShotDeps: the one-shot core, rukh-oneshot (cmd/rukhd built with
// the tag rukh_oneshot), links the packages listed in
// cmd/rukhd/depaware-oneshot.txt: the core and the CLI of extension
// commands, and none of the built-in commands' MCP SDK, release sources
// (oras-go), HTTP server, OAuth or daemon, whose package inits a command
// line of one extension command would pay for at every start
// (docs/adr/0017-one-shot-core.md).
func TestOneShotDeps(t *testing.T) {
	got := tagDeps(t, "rukhd", "rukh_oneshot", "net/http", "encoding/gob", "crypto/tls")
	for _, dep := range got {
		for _, f := range []string{"github.com/modelcontextprotocol/", "oras.land/", "github.com/opencontainers/", "golang.org/x/oauth2", "github.com/rukh-cli/rukh/internal/daemon", "github.com/rukh-cli/rukh/internal/mcp", "github.com/rukh-cli/rukh/internal/release/source"} {
			if strings.HasPrefix(dep, f) && dep != "github.com/rukh-cli/rukh/internal/daemon/wire" && dep != "github.com/rukh-cli/rukh/internal/daemon/wire/wirecbor" && dep != "github.com/rukh-cli/rukh/internal/daemon/client" && dep != "github.com/rukh-cli/rukh/internal/mcp/seam" {
				t.Errorf("the one-shot core links %s", dep)
			}
		}
	}
	mustLinkCodec(t, "the one-shot core", got)
	checkDepawareFile(t, "rukhd", "depaware-oneshot.txt", "cmd/rukhd built with -tags rukh_oneshot", got)
}

// nonStdDeps lists what cmd/NAME links outside the standard library,
// sorted; linking one of forbidden (standard packages) is an error.
func nonStdDeps(t *testing.T, name string, forbidden ...string) []string {
	return tagDeps(t, name, "", forbidden...)
}

// tagDeps is nonStdDeps of cmd/NAME built with the build tags tags.
func tagDeps(t *testing.T, name, tags string, forbidden ...string) []string {
	t.Helper()
	// The go command says which packages are the standard library's
	// (crypto/internal/entropy/v1.0.0 is one, dot and all).
	out, err := exec.Command("go", "list", "-deps", "-tags="+tags, "-f", "{{.ImportPath}} {{.Standard}}", "../cmd/"+name).Output()
	if err != nil {
		t.Fatalf("go list -deps -tags=%s ../cmd/%s: %v", tags, name, err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dep, standard, _ := strings.Cut(line, " ")
		switch {
		case standard == "false":
			got = append(got, dep)
		case slices.Contains(forbidden, dep):
			t.Errorf("cmd/%s links %s, which it must not", name, dep)
		}
	}
	sort.Strings(got)
	return got
}

// checkDepaware compares got with cmd/NAME/depaware.txt (rewritten with
// -update).
func checkDepaware(t *testing.T, name string, got []string) {
	checkDepawareFile(t, name, "depaware.txt", "cmd/"+name, got)
}

// checkDepawareFile compares got, what what links, with cmd/NAME/file.
func checkDepawareFile(t *testing.T, name, file, what string, got []string) {
	t.Helper()
	text := "# What " + what + " links besides the standard library (tests/deps_test.go).\n" + strings.Join(got, "\n") + "\n"
	golden := filepath.Join("..", "cmd", name, file)
	if *updateDeps {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != text {
		t.Errorf("cmd/%s links other packages than %s lists:\n got:\n%s\nwant:\n%s\n(rerun with -update if that is meant)", name, golden, text, want)
	}
}

// TestPublicSurface: an embedder can import app (the core's main and its
// contract), thin (the thin client's main) and extsdk (for extension
// authors), and nothing else of this module; every other package is under
// internal/ (docs/embedding.md, "What is stable"). A new package outside
// internal/ is a change to the public API and fails here.
func TestPublicSurface(t *testing.T) {
	// ./... from the module's root, not github.com/rukh-cli/rukh/...: a
	// pattern by import path can match packages of other modules, so go
	// list would look up every module in the build list (cobra's
	// Windows-only mousetrap too), which fails offline.
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...")
	cmd.Dir = ".."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	public := []string{"app", "thin", "extsdk"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, name, _ := strings.Cut(line, " ")
		rel := strings.TrimPrefix(path, "github.com/rukh-cli/rukh/")
		first, _, _ := strings.Cut(rel, "/")
		switch {
		case first == "internal", first == "tests", first == "examples":
		case first == "cmd" && name == "main":
		case slices.Contains(public, rel):
		default:
			t.Errorf("%s is importable by an embedder: move it under internal/, or make it public API on purpose (add it here and to docs/embedding.md)", path)
		}
	}
}
