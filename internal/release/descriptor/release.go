package descriptor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Load reads and validates the descriptor of the release directory dir,
// then checks that every program it names is an executable regular file
// inside dir. On failure the error is an Errors value.
func Load(dir string) (*Descriptor, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, Errors{{Code: CodeDescriptorMissing, Message: fmt.Sprintf("cannot open release directory: %v", err)}}
	}
	defer root.Close()
	data, err := readLimited(root, FileName, MaxBytes)
	if err != nil {
		return nil, Errors{{Code: CodeDescriptorMissing, Message: fmt.Sprintf("cannot read %s: %v; a release has its descriptor at its root", FileName, err)}}
	}
	d, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if errs := d.checkFiles(root); len(errs) > 0 {
		return nil, errs
	}
	return d, nil
}

// readLimited reads at most limit+1 bytes, so that an oversize file is
// reported as too large by the decoder without reading all of it.
func readLimited(root *os.Root, name string, limit int) ([]byte, error) {
	// Only a regular file: opening a FIFO or a device could block forever,
	// so refuse what Lstat shows, and open without blocking in case the
	// file is replaced by one in between.
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, int64(limit)+1))
}

// checkFiles checks each command's program inside the release root.
// os.Root refuses paths that leave the release through "..", an absolute
// symlink or a symlinked directory.
func (d *Descriptor) checkFiles(root *os.Root) Errors {
	var errs Errors
	for i, c := range d.Commands {
		at := strictjson.Pointer("commands", strconv.Itoa(i), "execute", "program")
		fi, err := root.Lstat(c.Execute.Program)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			errs = append(errs, &Error{Code: CodeProgramMissing, Path: at,
				Message: fmt.Sprintf("the release has no file %q", c.Execute.Program)})
		case err != nil:
			errs = append(errs, &Error{Code: CodeProgramInvalid, Path: at,
				Message: fmt.Sprintf("cannot use %q: %v", c.Execute.Program, err)})
		case !fi.Mode().IsRegular():
			errs = append(errs, &Error{Code: CodeProgramInvalid, Path: at,
				Message: fmt.Sprintf("%q is not a regular file (%s); ship the program itself, not a link", c.Execute.Program, fi.Mode().Type())})
		case fi.Mode().Perm()&0o111 == 0:
			errs = append(errs, &Error{Code: CodeProgramInvalid, Path: at,
				Message: fmt.Sprintf("%q is not executable; chmod +x it", c.Execute.Program)})
		}
	}
	return errs
}
