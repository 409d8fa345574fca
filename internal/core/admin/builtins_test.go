package admin_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/core/admin"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
)

const statusDecl = `{"id":"status","path":["status"],"summary":"Status","result":{"kind":"text"},
	"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"read"}}`

func builtinsOf(t *testing.T, decls ...string) *admin.Builtins {
	t.Helper()
	exe := filepath.Join(testhome.TempDir(t), "rukhd")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &admin.Builtins{Name: "rukh", Version: "1.0.0", Exe: exe}
	for _, d := range decls {
		b.Commands = append(b.Commands, json.RawMessage(d))
	}
	return b
}

// A bad declaration is refused with the field named, by the descriptor
// validator every release meets.
func TestBuiltinDeclarationsRefused(t *testing.T) {
	for _, tc := range []struct{ decl, want string }{
		{`{"id":"st","path":["st"],"summary":"S","inputs":[{"id":"x","type":"strin"}],"result":{"kind":"text"},"effects":{"class":"none"}}`,
			`built-in command "st" is declared wrongly: /commands/0/inputs/0/type: invalid_input_type: "strin" is not an input type`},
		{`{"id":"st","path":["st"],"summary":"S","effects":{"class":"none"}}`,
			`built-in command "st" is declared wrongly: "result" is missing`},
		{`{"id":"st","path":["st"],"summary":"S","result":{"kind":"text"},"execute":{"mapping":"managed","program":"x"},"effects":{"class":"none"}}`,
			`built-in command "st" is declared wrongly: "execute" is the core's`},
		{`[]`, `built-in command #0 is declared wrongly: not a JSON object`},
	} {
		_, err := builtinsOf(t, tc.decl).Descriptor()
		var be *admin.BuiltinError
		if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %s…", tc.decl, err, tc.want)
		}
	}
	// Two built-ins on one path: the validator's duplicate rule.
	if _, err := builtinsOf(t, statusDecl, strings.Replace(statusDecl, `"id":"status"`, `"id":"other"`, 1)).Descriptor(); err == nil || !strings.Contains(err.Error(), "/commands/1/") {
		t.Errorf("two built-ins on one path: %v", err)
	}
}

// The built-ins are installed once, as the CLI's own package, and a
// second EnsureBuiltins changes nothing; no release may take the CLI's
// name, nor a route a built-in has (the built-in is never shadowed).
func TestEnsureBuiltins(t *testing.T) {
	a := admin.New(testhome.TempDir(t))
	b := builtinsOf(t, statusDecl)
	if err := a.EnsureBuiltins(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := a.EnsureBuiltins(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision == nil || st.Revision.Number != 1 {
		t.Fatalf("after two EnsureBuiltins: revision %+v, want 1", st.Revision)
	}

	// A changed declaration is a new release, which replaces the last.
	b2 := builtinsOf(t, strings.Replace(statusDecl, `"summary":"Status"`, `"summary":"The status"`, 1))
	b2.Exe = b.Exe
	if err := a.EnsureBuiltins(context.Background(), b2); err != nil {
		t.Fatal(err)
	}
	if st, err = a.State(); err != nil || st.Revision.Number < 2 || len(st.Releases) != 1 {
		t.Fatalf("after a changed declaration: %+v, %v; want a new revision and one release", st, err)
	}
	if _, err := a.Deactivate("rukh"); !errors.As(err, new(*admin.ReservedError)) {
		t.Errorf("ext deactivate of the built-ins: %v, want ReservedError", err)
	}
	if _, _, err := a.Remove("rukh"); !errors.As(err, new(*admin.ReservedError)) {
		t.Errorf("ext remove of the built-ins: %v, want ReservedError", err)
	}

	named := copyExample(t, "greet")
	desc := filepath.Join(named, "rukh-extension.json")
	data, _ := os.ReadFile(desc)
	var d map[string]any
	json.Unmarshal(data, &d)
	d["package"] = "rukh"
	data, _ = json.Marshal(d)
	os.WriteFile(desc, data, 0o644)
	m, err := trust.BuildManifest(named)
	if err != nil {
		t.Fatal(err)
	}
	var reserved *admin.ReservedError
	if _, err := a.Install(named, m.Digest(), admin.InstallOptions{}); !errors.As(err, &reserved) {
		t.Errorf("a release of package rukh: %v, want ReservedError", err)
	}

	clash := copyExample(t, "greet")
	desc = filepath.Join(clash, "rukh-extension.json")
	data, _ = os.ReadFile(desc)
	json.Unmarshal(data, &d)
	cmds := d["commands"].([]any)
	cmds[0].(map[string]any)["path"] = []string{"status"}
	data, _ = json.Marshal(d)
	os.WriteFile(desc, data, 0o644)
	m, err = trust.BuildManifest(clash)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Install(clash, m.Digest(), admin.InstallOptions{})
	t.Logf("a release with the built-in's route: %v", err)
	if err == nil || !strings.Contains(err.Error(), "status") {
		t.Errorf("a release with the built-in's route: %v, want it refused naming the route", err)
	}
}

// A new store trusts the embedder's publishers and applies its starting
// profile, after the built-ins the profile exposes; a store that has a
// revision is never changed by them; a bad key is refused before
// anything is written.
func TestBuiltinSeeds(t *testing.T) {
	priv, err := trust.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := trust.MarshalPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	const start = `{"endpointNamespace":"start","cli":{"task":"owner"},"mcp":{"expose":["rukh/status"],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":1000,"maxConcurrent":1,"enforcement":"host"}}}`
	seeded := func(t *testing.T) *admin.Builtins {
		b := builtinsOf(t, statusDecl)
		b.Publishers = []admin.Publisher{{Name: "rukh-release", Key: pub}}
		b.Profile = []byte(start)
		return b
	}

	a := admin.New(testhome.TempDir(t))
	if err := a.EnsureBuiltins(context.Background(), seeded(t)); err != nil {
		t.Fatal(err)
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := a.TrustedKeys()
	if st.Profile.EndpointNamespace != "start" || len(keys) != 1 || keys[0].Publisher != "rukh-release" || st.Revision.Number != 3 {
		t.Errorf("a new store: revision %d, namespace %q, keys %v", st.Revision.Number, st.Profile.EndpointNamespace, keys)
	}

	// An existing store: the built-ins only.
	b := admin.New(testhome.TempDir(t))
	testhome.Apply(t, b, `{"endpointNamespace":"mine","cli":{"task":"owner"},"mcp":{"expose":[],"task":"owner"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":1000,"maxConcurrent":1,"enforcement":"host"}}}`)
	if err := b.EnsureBuiltins(context.Background(), seeded(t)); err != nil {
		t.Fatal(err)
	}
	st, _ = b.State()
	keys, _ = b.TrustedKeys()
	if st.Profile.EndpointNamespace != "mine" || len(keys) != 0 {
		t.Errorf("an existing store was changed: namespace %q, keys %v", st.Profile.EndpointNamespace, keys)
	}

	bad := seeded(t)
	bad.Publishers[0].Key = []byte("not a key")
	c := admin.New(testhome.TempDir(t))
	if err := c.EnsureBuiltins(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "built-in publisher rukh-release") {
		t.Errorf("a bad built-in key: %v", err)
	}
	if st, _ := c.State(); st.Revision != nil {
		t.Errorf("a bad built-in key wrote revision %d", st.Revision.Number)
	}
}
