package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rukh-cli/rukh/internal/atomicfile"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// An embedder's built-in commands (ADR 0012) are a release like any
// other, made by the core itself: package NAME (the CLI's own namespace),
// published by NAME, whose every command runs the core binary as
// `NAMEd --builtin ID` and speaks rukh.ipc/1. The release holds a copy of
// the core binary, so what runs is what its digest names, under the same
// confinement, deadline, records and result validation as an extension.
// It is installed and activated by EnsureBuiltins when the core starts,
// and again when the binary or a declaration changes.

// BuiltinFlag is the core binary's first argument when it runs one
// built-in command: `NAMEd --builtin ID`.
const BuiltinFlag = "--builtin"

// Builtins is the release of an embedder's built-in commands.
type Builtins struct {
	Name    string // the CLI's name: the package, its publisher, and NAMEd
	Version string // the release's version (the embedder's, else the build's)
	// Commands are the declarations: each a command entry of
	// rukh.extension/2 (id, path, summary, inputs, effects, machine,
	// interaction, …) with its "result" beside them and no "execute",
	// which the core writes.
	Commands []json.RawMessage
	Exe      string // the core binary
	// Publishers are trusted, and Profile applied, when the store has no
	// revision yet: the CLI trusts its own publisher out of the box. The
	// owner changes or removes both like any other; a store that has a
	// revision is never changed by them.
	Publishers []Publisher
	Profile    []byte

	valid bool   // Validate found nothing wrong
	desc  []byte // the descriptor Validate checked
}

// Validate checks the declarations with the descriptor validator and
// what b brings besides them (Check), once: EnsureBuiltins then reuses
// the descriptor, so a process that validated b at start does not do it
// again for its host.
func (b *Builtins) Validate() error {
	if b.valid {
		return nil
	}
	if len(b.Commands) > 0 {
		desc, err := b.Descriptor()
		if err != nil {
			return err
		}
		b.desc = desc
	}
	if err := b.Check(); err != nil {
		return err
	}
	b.valid = true
	return nil
}

// Publisher is a publisher an embedder trusts out of the box.
type Publisher struct {
	Name string
	Key  []byte // the public key, as `trust keygen` writes OUT.pub
}

// Check checks what b brings besides its commands: each publisher's name
// and key, and that the starting profile parses.
func (b *Builtins) Check() error {
	for _, p := range b.Publishers {
		if !descriptor.ValidPublisher(p.Name) {
			return fmt.Errorf("built-in publisher %q is not a publisher name", p.Name)
		}
		if _, err := trust.ParsePublicKey(p.Key); err != nil {
			return fmt.Errorf("built-in publisher %s: %w", p.Name, err)
		}
	}
	if b.Profile != nil {
		if _, err := profile.Parse(b.Profile); err != nil {
			return fmt.Errorf("the starting profile: %w", err)
		}
	}
	return nil
}

// fresh reports whether the store has no revision yet.
func (a *Admin) fresh() (bool, error) {
	fresh := true
	err := a.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		n, err := tx.ActiveNumber()
		fresh = n == 0
		return err
	})
	return fresh, err
}

// trustPublishers trusts b's publishers.
func (a *Admin) trustPublishers(b *Builtins) error {
	for _, p := range b.Publishers {
		pub, _ := trust.ParsePublicKey(p.Key) // Check checked it
		if _, _, err := a.trustKey(p.Name, pub); err != nil {
			return fmt.Errorf("trusting the built-in publisher %s: %w", p.Name, err)
		}
	}
	return nil
}

// applyStartingProfile applies b's profile, if it has one.
func (a *Admin) applyStartingProfile(b *Builtins) error {
	if b.Profile == nil {
		return nil
	}
	// Its wrappers' release holds the same core binary as the built-ins'.
	wa := *a
	wa.Core = b.Exe
	if _, _, err := wa.ApplyProfile(b.Profile); err != nil {
		return fmt.Errorf("applying the starting profile: %w", err)
	}
	return nil
}

// BuiltinError is a declaration the descriptor validator refused; the
// core does not start with it.
type BuiltinError struct {
	Index int    // the declaration's index in Builtins.Commands
	ID    string // its id, when it has one
	Err   error
}

func (e *BuiltinError) Error() string {
	what := fmt.Sprintf("built-in command #%d", e.Index)
	if e.ID != "" {
		what = fmt.Sprintf("built-in command %q", e.ID)
	}
	return fmt.Sprintf("%s is declared wrongly: %v", what, e.Err)
}

func (e *BuiltinError) Unwrap() error { return e.Err }

// Descriptor is the release's rukh-extension.json, checked by the same
// validator as every release's.
func (b *Builtins) Descriptor() ([]byte, error) {
	cmds := make([]map[string]json.RawMessage, len(b.Commands))
	for i, raw := range b.Commands {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, &BuiltinError{Index: i, Err: fmt.Errorf("not a JSON object: %w", err)}
		}
		var id string
		json.Unmarshal(m["id"], &id)
		if _, ok := m["execute"]; ok {
			return nil, &BuiltinError{Index: i, ID: id, Err: errors.New(`"execute" is the core's: a built-in runs as the core binary; declare its "result" instead`)}
		}
		result, ok := m["result"]
		if !ok {
			return nil, &BuiltinError{Index: i, ID: id, Err: errors.New(`"result" is missing: {"kind":"text"} or {"kind":"structured","schema":…}`)}
		}
		delete(m, "result")
		m["execute"] = coreExecute(b.Name, BuiltinFlag, id, result)
		cmds[i] = m
	}
	data, err := json.Marshal(map[string]any{
		"schema": descriptor.FormatV2, "package": b.Name, "version": b.Version, "publisher": b.Name, "commands": cmds,
	})
	if err != nil {
		return nil, err
	}
	if _, err := descriptor.Decode(data); err != nil {
		return nil, b.blame(err)
	}
	return data, nil
}

// blame names the declaration a validator error points into
// (/commands/N/…).
func (b *Builtins) blame(err error) error {
	if i := commandAt(err, len(b.Commands)); i >= 0 {
		var m struct {
			ID string `json:"id"`
		}
		json.Unmarshal(b.Commands[i], &m)
		return &BuiltinError{Index: i, ID: m.ID, Err: err}
	}
	return &BuiltinError{Index: -1, Err: err}
}

// commandAt is the index of the command (of n) a descriptor validator's
// error points into (/commands/N/…), or -1.
func commandAt(err error, n int) int {
	var i int
	if _, serr := fmt.Sscanf(err.Error(), "/commands/%d/", &i); serr == nil && i >= 0 && i < n {
		return i
	}
	return -1
}

// coreExecute is the execute section of a command the core binary serves
// CLI name as `NAMEd FLAG ID` (a built-in, or an owner's wrapper).
func coreExecute(name, flag, id string, result any) json.RawMessage {
	exec, _ := json.Marshal(map[string]any{
		"mapping": "managed", "program": "bin/" + name + "d", "args": []string{flag, id}, "result": result,
	})
	return exec
}

// EnsureBuiltins makes the active revision run b's commands, after
// trusting b's publishers and applying its profile on a store that has
// no revision yet: when it
// already does (the binary and the declarations are those of the last
// install, and the active revision has package b.Name at that release),
// it reads one record and changes nothing; otherwise it builds the
// release and installs and activates it as one new revision.
func (a *Admin) EnsureBuiltins(ctx context.Context, b *Builtins) error {
	if err := b.Validate(); err != nil {
		return err
	}
	seeding := len(b.Publishers) > 0 || b.Profile != nil
	if len(b.Commands) == 0 {
		if fresh, err := a.fresh(); err != nil || !fresh || !seeding {
			return err
		}
		if err := a.trustPublishers(b); err != nil {
			return err
		}
		return a.applyStartingProfile(b)
	}
	desc := b.desc
	key, err := builtinKey(b.Exe, desc)
	if err != nil {
		return err
	}
	cache := filepath.Join(a.DataDir, "builtins.id")
	if data, err := os.ReadFile(cache); err == nil {
		if k, digest, ok := strings.Cut(strings.TrimSpace(string(data)), " "); ok && k == key {
			if active, err := a.activeDigest(b.Name); err == nil && active == digest {
				return nil // and so the store has a revision: nothing to seed
			}
		}
	}
	fresh := false
	if seeding {
		if fresh, err = a.fresh(); err != nil {
			return err
		}
	}
	if fresh {
		if err := a.trustPublishers(b); err != nil {
			return err
		}
	}
	src, err := os.MkdirTemp(a.DataDir, ".builtins-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, descriptor.FileName), desc, 0o644); err != nil {
		return err
	}
	if err := copyExe(b.Exe, filepath.Join(src, "bin", b.Name+"d")); err != nil {
		return fmt.Errorf("copying the core binary into its built-in release: %w", err)
	}
	m, err := trust.BuildManifest(src)
	if err != nil {
		return err
	}
	previous, _ := a.activeDigest(b.Name)
	if _, err := a.InstallContext(ctx, src, m.Digest(), InstallOptions{builtin: true}); err != nil {
		return fmt.Errorf("installing the built-in commands of %s: %w", b.Name, err)
	}
	if previous != "" && previous != m.Digest() {
		// The last build's copy of the core is of no more use: built-ins
		// are never rolled back to.
		if _, _, err := a.Remove(previous); err != nil {
			return fmt.Errorf("removing the previous built-in release of %s: %w", b.Name, err)
		}
	}
	if fresh {
		// After the built-ins: a profile may expose them.
		if err := a.applyStartingProfile(b); err != nil {
			return err
		}
	}
	return atomicfile.Replace(cache, []byte(key+" "+m.Digest()+"\n"), 0o600)
}

// activeDigest is the release of package pkg in the active revision, or
// "".
func (a *Admin) activeDigest(pkg string) (string, error) {
	var digest string
	err := a.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		n, err := tx.ActiveNumber()
		if err != nil || n == 0 {
			return err
		}
		hdr, err := tx.RevisionHeader(n)
		if err != nil || hdr == nil {
			return err
		}
		for _, p := range hdr.Packages {
			if p.Package == pkg {
				digest = p.Digest
			}
		}
		return nil
	})
	return digest, err
}

// builtinKey names the binary (device, inode, size, modification time)
// and the descriptor: when neither changed, neither did the release.
func builtinKey(exe string, desc []byte) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		return "", fmt.Errorf("the core binary: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d %d %d %d\n", st.Dev, st.Ino, st.Size, st.Mtim.Nano())
	h.Write(desc)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyExe copies the binary at src to dst, mode 0755.
func copyExe(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
