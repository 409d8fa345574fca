package cli

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// scaffoldHook, when set (by tests), runs right before writeScaffold
// creates each directory and file, with its path relative to the parent
// directory ("hello", "hello/bin", "hello/bin/hello"): what another user
// could do in that instant, a test does there.
var scaffoldHook func(rel string)

// writeScaffold creates the new directory name in parent and files in it
// (paths relative to it, "/"-separated; those under "bin/" executable).
//
// Every name is created relative to the descriptor of the directory that
// holds it, without following a link: directories with mkdirat and then
// opened with O_NOFOLLOW|O_DIRECTORY, files with O_CREAT|O_EXCL|
// O_NOFOLLOW. Each file is reached again from parent's descriptor, so a
// link put in place of any name — the new directory, a directory in it,
// a file — before or while the scaffold is written (in a shared
// directory, by someone else) makes it fail, naming that path, and
// nothing is ever written through the link.
func writeScaffold(parent, name string, files map[string]string) error {
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	w := &scaffoldWriter{parent: parent, pfd: pfd, made: map[string]bool{}}
	fd, err := w.dir(name)
	if err != nil {
		return err
	}
	unix.Close(fd)
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		mode := uint32(0o644)
		if strings.HasPrefix(rel, "bin/") {
			mode = 0o755
		}
		if err := w.file(path.Join(name, rel), []byte(files[rel]), mode); err != nil {
			return err
		}
	}
	return w.verify()
}

type scaffoldWriter struct {
	parent string
	pfd    int
	made   map[string]bool // directories this writer created
	ids    map[string]fileID
	order  []string // every path created, in order
}

// fileID is what a path this writer created was: a name replaced after
// it was made (a directory renamed away, a link in its place) has
// another.
type fileID struct{ dev, ino uint64 }

func (w *scaffoldWriter) record(rel string, st *unix.Stat_t) {
	if w.ids == nil {
		w.ids = map[string]fileID{}
	}
	if _, ok := w.ids[rel]; !ok {
		w.order = append(w.order, rel)
	}
	w.ids[rel] = fileID{uint64(st.Dev), uint64(st.Ino)}
}

// verify checks, once everything is written, that every path created is
// still what was created there: a directory replaced by a link after the
// last file was written through it leaves a scaffold that is not the one
// written.
func (w *scaffoldWriter) verify() error {
	for _, rel := range w.order {
		var st unix.Stat_t
		err := unix.Fstatat(w.pfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && (fileID{uint64(st.Dev), uint64(st.Ino)}) == w.ids[rel] {
			continue
		}
		what := "is gone"
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			what = "is now a symbolic link"
		} else if err == nil {
			what = "is now another file"
		}
		return fmt.Errorf("%s was replaced while the scaffold was written (it %s); nothing was written through it, but the scaffold is not whole: remove it and run ext new again", w.show(rel), what)
	}
	return nil
}

// dir returns a descriptor of directory rel, which this writer creates if
// it has not: every component is opened from the parent without following
// a link, and must be a directory this writer made.
func (w *scaffoldWriter) dir(rel string) (fd int, err error) {
	fd = w.pfd
	closeFd := func() {
		if fd != w.pfd {
			unix.Close(fd)
		}
	}
	at := ""
	for _, comp := range strings.Split(rel, "/") {
		at = path.Join(at, comp)
		if !w.made[at] {
			if scaffoldHook != nil {
				scaffoldHook(at)
			}
			if err := unix.Mkdirat(fd, comp, 0o755); err != nil {
				closeFd()
				return -1, w.refuse(at, "create the directory", err)
			}
			w.made[at] = true
		}
		next, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		closeFd()
		if err != nil {
			return -1, w.refuse(at, "open the directory it made", err)
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			closeFd()
			return -1, w.refuse(at, "stat", err)
		}
		if int(st.Uid) != os.Geteuid() {
			closeFd()
			return -1, fmt.Errorf("%s: the directory it made was replaced by one of uid %d while the scaffold was written; nothing was written in it", w.show(at), st.Uid)
		}
		if id, ok := w.ids[at]; ok && id != (fileID{uint64(st.Dev), uint64(st.Ino)}) {
			closeFd()
			return -1, fmt.Errorf("%s: the directory it made was replaced while the scaffold was written; nothing was written in it", w.show(at))
		}
		w.record(at, &st)
	}
	return fd, nil
}

// file creates the new file rel with data and exactly mode.
func (w *scaffoldWriter) file(rel string, data []byte, mode uint32) error {
	dfd, err := w.dir(path.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if scaffoldHook != nil {
		scaffoldHook(rel)
	}
	fd, err := unix.Openat(dfd, path.Base(rel), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return w.refuse(rel, "create the file", err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(w.parent, rel))
	var st unix.Stat_t
	if err = unix.Fstat(fd, &st); err == nil {
		w.record(rel, &st)
		_, err = f.Write(data)
	}
	if err == nil {
		err = unix.Fchmod(fd, mode) // the umask does not decide an executable bit
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *scaffoldWriter) show(rel string) string { return filepath.FromSlash(rel) }

// refuse says why rel could not be made: something, perhaps a symbolic
// link, is already there.
func (w *scaffoldWriter) refuse(rel, op string, err error) error {
	switch {
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		what := "something"
		var st unix.Stat_t
		if unix.Fstatat(w.pfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				what = "a symbolic link"
			case unix.S_IFDIR:
				what = "a directory"
			default:
				what = "a file"
			}
		}
		if !strings.Contains(rel, "/") {
			return fmt.Errorf("%s already exists (%s); choose another name or remove it", w.show(rel), what)
		}
		return fmt.Errorf("%s: %s appeared there while the scaffold was written; it was not followed, and nothing was written through it (what was written is left in place)", w.show(rel), what)
	}
	return fmt.Errorf("%s: %s: %w", w.show(rel), op, err)
}
