package app

// Run is run, for this package's tests: the CLI with explicit streams and
// environment.
var Run = run
