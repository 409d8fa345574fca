package envpolicy

import (
	"slices"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/extproto"
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
		"DOCKER_CONFIG=/d", "HTTPS_PROXY=http://p:3128", "no_proxy=.corp", "SSL_CERT_FILE=/ca.pem", "DOCKER_HOST=tcp://x",
	})
	want := []string{"PATH=/bin", "LC_ALL=C", "ACME_HOME=/h", "XDG_RUNTIME_DIR=/run/user/1", "RUKH_INVOCATION_ID=abc", "TERM=xterm",
		"DOCKER_CONFIG=/d", "HTTPS_PROXY=http://p:3128", "no_proxy=.corp", "SSL_CERT_FILE=/ca.pem"}
	if !slices.Equal(got, want) {
		t.Errorf("ForDaemon = %q, want %q", got, want)
	}
}

// TestLookupLastWins: a key set twice reads as its last value, as
// getenv(3) and os.Getenv read the process's own environment.
func TestLookupLastWins(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		key  string
		want string
	}{
		{[]string{"A=1"}, "A", "1"},
		{[]string{"A=1", "A=2"}, "A", "2"},
		{[]string{"A=", "A=x"}, "A", "x"},
		{[]string{"A=x", "A="}, "A", ""},
		{[]string{"AB=1"}, "A", ""},
		{[]string{"A=b=c"}, "A", "b=c"},
		{nil, "A", ""},
	} {
		if got := Lookup(tc.env)(tc.key); got != tc.want {
			t.Errorf("Lookup(%q)(%q) = %q, want %q", tc.env, tc.key, got, tc.want)
		}
	}
}
