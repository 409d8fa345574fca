// Command empty does nothing: the floor of a Go program's start, which
// BenchmarkCLI measures `rukh version` against.
package main

func main() {}
