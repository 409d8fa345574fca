// Package format names the descriptor formats and machine features this
// build reads, with nothing else, so that the thin client can say what
// its build supports (`rukh version`) without linking the descriptor
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
