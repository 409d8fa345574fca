// Package envpolicy says which of the caller's environment reaches an
// extension command, and which a client passes to the daemon that runs
// its command. It is a leaf: the thin client links it without the core.
package envpolicy

import "strings"

// InvocationID names the variable every command runs with: its
// invocation's id (a command started inside a call can be found by it,
// and what only the owner may do, like approve, is refused there). It is
// extproto.EnvInvocationID, which extension authors link without this
// package; envpolicy_test.go holds the two equal.
const InvocationID = "RUKH_INVOCATION_ID"

// Allowlist is the caller's environment a command sees (with LC_*);
// everything else is dropped, and the RUKH_IPC_* variables are always the
// host's own.
var Allowlist = []string{
	"HOME", "USER", "LOGNAME", "PATH", "SHELL", "TERM", "COLORTERM", "NO_COLOR",
	"LANG", "LANGUAGE", "TZ", "TMPDIR",
}

// Allowed reports whether the variable key may reach a command.
func Allowed(key string) bool {
	for _, k := range Allowlist {
		if k == key {
			return true
		}
	}
	return strings.HasPrefix(key, "LC_")
}

// Sources are the variables a release source is reached with
// (internal/release/source): the container credential file, the proxy,
// the TLS roots, and what a credential helper needs to reach its
// keyring or agent (it runs with the caller's PATH, HOME and these). A
// client passes them to rukhd; no extension command sees them unless
// Allowlist names them.
var Sources = []string{
	"DOCKER_CONFIG",
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"DBUS_SESSION_BUS_ADDRESS", "GNUPGHOME", "PASSWORD_STORE_DIR",
}

func isSourceVar(k string) bool {
	for _, s := range Sources {
		if s == k {
			return true
		}
	}
	return false
}

// ForDaemon is the part of environ ("KEY=value" pairs) a client sends
// with a command line it forwards: what a command may see, what locates
// the CLI's files (homeEnv, e.g. RUKH_HOME, and the XDG directories), and
// the invocation the caller runs inside, and what reaching a release
// source takes (Sources), so that `ext install oci://…` through rukhd
// uses the caller's credential file, proxy and trusted roots.
func ForDaemon(homeEnv string, environ []string) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case Allowed(k), k == homeEnv, k == InvocationID,
			k == "XDG_DATA_HOME", k == "XDG_CONFIG_HOME", k == "XDG_RUNTIME_DIR",
			isSourceVar(k):
			env = append(env, kv)
		}
	}
	return env
}

// Lookup looks variables up in env ("KEY=value" pairs) as getenv(3) and
// os.Getenv do: when a key appears more than once, the last one wins.
// Every lookup in a caller's environment goes through it, so a command
// line with a duplicate key means one thing to every check.
func Lookup(env []string) func(key string) string {
	return func(key string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}
