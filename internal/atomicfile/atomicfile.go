// Package atomicfile writes a whole file so that a reader, or a crash,
// sees all of it or none of it: the data goes to a temporary file beside
// the target, is synced, and only then takes the target's name.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Replace puts data at path with mode, replacing what was there at once
// (rename), and syncs the directory so that the new name survives a
// crash.
func Replace(path string, data []byte, mode os.FileMode) error {
	tmp, err := write(path, data, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone after the rename; removed on failure
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// WriteNew puts data at path with mode only if nothing is there: the
// name is taken with a hard link, which fails with an error satisfying
// errors.Is(err, fs.ErrExist) when path exists.
func WriteNew(path string, data []byte, mode os.FileMode) error {
	tmp, err := write(path, data, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// write writes data to a new temporary file beside path, synced, and
// returns its name.
func write(path string, data []byte, mode os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	for _, step := range []func() error{func() error { return f.Chmod(mode) }, f.Sync, f.Close} {
		if err := step(); werr == nil {
			werr = err
		}
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
