package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/wrapper"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// WrapperError refuses a profile's wrapper, naming it.
type WrapperError struct {
	Index int
	ID    string
	Err   error
}

func (e *WrapperError) Error() string {
	what := fmt.Sprintf("/wrappers/%d", e.Index)
	if e.ID != "" {
		what += fmt.Sprintf(" (owner/%s)", e.ID)
	}
	return fmt.Sprintf("%s: %v; nothing was changed", what, e.Err)
}

func (e *WrapperError) Unwrap() error { return e.Err }

// ownerWrappers is a profile's wrappers, checked and staged as the
// release of package owner, ready for the profile's revision.
type ownerWrappers struct {
	install *pendingInstall
	wraps   map[string]string // package → the wrapped release's digest
}

// stageWrappers checks p's wrappers against the active revision and
// builds their release: its descriptor (each wrapper a managed command
// the core binary serves as `NAMEd --wrapper ID`), a copy of each wrapped
// release, the core binary, and the table the served wrapper reads. It
// returns nil when p has no wrappers.
func (a *Admin) stageWrappers(p *profile.Profile) (*ownerWrappers, error) {
	if len(p.Wrappers) == 0 {
		return nil, nil
	}
	exe, err := a.Core, error(nil)
	if exe == "" {
		exe, err = os.Executable()
	}
	if err != nil {
		return nil, fmt.Errorf("the core binary: %w", err)
	}
	src, err := os.MkdirTemp(a.DataDir, ".wrappers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(src)

	ow := &ownerWrappers{wraps: map[string]string{}}
	table := map[string]*wrapper.Entry{}
	var cmds []map[string]json.RawMessage
	var argvs [][]wrapper.Arg
	var copies [][2]string // the wrapped releases: from, to
	for i, raw := range p.Wrappers {
		m, wraps, argv, err := splitWrapper(raw)
		var id string
		json.Unmarshal(m["id"], &id)
		if err != nil {
			return nil, &WrapperError{Index: i, ID: id, Err: err}
		}
		rel, cmd, err := a.wrapped(wraps)
		if err != nil {
			return nil, &WrapperError{Index: i, ID: id, Err: err}
		}
		dir := path.Join("wrapped", strings.TrimPrefix(rel.Digest, "sha256:"))
		if _, ok := ow.wraps[wraps.Package]; !ok {
			copies = append(copies, [2]string{rel.Dir, filepath.Join(src, filepath.FromSlash(dir))})
		}
		ow.wraps[wraps.Package] = rel.Digest
		m["execute"] = coreExecute(cliname.Name(), wrapper.Flag, id, map[string]string{"kind": "text"})
		cmds = append(cmds, m)
		argvs = append(argvs, argv)
		table[id] = &wrapper.Entry{Wraps: wraps, Digest: rel.Digest, Program: path.Join(dir, cmd.Execute.Program), Args: cmd.Execute.Args, Argv: argv}
	}
	sum := sha256.Sum256(slices.Concat(p.Wrappers...))
	desc, err := json.Marshal(map[string]any{
		"schema": descriptor.FormatV2, "package": wrapper.Package, "version": "0.0.0-w" + hex.EncodeToString(sum[:6]),
		"publisher": wrapper.Package, "description": "The owner's wrappers of version 1 commands (the profile's wrappers)", "commands": cmds,
	})
	if err != nil {
		return nil, err
	}
	d, err := descriptor.Decode(desc)
	if err != nil {
		if i := commandAt(err, len(cmds)); i >= 0 {
			var id string
			json.Unmarshal(cmds[i]["id"], &id)
			return nil, &WrapperError{Index: i, ID: id, Err: err}
		}
		return nil, &WrapperError{Index: -1, Err: err}
	}
	for i, c := range d.Commands {
		types := map[string]string{}
		for _, in := range c.Inputs {
			t := string(in.Spec.Type)
			if in.Spec.Item != nil {
				t += ":" + string(in.Spec.Item.Type)
			}
			types[in.Spec.ID] = t
		}
		if err := wrapper.Check(argvs[i], types); err != nil {
			return nil, &WrapperError{Index: i, ID: c.ID, Err: err}
		}
		table[c.ID].Types = types
	}
	for _, c := range copies {
		if err := os.MkdirAll(c[1], 0o700); err != nil {
			return nil, err
		}
		if _, err := trust.CopyRelease(c[0], c[1]); err != nil {
			return nil, fmt.Errorf("copying %s for its wrapper: %w", c[0], err)
		}
	}
	tableJSON, err := json.MarshalIndent(table, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, wrapper.FileName), tableJSON, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(src, descriptor.FileName), desc, 0o644); err != nil {
		return nil, err
	}
	if err := copyExe(exe, filepath.Join(src, "bin", cliname.Name()+"d")); err != nil {
		return nil, fmt.Errorf("copying the core binary into the wrappers' release: %w", err)
	}
	m, err := trust.BuildManifest(src)
	if err != nil {
		return nil, err
	}
	if ow.install, err = a.prepareInstall(context.Background(), src, m.Digest(), InstallOptions{wrappers: true}); err != nil {
		return nil, err
	}
	return ow, nil
}

// splitWrapper separates a wrapper's "wraps" and "argv" from its command
// declaration.
func splitWrapper(raw json.RawMessage) (map[string]json.RawMessage, wrapper.Wraps, []wrapper.Arg, error) {
	var m map[string]json.RawMessage
	var w wrapper.Wraps
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, w, nil, fmt.Errorf("a wrapper is a JSON object: %w", err)
	}
	for _, k := range []string{"execute", "result"} {
		if _, ok := m[k]; ok {
			return m, w, nil, fmt.Errorf("%q is not a wrapper's: it runs what \"wraps\" names with \"argv\", and its result is that program's stdout as text", k)
		}
	}
	if err := strictUnmarshal(m["wraps"], &w); err != nil || w.Package == "" || w.Command == "" {
		return m, w, nil, errors.New(`"wraps" names the version 1 command: {"package": PACKAGE, "command": COMMAND ID}`)
	}
	var argv []wrapper.Arg
	if err := json.Unmarshal(m["argv"], &argv); err != nil {
		return m, w, nil, fmt.Errorf(`"argv" is the wrapped program's arguments, each a string or {"input": ID}: %v`, err)
	}
	delete(m, "wraps")
	delete(m, "argv")
	return m, w, argv, nil
}

// wrapped is the active, trusted release of w.Package and its version 1
// command w.Command.
func (a *Admin) wrapped(w wrapper.Wraps) (*store.Release, *descriptor.Command, error) {
	var rel *store.Release
	var trusted bool
	err := a.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		_, c, err := activeCandidate(tx)
		if err != nil {
			return err
		}
		ap, ok := c.Packages[w.Package]
		if !ok {
			return nil
		}
		if rel, err = tx.Release(ap.Digest); err != nil || rel == nil {
			return err
		}
		if rel.Pinned {
			trusted = true // the owner pinned its digest at install
			return nil
		}
		trusted = c.Keys[rel.Publisher+"/"+rel.SignedBy]
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case rel == nil:
		return nil, nil, fmt.Errorf("package %s is not installed and active; install and activate the release it wraps first (`%s ext list`)", w.Package, cliname.Name())
	case !trusted:
		return nil, nil, fmt.Errorf("%s %s is no longer signed by a key the owner trusts; trust its publisher again, or reinstall it with --pin", rel.Package, rel.Version)
	}
	d, err := descriptor.Decode(rel.Descriptor)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", rel.Package, rel.Version, err)
	}
	for _, c := range d.Commands {
		if c.ID != w.Command {
			continue
		}
		if d.Format() != 1 {
			return nil, nil, fmt.Errorf("%s is a version 2 command, with a contract of its own: expose it, do not wrap it", c.Identity)
		}
		return rel, c, nil
	}
	return nil, nil, fmt.Errorf("%s %s has no command %q", rel.Package, rel.Version, w.Command)
}

// apply installs and activates the wrappers' release in c, once the
// releases they wrap are still the active ones.
func (ow *ownerWrappers) apply(tx *store.Tx, c *Candidate) error {
	for pkg, digest := range ow.wraps {
		if c.Packages[pkg].Digest != digest {
			return fmt.Errorf("the active release of %s changed while the profile was applied; apply it again", pkg)
		}
	}
	return ow.install.apply(context.Background(), tx, c)
}

// strictUnmarshal decodes data into v, refusing members v does not have.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Wrapped is what the wrapper identity of the owner's release digest
// runs: the version 1 command and the release it was copied from, which
// the wrappers' release names and its digest pins. It is nil for any
// other command.
func (a *Admin) Wrapped(digest, identity string) (*wrapper.Entry, error) {
	id, ok := strings.CutPrefix(identity, wrapper.Package+"/")
	if !ok {
		return nil, nil
	}
	var rel *store.Release
	if err := a.view(func(tx *store.Tx) error {
		var err error
		if tx != nil {
			rel, err = tx.Release(digest)
		}
		return err
	}); err != nil || rel == nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(rel.Dir, wrapper.FileName))
	if err != nil {
		return nil, err
	}
	var table map[string]*wrapper.Entry
	if err := json.Unmarshal(data, &table); err != nil {
		return nil, fmt.Errorf("%s of release %s: %w", wrapper.FileName, digest, err)
	}
	return table[id], nil
}
