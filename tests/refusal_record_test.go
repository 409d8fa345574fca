package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// refusalProfile runs the CLI under a task that keeps destructive calls
// for the owner's approval, so that `rukh drop` is refused with 77.
var refusalProfile = strings.Replace(approvalProfile, `"cli":{"task":"owner"}`, `"cli":{"task":"agent"}`, 1)

// TestRefusalRecord makes a CLI call that ends with 77 (approval
// required, nothing runs), on both hosts, and checks what the owner reads
// about it: `invocations show` and `invocations show --json` and `list
// --json` say the exit status 77 the CLI ended with, with the outcome;
// `approve --list --json` gives the inputs as a JSON object, not a string.
func TestRefusalRecord(t *testing.T) {
	if refusalProfile == approvalProfile {
		t.Fatal("approvalProfile no longer has the CLI task to replace")
	}
	forEachHost(t, func(t *testing.T, host *testHost) {
		h := &approvalHome{rukh: host.Rukh, dir: testhome.TempDir(t)}
		rel := probeRelease(t, h.dir, approvalRelease)
		h.home = filepath.Join(h.dir, "home")
		a := testhome.InstallPinned(t, filepath.Join(h.home, "data"), rel)
		if _, _, err := a.ApplyProfile([]byte(refusalProfile)); err != nil {
			t.Fatal(err)
		}
		h.env = append(os.Environ(), "RUKH_HOME="+h.home)
		host.serve(t, h.home)
		target := filepath.Join(h.dir, "orders")

		_, stderr, status := h.rukhCLI(t, nil, nil, "drop", target)
		if status != 77 || !strings.Contains(stderr, "approv") {
			t.Fatalf("rukh drop: exit %d, %q; want 77, approval required", status, stderr)
		}
		if n := runs(t, target); n != 0 {
			t.Fatalf("the refused call ran %d times", n)
		}

		list, _, _ := h.rukhCLI(t, nil, nil, "invocations", "list", "--json", "-n", "1")
		var recs []map[string]any
		if err := json.Unmarshal([]byte(list), &recs); err != nil || len(recs) != 1 {
			t.Fatalf("invocations list --json: %v\n%s", err, list)
		}
		id, _ := recs[0]["id"].(string)
		if recs[0]["outcome"] != "rejected" || recs[0]["reason"] != "approval_required" || recs[0]["exitStatus"] != float64(77) {
			t.Errorf("invocations list --json: %s; want rejected, approval_required, exitStatus 77", list)
		}
		if _, ok := recs[0]["commandExitStatus"]; ok {
			t.Errorf("invocations list --json: a commandExitStatus for a command that never ran: %s", list)
		}

		show, _, status := h.rukhCLI(t, nil, nil, "invocations", "show", id, "--json")
		var rec map[string]any
		if err := json.Unmarshal([]byte(show), &rec); err != nil || status != 0 {
			t.Fatalf("invocations show --json: exit %d, %v\n%s", status, err, show)
		}
		if rec["exitStatus"] != float64(77) || rec["outcome"] != "rejected" {
			t.Errorf("invocations show --json: %s", show)
		}
		text, _, _ := h.rukhCLI(t, nil, nil, "invocations", "show", id)
		for _, re := range []string{`(?m)^outcome:\s+rejected$`, `(?m)^reason:\s+approval_required$`, `(?m)^exit status:\s+77$`} {
			if !regexp.MustCompile(re).MatchString(text) {
				t.Errorf("invocations show: no line %s in\n%s", re, text)
			}
		}

		out, _, status := h.rukhCLI(t, nil, nil, "approve", "--list", "--json")
		var rows []map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &rows); err != nil || status != 0 || len(rows) != 1 {
			t.Fatalf("approve --list --json: exit %d, %v\n%s", status, err, out)
		}
		var inputs map[string]struct {
			Value    any  `json:"value"`
			Explicit bool `json:"explicit"`
		}
		if err := json.Unmarshal(rows[0]["inputs"], &inputs); err != nil {
			t.Fatalf("approve --list --json: inputs %s is not a JSON object: %v", rows[0]["inputs"], err)
		}
		if inputs["arg"].Value != target || !inputs["arg"].Explicit || inputs["what"].Value != "drop" || inputs["what"].Explicit {
			t.Errorf("approve --list --json: inputs %s", rows[0]["inputs"])
		}
		if _, ok := rows[0]["inputsText"]; ok {
			t.Errorf("approve --list --json: inputsText beside whole inputs: %s", out)
		}
	})
}
