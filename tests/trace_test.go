package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestRefusalsLeaveATrace: every refused attempt is recorded with what it
// attempted (issue 9 item 8): a denial with the action and the resource
// the task did not allow (after the path was cleaned and its symlinks
// resolved), an enforcement refusal with the profile that could not be
// applied, each visible in `invocations show`.
func TestRefusalsLeaveATrace(t *testing.T) {
	c := newConfined(t, "strict")
	last := func() map[string]any {
		t.Helper()
		out, _, _ := c.run(t, "invocations", "list", "-n", "1", "--json")
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("invocations list: %v\n%s", err, out)
		}
		show, _, _ := c.run(t, "invocations", "show", rows[0]["id"].(string), "--json")
		var rec map[string]any
		if err := json.Unmarshal([]byte(show), &rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for _, tc := range []struct {
		name, arg, resource string
	}{
		{"not granted", filepath.Join(c.srv, "private/a.txt"), "path:" + filepath.Join(c.srv, "private/a.txt")},
		{"traversal", filepath.Join(c.srv, "public/../private/a.txt"), "path:" + filepath.Join(c.srv, "private/a.txt")},
		{"symlink out", filepath.Join(c.srv, "public/link.txt"), "path:" + filepath.Join(c.srv, "private/a.txt")},
	} {
		if _, _, status := c.run(t, "read", tc.arg); status != 77 {
			t.Fatalf("%s: exit %d, want 77", tc.name, status)
		}
		rec := last()
		if rec["reason"] != "denied" || rec["action"] != "files.read" || rec["resource"] != tc.resource || rec["enforcement"] != "strict" {
			t.Errorf("%s: record %v; want denied files.read on %s under strict", tc.name, rec, tc.resource)
		}
	}

	// The same strict task with no helper: refused, and the record says
	// which enforcement could not be applied.
	os.Remove(filepath.Join(c.dir, "bin", "rukh-sandbox"))
	c.env = append(c.env, "PATH=/usr/bin:/bin")
	if _, _, status := c.run(t, "probe", "tmpdir"); status != 69 {
		t.Fatalf("without the helper: exit %d, want 69", status)
	}
	rec := last()
	if rec["reason"] != "enforcement_unavailable" || rec["enforcement"] != "strict" {
		t.Errorf("enforcement refusal: record %v", rec)
	}
}
