package tests

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestDoctorAgreesWithCommands zeroes each page of the template's store in
// turn (page 3 among them, the reproduction) and runs `ext list`
// and `doctor` on a fresh copy: whenever a command refuses the store as
// damaged (exit 75), doctor must too, and a store doctor calls
// consistent must show the revision it really holds. Doctor used to say
// "consistent, revision 0" and exit 0 where `ext list` exited 75.
func TestDoctorAgreesWithCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rukh processes on damaged stores")
	}
	tm := damagedStoreTemplate(t)
	l := tm.layout
	intact := tm.run(t, tm.copyHome(t, bytes.Clone), "doctor")
	_, rest, ok := strings.Cut(intact.stdout, ": consistent, revision ")
	rev, _, _ := strings.Cut(rest, "\n")
	if intact.status != 0 || !ok || rev == "0" {
		t.Fatalf("doctor on the intact store: exit %d, %q; want consistent and its revision", intact.status, intact.stdout)
	}
	consistent := ": consistent, revision " + rev + "\n"
	for p := 2; p < l.hwm; p++ {
		t.Run(fmt.Sprintf("page %d zeroed", p), func(t *testing.T) {
			t.Parallel()
			zero := func(b []byte) []byte {
				b = bytes.Clone(b)
				clear(b[p*l.pageSize : (p+1)*l.pageSize])
				return b
			}
			home := tm.copyHome(t, zero)
			list := tm.run(t, home, "ext", "list")
			doc := tm.run(t, tm.copyHome(t, zero), "doctor")
			if list.status == 75 {
				requireDamaged(t, home, list)
				if doc.status != 75 || !strings.Contains(doc.stdout, ": DAMAGED: ") {
					t.Errorf("ext list exits 75 (%q) but doctor exits %d: %q", list.stderr, doc.status, doc.stdout)
				}
			}
			if doc.status == 0 && !strings.Contains(doc.stdout, consistent) {
				t.Errorf("doctor calls the store consistent with the wrong revision: %q", doc.stdout)
			}
			if doc.status != 0 && doc.status != 75 {
				t.Errorf("doctor exits %d: %q %q", doc.status, doc.stdout, doc.stderr)
			}
		})
	}
}
