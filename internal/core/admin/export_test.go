package admin

// SetHookAfterRename sets the crash point between an install's rename and
// its commit, for tests.
func SetHookAfterRename(fn func()) { hookAfterRename = fn }
