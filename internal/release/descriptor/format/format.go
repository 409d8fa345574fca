// Package format names the descriptor formats and machine features this
// build reads, and the words of its built-in commands, with nothing else,
// so that the thin client can say what its build supports (`rukh
// version`) and where a command line runs without linking the descriptor
// decoder.
package format

// The descriptor formats this build reads. Any other "schema" value is
// rejected as unsupported, never read leniently.
const (
	V1 = "rukh.extension/1"
	V2 = "rukh.extension/2"
)

// CommandResult is the machine feature a command needs to return a
// bounded, validated commandResult (and so to become an MCP tool).
const CommandResult = "command-result/1"

// Features is the registry of machine features this build supports.
func Features() []string { return []string{CommandResult} }

// ReservedWords are the built-in command names; no extension route may
// start with one.
func ReservedWords() []string {
	return []string{
		"approve", "completion", "daemon", "doctor", "ext", "help", "invocations",
		"mcp", "profile", "tools", "trust", "version",
	}
}
