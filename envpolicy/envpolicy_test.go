package envpolicy

import (
	"slices"
	"testing"

	"github.com/rukh-cli/rukh/extproto"
)

func TestInvocationIDIsTheChannels(t *testing.T) {
	if InvocationID != extproto.EnvInvocationID {
		t.Fatalf("InvocationID %q, extproto.EnvInvocationID %q", InvocationID, extproto.EnvInvocationID)
	}
}

func TestForDaemon(t *testing.T) {
	got := ForDaemon("ACME_HOME", []string{
		"PATH=/bin", "LC_ALL=C", "ACME_HOME=/h", "RUKH_HOME=/other", "XDG_RUNTIME_DIR=/run/user/1",
		"RUKH_INVOCATION_ID=abc", "AWS_SECRET_ACCESS_KEY=x", "RUKH_IPC_FD=3", "TERM=xterm",
	})
	want := []string{"PATH=/bin", "LC_ALL=C", "ACME_HOME=/h", "XDG_RUNTIME_DIR=/run/user/1", "RUKH_INVOCATION_ID=abc", "TERM=xterm"}
	if !slices.Equal(got, want) {
		t.Errorf("ForDaemon = %q, want %q", got, want)
	}
}
