package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/trust"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// A damaged store.db must never crash rukh: every command that meets the
// damage exits 75 with a message that names the store and says how to
// recover, and `rukh doctor` reports it. These tests damage copies of a
// real store — made by rukh itself: three releases installed, a profile
// applied, a hundred and twenty calls recorded — in many ways, and run
// real rukh processes on each copy.

// damageTemplate is a RUKH_HOME with a real store, made once.
type damageTemplate struct {
	rukh, home string
	layout     storeLayout
}

// storeLayout is where things are in the template's store.db.
type storeLayout struct {
	pageSize      int
	hwm           int    // pages in use
	root          int    // the root bucket's page
	freelist      int    // the freelist page
	records       int    // invocations/records' root page: a branch page
	releases      int    // the releases bucket's page: a leaf
	recordsLeaves []int  // its leaves
	newestMeta    int    // 0 or 1
	invocationsAt [2]int // offset and length of the invocations bucket header in the root page
}

var damage struct {
	once sync.Once
	tmpl *damageTemplate
	err  error
}

func damagedStoreTemplate(t *testing.T) *damageTemplate {
	t.Helper()
	rukh, _ := hostBinaries(t)
	damage.once.Do(func() { damage.tmpl, damage.err = makeDamageTemplate(rukh) })
	if damage.err != nil {
		t.Fatal(damage.err)
	}
	return damage.tmpl
}

func makeDamageTemplate(rukh string) (*damageTemplate, error) {
	// Beside the binaries, which TestMain removes after the tests.
	home, err := os.MkdirTemp(hostBins.dir, "damage-")
	if err != nil {
		return nil, err
	}
	run := func(args ...string) error {
		cmd := exec.Command(rukh, args...)
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("rukh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, name := range []string{"greet", "deploy", "legacy"} {
		dir, err := filepath.Abs(filepath.Join("..", "examples", name))
		if err != nil {
			return nil, err
		}
		m, err := trust.BuildManifest(dir)
		if err != nil {
			return nil, err
		}
		if err := run("ext", "install", dir, "--pin", m.Digest()); err != nil {
			return nil, err
		}
	}
	prof := filepath.Join(home, "profile.json")
	if err := os.WriteFile(prof, []byte(`{"endpointNamespace": "team", "cli": {"task": "owner"},
	  "mcp": {"expose": ["acme.greet/*"], "task": "agent"},
	  "tasks": {"owner": {"commands": ["*/*"], "deadlineMs": 60000, "maxConcurrent": 8, "enforcement": "host"},
	            "agent": {"commands": ["acme.*/*"], "deadlineMs": 30000, "maxConcurrent": 4, "enforcement": "host"}}}`), 0o600); err != nil {
		return nil, err
	}
	if err := run("profile", "apply", "-f", prof); err != nil {
		return nil, err
	}
	for i := range 120 {
		if err := run("legacy", "run", "call", fmt.Sprint(i)); err != nil {
			return nil, err
		}
	}
	tmpl := &damageTemplate{rukh: rukh, home: home}
	tmpl.layout, err = readLayout(filepath.Join(home, "data", "store.db"))
	return tmpl, err
}

// readLayout finds the pages the damage cases aim at, with bbolt on the
// intact template.
func readLayout(path string) (storeLayout, error) {
	var l storeLayout
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	if err != nil {
		return l, err
	}
	defer db.Close()
	l.pageSize = db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		l.hwm = int(tx.Size()) / l.pageSize
		l.root = int(tx.Cursor().Bucket().Root())
		l.records = int(tx.Bucket([]byte("invocations")).Bucket([]byte("records")).Root())
		l.releases = int(tx.Bucket([]byte("releases")).Root())
		if p, _ := tx.Page(l.releases); p == nil || p.Type != "leaf" {
			return fmt.Errorf("releases is not a leaf page: %+v", p)
		}
		for i := 2; i < l.hwm; i++ {
			if p, err := tx.Page(i); err == nil && p != nil && p.Type == "freelist" {
				l.freelist = i
			}
		}
		if p, _ := tx.Page(l.records); p == nil || p.Type != "branch" {
			return fmt.Errorf("invocations/records is not a branch page: %+v", p)
		}
		if tx.ID()%2 == 1 {
			l.newestMeta = 1
		}
		return nil
	})
	if err != nil {
		return l, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return l, err
	}
	branch := raw[l.records*l.pageSize:]
	for i := range int(binary.NativeEndian.Uint16(branch[10:])) {
		l.recordsLeaves = append(l.recordsLeaves, int(binary.NativeEndian.Uint64(branch[16+16*i+8:])))
	}
	// The invocations bucket's header in the root bucket's leaf.
	rootPage := raw[l.root*l.pageSize:]
	for i := range int(binary.NativeEndian.Uint16(rootPage[10:])) {
		e := rootPage[16+16*i:]
		pos, ksize := int(binary.NativeEndian.Uint32(e[4:])), int(binary.NativeEndian.Uint32(e[8:]))
		if key := e[pos : pos+ksize]; string(key) == "invocations" {
			l.invocationsAt = [2]int{l.root*l.pageSize + 16 + 16*i + pos + ksize, 16}
		}
	}
	if l.freelist == 0 || len(l.recordsLeaves) < 2 || l.invocationsAt[1] == 0 {
		return l, fmt.Errorf("unexpected layout %+v", l)
	}
	return l, nil
}

// copyHome makes a RUKH_HOME with a copy of the template's store, damaged
// by fn, and the template's releases.
func (tm *damageTemplate) copyHome(t *testing.T, fn func(db []byte) []byte) string {
	t.Helper()
	home := testhome.TempDir(t)
	data := filepath.Join(home, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(tm.home, "data", "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "store.db"), fn(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tm.home, "data", "releases"), filepath.Join(data, "releases")); err != nil {
		t.Fatal(err)
	}
	return home
}

// damageRun is one rukh process on a damaged copy.
type damageRun struct {
	args           []string
	status         int
	stdout, stderr string
}

func (tm *damageTemplate) run(t *testing.T, home string, args ...string) damageRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tm.rukh, args...)
	cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := damageRun{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("rukh %s hangs on the damaged store", strings.Join(args, " "))
	case errors.As(err, &ee):
		r.status = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	for _, crash := range []string{"panic:", "fatal error:", "goroutine ", "SIGSEGV", "unexpected fault"} {
		if strings.Contains(r.stderr, crash) || strings.Contains(r.stdout, crash) {
			t.Fatalf("rukh %s crashed (exit %d):\n%s%s", strings.Join(args, " "), r.status, r.stdout, r.stderr)
		}
	}
	// A recovered panic is reported as the damage a check finds, never
	// as the runtime's words; the recovery is said once.
	for _, words := range []string{"runtime error", "invalid memory address", "nil pointer", "index out of range", "slice bounds"} {
		if strings.Contains(r.stderr, words) || strings.Contains(r.stdout, words) {
			t.Errorf("rukh %s reports a recovered panic in the runtime's words %q:\n%s%s", strings.Join(args, " "), words, r.stdout, r.stderr)
		}
	}
	if n := strings.Count(r.stderr+r.stdout, "copy the file somewhere safe"); n > 1 {
		t.Errorf("rukh %s says the recovery %d times:\n%s%s", strings.Join(args, " "), n, r.stdout, r.stderr)
	}
	return r
}

// The commands run on every copy: each reads the store in its own way.
var damageCommands = [][]string{
	{"ext", "list"},
	{"invocations", "list"},
	{"legacy", "run", "after", "damage"},
	{"doctor"},
}

// requireDamaged requires r to be the refusal of a damaged store: exit
// 75, and a message with the store's path and the recovery.
func requireDamaged(t *testing.T, home string, r damageRun) {
	t.Helper()
	path := filepath.Join(home, "data", "store.db")
	msg := r.stderr
	if r.args[0] == "doctor" {
		msg = r.stdout
		if !strings.Contains(msg, "store:   "+path+": DAMAGED: the store at "+path+" is damaged: ") {
			t.Errorf("rukh doctor does not report the damage: %q", msg)
		}
	}
	if r.status != 75 || !strings.Contains(msg, "the store at "+path+" is damaged: ") || !strings.Contains(msg, store.Recovery()) {
		t.Errorf("rukh %s: exit %d, stdout %q, stderr %q; want exit 75 naming %s and saying %q",
			strings.Join(r.args, " "), r.status, r.stdout, r.stderr, path, store.Recovery())
	}
}

// requireFine requires r to have worked.
func requireFine(t *testing.T, r damageRun) {
	t.Helper()
	if r.status != 0 || r.stderr != "" {
		t.Errorf("rukh %s: exit %d, stderr %q; want 0", strings.Join(r.args, " "), r.status, r.stderr)
	}
}

// requireReported requires a command call to have reported the damage:
// refused (exit 75), or run with its outcome not recorded (the command's
// own exit 0, and a warning that names the store and the recovery).
func requireReported(t *testing.T, home string, r damageRun) {
	t.Helper()
	if r.status == 75 {
		requireDamaged(t, home, r)
		return
	}
	path := filepath.Join(home, "data", "store.db")
	if r.status != 0 || !strings.Contains(r.stderr, "the store at "+path+" is damaged: ") || !strings.Contains(r.stderr, store.Recovery()) {
		t.Errorf("rukh %s: exit %d, stderr %q; want 75, or 0 with the damage reported", strings.Join(r.args, " "), r.status, r.stderr)
	}
}

// Outcomes of one command on a damaged copy.
const (
	damaged  = iota // exit 75 naming the store and the recovery (the default)
	fine            // the damage is where the command does not look
	reported        // a call that ran: exit 75, or 0 with the damage reported
)

func put64(b []byte, off int, v uint64) { binary.NativeEndian.PutUint64(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.NativeEndian.PutUint32(b[off:], v) }
func put16(b []byte, off int, v uint16) { binary.NativeEndian.PutUint16(b[off:], v) }

// TestDamagedStore damages the template's store in one precise way per
// case and runs every command on a fresh copy. Damage that Open finds
// (meta pages, freelist, branch pages, bucket roots, truncation) refuses
// every command; damage deeper in a bucket's leaves refuses the commands
// that read them, and doctor; each case says which commands must still
// work. Before damaged stores were handled, such copies crashed rukh with
// exit 2 inside bbolt (a SIGSEGV in the cursor search, "page already
// freed", "freelist pgid above high water mark") or sent it round a cycle
// of pages.
func TestDamagedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rukh processes on damaged stores")
	}
	tm := damagedStoreTemplate(t)
	l := tm.layout
	page := func(id int) int { return id * l.pageSize }
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		expect map[string]int // by the command's first word; default damaged
	}{
		{"both meta pages", func(b []byte) []byte {
			b[page(0)+16+60] ^= 0xff
			b[page(1)+16+60] ^= 0xff
			return b
		}, nil},
		{"the newest meta page, bbolt falls back", func(b []byte) []byte {
			b[page(l.newestMeta)+16+60] ^= 0xff
			return b
		}, map[string]int{"ext": fine, "invocations": fine, "legacy": fine}},
		{"meta magic", func(b []byte) []byte {
			put32(b, page(0)+16, 0)
			put32(b, page(1)+16, 0)
			return b
		}, nil},
		{"freelist page type", func(b []byte) []byte { put16(b, page(l.freelist)+8, 0x02); return b }, nil},
		{"freelist page outside the file", func(b []byte) []byte {
			put64(b, page(l.freelist)+16, 1<<40)
			return b
		}, nil},
		{"freelist lists a page in use", func(b []byte) []byte {
			put64(b, page(l.freelist)+16, 2)
			return b
		}, nil},
		{"freelist count", func(b []byte) []byte { put16(b, page(l.freelist)+10, 0xfffe); return b }, nil},
		{"branch points outside the file", func(b []byte) []byte {
			put64(b, page(l.records)+16+8, 1<<40)
			return b
		}, nil},
		{"branch points at itself", func(b []byte) []byte {
			put64(b, page(l.records)+16+16+8, uint64(l.records))
			return b
		}, nil},
		{"branch points at the root", func(b []byte) []byte {
			put64(b, page(l.records)+16+8, uint64(l.root))
			return b
		}, nil},
		{"branch points at a sibling's page", func(b []byte) []byte {
			put64(b, page(l.records)+16+8, uint64(l.recordsLeaves[1]))
			return b
		}, nil},
		{"branch element count", func(b []byte) []byte { put16(b, page(l.records)+10, 0xffff); return b }, nil},
		{"branch page type", func(b []byte) []byte { put16(b, page(l.records)+8, 0x08); return b }, nil},
		{"branch key outside the page", func(b []byte) []byte {
			put32(b, page(l.records)+16, 0xfffff)
			return b
		}, nil},
		{"root leaf element outside the page", func(b []byte) []byte {
			put32(b, page(l.root)+16+4, 0xffffff)
			return b
		}, nil},
		{"root leaf element count", func(b []byte) []byte { put16(b, page(l.root)+10, 0x7fff); return b }, nil},
		{"bucket root outside the file", func(b []byte) []byte {
			put64(b, l.invocationsAt[0], 1<<40)
			return b
		}, nil},
		{"bucket root at the root page", func(b []byte) []byte {
			put64(b, l.invocationsAt[0], uint64(l.root))
			return b
		}, nil},
		// The leaves below a bucket's branch pages are read by the
		// commands that need them, and by doctor; the others work. A
		// call writes its record through them: it is refused, or it runs
		// and reports that its outcome could not be recorded.
		{"record leaves' keys outside their pages", func(b []byte) []byte {
			for _, leaf := range l.recordsLeaves {
				put32(b, page(leaf)+16+8, 0xffff)
			}
			return b
		}, map[string]int{"ext": fine, "legacy": reported}},
		{"record leaves' values outside their pages", func(b []byte) []byte {
			for _, leaf := range l.recordsLeaves {
				put32(b, page(leaf)+16+12, 0x7fffffff)
			}
			return b
		}, map[string]int{"ext": fine, "legacy": reported}},
		{"oldest record leaf's page id", func(b []byte) []byte {
			put64(b, page(l.recordsLeaves[0]), 3)
			return b
		}, map[string]int{"ext": fine, "invocations": fine}},
		{"release records' values outside their page", func(b []byte) []byte {
			for i := range int(binary.NativeEndian.Uint16(b[page(l.releases)+10:])) {
				put32(b, page(l.releases)+16+16*i+12, 0x7fffffff)
			}
			return b
		}, nil},
		{"truncated to half", func(b []byte) []byte { return b[:page(l.hwm/2)] }, nil},
		{"truncated by one page", func(b []byte) []byte { return b[:page(l.hwm-1)] }, nil},
		{"truncated to two pages", func(b []byte) []byte { return b[:page(2)] }, nil},
		{"truncated inside the first page", func(b []byte) []byte { return b[:100] }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range damageCommands {
				home := tm.copyHome(t, func(b []byte) []byte { return tc.damage(bytes.Clone(b)) })
				r := tm.run(t, home, args...)
				switch tc.expect[args[0]] {
				case fine:
					requireFine(t, r)
				case reported:
					requireReported(t, home, r)
				default:
					requireDamaged(t, home, r)
				}
			}
		})
	}
}

// TestDamagedStoreRandom flips random bytes in the pages of 32 copies, as
// the reproduction did, and runs every command on each: no crash,
// no hang, and every refusal is exit 75 naming the store and the recovery.
// Where the damage is harmless (unused bytes, a string's content that
// still decodes) a command may work; doctor reports what it finds.
func TestDamagedStoreRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rukh processes on damaged stores")
	}
	tm := damagedStoreTemplate(t)
	l := tm.layout
	for seed := range uint64(32) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			damage := func(b []byte) []byte {
				b = bytes.Clone(b)
				// Eight runs of 1–8 bytes anywhere in the pages in use,
				// meta pages included.
				for range 8 {
					at := rng.IntN(l.hwm * l.pageSize)
					for i := range 1 + rng.IntN(8) {
						if at+i < len(b) {
							b[at+i] = byte(rng.Uint32())
						}
					}
				}
				return b
			}
			raw := tm.copyHome(t, func(b []byte) []byte { return damage(b) })
			damaged, err := os.ReadFile(filepath.Join(raw, "data", "store.db"))
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range damageCommands {
				home := tm.copyHome(t, func([]byte) []byte { return bytes.Clone(damaged) })
				r := tm.run(t, home, args...)
				if r.status != 0 {
					requireDamaged(t, home, r)
				}
			}
		})
	}
}
