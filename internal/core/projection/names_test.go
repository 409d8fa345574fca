package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

func TestSlug(t *testing.T) {
	long64 := "abcdefghij.klmnopqrst.uvwxyz0123.456789abcd.efghijklmn.opqrstuvw" // 64 bytes
	id64 := "status-of-every-deployment-in-every-environment-and-region-now12"   // 64 bytes
	for _, tc := range []struct {
		identity string
		max      int
		want     string
	}{
		{"acme.deploy/status", 48, "acme_deploy_status"},
		{"acme.deploy/status", 18, "acme_deploy_status"},
		{"acme.deploy/status", 17, "a_deploy_status"},
		{"acme.deploy/status", 15, "a_deploy_status"},
		{"acme.deploy/status", 14, "a_d_status"},
		{"acme.deploy/status", 10, "a_d_status"},
		{"acme.deploy/status", 9, "d_status"},
		{"acme.deploy/status", 6, "status"},
		{"acme.deploy/status", 4, "stat"},
		{"acme.deploy/status", 1, "s"},
		{"acme.deploy/status", 0, "s"},
		{"acme.deploy/status", -5, "s"},
		{"acme.tools/format-json", 18, "a_t_format-json"},
		{"acme.tools/format-json", 48, "acme_tools_format-json"},
		{"Acme.Deploy/Status", 48, "acme_deploy_status"},
		{"my-org.x/-weird-", 48, "my-org_x_weird"},
		{"a__b/c__d", 48, "a_b_c_d"},
		{"a..b//c", 48, "a_b_c"},
		{"acme.deploy/", 48, "acme_deploy"},
		{"ünï.cödé/grüß", 48, "n_c_d_gr"},
		{"acme/déploy", 48, "acme_d_ploy"},
		{"日本/語", 48, "tool"},
		{"", 48, "tool"},
		{"", 2, "to"},
		{"/", 48, "tool"},
		{"status", 48, "status"},
		{"acme.deploy/status\xff\xfe", 48, "acme_deploy_status"},
		{"acme.deploy/a-b-c-d", 4, "a-b"}, // never ends with "-"
		{long64 + "/" + id64, 48, "status-of-every-deployment-in-every-environment"},
		{long64 + "/" + id64, 18, "status-of-every-de"},
		{long64 + "/status", 48, "a_k_u_456789abcd_efghijklmn_opqrstuvw_status"},
		{long64 + "/status", 18, "a_k_u_4_e_o_status"},
		{long64 + "/status", 12, "4_e_o_status"},
	} {
		if got := Slug(tc.identity, tc.max); got != tc.want {
			t.Errorf("Slug(%q, %d) = %q, want %q", tc.identity, tc.max, got, tc.want)
		}
	}
}

var reSlug = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$`)

// TestSlugProperties checks the promises of Slug on random identities:
// never empty, within max, [a-z0-9_-], no "__", no separator at either end.
func TestSlugProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcxyz0189-_./ABZé日\x00 \"\\"
	runes := []rune(alphabet)
	for range 20000 {
		n := r.IntN(150)
		var b strings.Builder
		for range n {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		id, max := b.String(), r.IntN(60)-2
		got := Slug(id, max)
		if len(got) > max && !(max < 1 && len(got) == 1) {
			t.Fatalf("Slug(%q, %d) = %q: too long", id, max, got)
		}
		if !reSlug.MatchString(got) || strings.Contains(got, "__") {
			t.Fatalf("Slug(%q, %d) = %q: not a slug", id, max, got)
		}
	}
}

// canonicalFixture is the RFC 8785 canonical JSON of the fingerprint array
// for a fixed input, written out by hand.
const canonicalFixture = `["rukh.mcp-tool/1","team",7,"acme.deploy/status"]`

func TestToolNameGolden(t *testing.T) {
	sum := sha256.Sum256([]byte(canonicalFixture))
	fp := hex.EncodeToString(sum[:])
	if got := Fingerprint("team", 7, "acme.deploy/status"); got != fp {
		t.Fatalf("Fingerprint = %s, want %s", got, fp)
	}
	if c, err := jcs.Transform([]byte(canonicalFixture)); err != nil || string(c) != canonicalFixture {
		t.Fatalf("the fixture is not canonical: %s, %v", c, err)
	}
	const wantFP = "cf04a747c381527948026800019f4cd231011652f6379c7296ed4f7ab14afa25"
	if fp != wantFP {
		t.Fatalf("sha256 of the fixture = %s, want %s", fp, wantFP)
	}
	for _, tc := range []struct {
		naming Naming
		want   string
	}{
		{Full, "acme_deploy_status__" + wantFP},
		{"", "acme_deploy_status__" + wantFP},
		{Compact, "acme_deploy_status__" + wantFP[:32]},
	} {
		if got := ToolName("team", 7, "acme.deploy/status", tc.naming); got != tc.want {
			t.Errorf("ToolName(%q) = %s, want %s", tc.naming, got, tc.want)
		}
	}
}

// TestFingerprintIsRFC8785 compares the hand-written canonical encoding
// with jcs.Transform for strings that need escaping and for the extreme
// revisions.
func TestFingerprintIsRFC8785(t *testing.T) {
	strs := []string{"team", "", `q"uote`, `back\slash`, "\b\t\n\f\r", "\x00\x01\x1f\x7f", "<>&", "\u2028\u2029",
		"é日本🙂", "acme.deploy/status", "bad\xffutf8"}
	for _, ns := range strs {
		for _, id := range strs {
			for _, rev := range []uint64{0, 1, 7, 1 << 32, MaxRevision} {
				raw, err := json.Marshal([]any{FingerprintDomain, ns, rev, id})
				if err != nil {
					t.Fatal(err)
				}
				want, err := jcs.Transform(raw)
				if err != nil {
					t.Fatal(err)
				}
				if got := fingerprintInput(ns, rev, id); string(got) != string(want) {
					t.Fatalf("fingerprintInput(%q, %d, %q) = %s, want %s", ns, rev, id, got, want)
				}
			}
		}
	}
}

func TestToolNameLengths(t *testing.T) {
	pkg := strings.Repeat("p", 64)
	id := "c" + strings.Repeat("0", 63)
	identity := pkg + "/" + id
	full := ToolName("a-namespace-of-32-characters-xyz", MaxRevision, identity, Full)
	if len(full) != 114 {
		t.Errorf("full name of the longest identity is %d characters, want 114: %s", len(full), full)
	}
	compact := ToolName("a-namespace-of-32-characters-xyz", MaxRevision, identity, Compact)
	if len(compact) != 52 {
		t.Errorf("compact name of the longest identity is %d characters, want 52: %s", len(compact), compact)
	}
	if n := len("mcp__rukh__" + compact); n > 64 {
		t.Errorf("with a client prefix the compact name is %d characters", n)
	}
	reName := regexp.MustCompile(`^[a-z0-9_-]+__[0-9a-f]+$`)
	for _, n := range []string{full, compact} {
		if !reName.MatchString(n) {
			t.Errorf("%q is not slug__hex", n)
		}
	}
}

// TestNamesChangeWithRevision: the revision is in the fingerprint, so no
// name of one revision is a name of another (invariant I7,
// docs/invariants.md).
func TestNamesChangeWithRevision(t *testing.T) {
	for _, naming := range []Naming{Full, Compact} {
		seen := make(map[string]uint64)
		for rev := uint64(1); rev <= 500; rev++ {
			for _, id := range []string{"acme.deploy/status", "acme.greet/hello"} {
				n := ToolName("team", rev, id, naming)
				if prev, ok := seen[n]; ok {
					t.Fatalf("%s: %s names a tool in revisions %d and %d", naming, n, prev, rev)
				}
				seen[n] = rev
			}
		}
		if ToolName("team", 1, "acme.deploy/status", naming) == ToolName("other", 1, "acme.deploy/status", naming) {
			t.Errorf("%s: the namespace does not change the name", naming)
		}
	}
}
