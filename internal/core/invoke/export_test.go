package invoke

// SetSaveHook has every save of an outcome aside (savePendingOnce) first
// ask hook, which may fail it as a full disk would; restore undoes it.
func SetSaveHook(hook func() error) (restore func()) {
	testHookSave = hook
	return func() { testHookSave = func() error { return nil } }
}

// SetReserveHook has every making of the reserve first ask hook, which
// may fail it as a full disk would; restore undoes it.
func SetReserveHook(hook func() error) (restore func()) {
	testHookReserve = hook
	return func() { testHookReserve = func() error { return nil } }
}

// ReserveName is the reserve's file name in PendingDir.
const ReserveName = reserveName
