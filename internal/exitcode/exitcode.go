// Package exitcode is the one table of the exit statuses of a Rukh CLI
// and its daemon (README.md, "Exit status"). It is a leaf: the thin
// client links it without the core.
package exitcode

const (
	OK          = 0
	Failed      = 1   // the check or operation found problems (e.g. an invalid release)
	Usage       = 2   // invalid input: unknown flag, wrong type, missing argument
	Unavailable = 69  // unsupported or unavailable
	Software    = 70  // execution failure
	TempFail    = 75  // host or store unavailable
	Denied      = 77  // denied
	Deadline    = 124 // deadline expired
	Interrupted = 130 // interrupted (Ctrl-C, SIGTERM, a hang-up)
	BrokenPipe  = 141 // stdout's reader went away (128 + SIGPIPE)
)
