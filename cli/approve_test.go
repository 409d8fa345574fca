package cli

import (
	"os"
	"testing"
)

// hostAncestor fails closed: a caller that is gone, cannot be confirmed
// alive, or whose parents /proc does not give is an error, never "no
// host"; this process, alive, below no rukh, is placed.
func TestHostAncestorFailsClosed(t *testing.T) {
	alive := func() bool { return true }
	dead := func() bool { return false }
	for _, tc := range []struct {
		name string
		f    Factory
		ok   bool
	}{
		{"in-process", Factory{Name: "rukh-test-none"}, true},
		{"a live caller", Factory{Name: "rukh-test-none", CallerPID: os.Getpid(), CallerAlive: alive}, true},
		{"a caller that exited", Factory{Name: "rukh-test-none", CallerPID: os.Getpid(), CallerAlive: dead}, false},
		{"a caller not confirmed alive", Factory{Name: "rukh-test-none", CallerPID: os.Getpid()}, false},
		{"a pid /proc does not know", Factory{Name: "rukh-test-none", CallerPID: 1 << 30, CallerAlive: alive}, false},
	} {
		host, err := hostAncestor(&tc.f)
		if tc.ok && (err != nil || host != 0) {
			t.Errorf("%s: host %d, %v; want none", tc.name, host, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: host %d and no error; want a refusal", tc.name, host)
		}
	}
}
