package store

// SetFailpoint has the journal call f at each of its failpoints (the
// crash tests' helper process kills itself there).
func SetFailpoint(f func(string)) { failpoint = f }

// ReadJournal reads the journal beside the store s at path as an open
// of it does, and returns how many entries it holds.
func ReadJournal(s *Store, path string) (int, error) {
	_, entries, err := readJournal(path, storeTag(s.secret), 0)
	return len(entries), err
}

// SetCheckedHook has Open call f between its check of the store file and
// bbolt's open of it.
func SetCheckedHook(f func(path string)) { testHookChecked = f }
