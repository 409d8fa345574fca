package store

// SetFailpoint has the journal call f at each of its failpoints (the
// crash tests' helper process kills itself there).
func SetFailpoint(f func(string)) { failpoint = f }
