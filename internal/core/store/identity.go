package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/internal/cliname"
)

// A Store commits to the file it opened, not to its path: once store.db
// is removed, or replaced by another file or a directory, every commit
// still succeeds — into a file that no later process will ever open. So
// before a write transaction begins and again before its commit is
// acknowledged, the open file (its device and inode, read from bbolt's
// own descriptor when it was opened under the lock: openBolt) is
// compared with what the path names now (as lstat would, without reading
// the timestamps: statNoTimes): the same device and inode, a regular
// file, still linked. When it is not, the write is not
// acknowledged (*ReplacedError), nor is any later one on this Store, and
// what the open file holds is copied once, with bbolt's Tx.WriteTo, to
// RecoveredSuffix beside the path — a new file, never over an existing
// one, as etcd saves a snapshot aside — for the owner to put back.

// RecoveredSuffix names the copy of an open store whose file was removed
// or replaced: store.db.recovered beside store.db.
const RecoveredSuffix = ".recovered"

// ReplacedError says that the store file at Path is no longer the file
// this process has open: it was removed, or replaced by another file or
// a directory. The write it is returned for was not acknowledged, and
// none is from then on; the CLI exits 75 on it.
type ReplacedError struct {
	Path   string
	What   string // "was removed", "was replaced by a directory", …
	Holder string // who had it open: rukhd, or a rukh command
	// Recovered is the file the open store was copied to, "" when it
	// could not be (RecoverErr says why).
	Recovered  string
	RecoverErr error
}

func (e *ReplacedError) Error() string {
	msg := fmt.Sprintf("the store file at %s %s while %s had it open, so nothing written since is in it; this change was not made",
		e.Path, e.What, e.Holder)
	stop := "stop " + e.Holder + " (" + cliname.Cmd("daemon stop") + ")"
	if e.Holder != cliname.Daemon() {
		stop = "make sure no other " + cliname.Name() + " command runs"
	}
	switch {
	case e.Recovered != "":
		return msg + fmt.Sprintf("; what the open file held is saved in %s: %s, move whatever is at %s aside, then move %s to %s",
			e.Recovered, stop, e.Path, e.Recovered, e.Path)
	case e.RecoverErr != nil:
		return msg + fmt.Sprintf("; its content could not be saved aside (%v): %s and put back the store from a copy of %s", e.RecoverErr, stop, e.Path)
	}
	return msg + "; " + stop + " and put back the store from a copy of " + e.Path
}

// identity checks that the file s has open is still the store at its
// path, and returns the *ReplacedError (remembered, with the open file
// saved aside once) when it is not. It runs outside any transaction.
func (s *Store) identity() error {
	if r := s.replaced.Load(); r != nil {
		return r
	}
	what, err := s.moved()
	if err != nil {
		return fmt.Errorf("check the store file at %s: %w", s.path, err)
	}
	if what == "" {
		return nil
	}
	r := &ReplacedError{Path: s.path, What: what, Holder: s.holder}
	if s.holder == "" {
		r.Holder = "this " + cliname.Name() + " command"
	}
	if !s.replaced.CompareAndSwap(nil, r) {
		return s.replaced.Load()
	}
	r.Recovered, r.RecoverErr = s.saveAside()
	return r
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

func statID(f *os.File) (fileID, error) {
	st, err := statNoTimes(int(f.Fd()), "", unix.AT_EMPTY_PATH)
	if err != nil {
		return fileID{}, err
	}
	return st.id, nil
}

// moved says how the store's path no longer names the open file ("" when
// it still does).
func (s *Store) moved() (string, error) { return moved(s.path, s.id) }

// moved says how path no longer names the open file id ("" when it still
// does): the path must be a regular file with that device and inode (a
// file the path still names is linked).
func moved(path string, id fileID) (string, error) {
	st, err := statNoTimes(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "was removed", nil
	case err != nil:
		return "", err
	case st.mode.IsDir():
		return "was replaced by a directory", nil
	case !st.mode.IsRegular():
		return "was replaced by something that is not a regular file", nil
	case st.id != id:
		return "was replaced by another file", nil
	case st.nlink == 0:
		return "was removed", nil
	}
	return "", nil
}

// fileStat is what the identity check reads of a file: its type, its
// device and inode, and its link count.
type fileStat struct {
	mode  fs.FileMode // the type bits only
	id    fileID
	nlink uint32
}

// statNoTimes reads a file's type, device, inode and link count, and
// not its timestamps: statx(2) with a mask without them, where lstat
// and fstat ask for all. Since Linux 6.13 a read of a file's ctime has
// its next write take a fine-grained timestamp, which marks the inode
// dirty in the commit that follows: a commit then took 0.05 ms more here
// (docs/benchmarks.md, "Eighth pass"), and the check runs twice for
// every commit. When statx fails or leaves out a field (a kernel or a
// seccomp filter without it), fstatat answers, and says why it cannot.
func statNoTimes(dirfd int, path string, flags int) (fileStat, error) {
	const want = unix.STATX_TYPE | unix.STATX_INO | unix.STATX_NLINK
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, path, flags, want, &stx); err == nil && stx.Mask&want == want {
		return fileStat{mode: typeBits(uint32(stx.Mode)), id: fileID{unix.Mkdev(stx.Dev_major, stx.Dev_minor), stx.Ino}, nlink: stx.Nlink}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, path, &st, flags); err != nil {
		return fileStat{}, &fs.PathError{Op: "fstatat", Path: path, Err: err}
	}
	return fileStat{mode: typeBits(st.Mode), id: fileID{st.Dev, st.Ino}, nlink: uint32(st.Nlink)}, nil
}

// typeBits is the fs.FileMode type of a stat mode's S_IFMT bits.
func typeBits(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// saveAside copies what the open file holds to a new file beside the path
// (RecoveredSuffix, or a numbered name when that exists), synced before it
// is named. It never writes over an existing file.
func (s *Store) saveAside() (string, error) {
	// The journal's entries not yet folded go into the open file first,
	// removed though it is, so that the copy holds them.
	if err := s.fold(txMode{anyFile: true}); err != nil {
		return "", fmt.Errorf("fold the journal into it: %w", err)
	}
	dir := filepath.Dir(s.path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("its directory %s is gone", dir)
	}
	return newCopy(s.path+RecoveredSuffix, func(name string) error {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		err = s.run(false, func(btx *bolt.Tx) error {
			_, err := btx.WriteTo(f)
			return err
		})
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDir(dir)
		}
		if err != nil {
			os.Remove(name)
		}
		return err
	})
}

// newCopy makes a copy beside the store under the first of base's names
// (copyName) that create does not find taken: create makes the file at
// name, or fails with an error satisfying errors.Is(err, fs.ErrExist)
// when something is there already. It returns the name made.
func newCopy(base string, create func(name string) error) (string, error) {
	for i := range maxCopies {
		name := copyName(base, i)
		if err := create(name); !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return "", err
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("%s and nine numbered copies exist already", base)
}

// copiesOf lists the copies of base (copyName's names) in its directory.
// It reads the directory rather than matching a pattern: the store's
// path may hold [, * or ?.
func copiesOf(base string) []string {
	dir, name := filepath.Dir(base), filepath.Base(base)
	entries, _ := os.ReadDir(dir)
	var copies []string
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), name); ok && (rest == "" || rest[0] == '.') {
			copies = append(copies, filepath.Join(dir, e.Name()))
		}
	}
	return copies
}

// maxCopies is how many copies of one name (copyName) are made beside
// the store: the name itself and nine numbered ones.
const maxCopies = 10

// copyName is the i-th name for a copy kept beside the store: base
// itself, then base.1, base.2 and so on.
func copyName(base string, i int) string {
	if i == 0 {
		return base
	}
	return fmt.Sprintf("%s.%d", base, i)
}

// Replaced reports whether the store file at the path is no longer the one
// s has open (*ReplacedError), without writing: what a status report asks.
func (s *Store) Replaced() error {
	err := s.identity()
	if r := (*ReplacedError)(nil); errors.As(err, &r) {
		return err
	}
	return nil
}

// homeSigns are what an earlier store leaves beside its file, in the data
// directory: the installed releases' directories (admin: releases/<sha256>/),
// the outcomes saved aside for it (invoke.PendingDir: <id>.json), and a copy of a removed store
// (RecoveredSuffix). A missing store.db beside any of them is a lost
// store, not a new home.
var homeSigns = []struct {
	dir, what string
	counts    func(fs.DirEntry) bool
}{
	{"releases", "installed releases", func(e fs.DirEntry) bool { return e.IsDir() && isDigestHex(e.Name()) }},
	{"pending-outcomes", "saved outcomes", func(e fs.DirEntry) bool {
		return e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".")
	}},
}

// isDigestHex reports whether name is a release directory's name: 64
// lowercase hex digits (a SHA-256).
func isDigestHex(name string) bool {
	if len(name) != 64 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// MissingError is returned by Open when there is no store file at Path
// but its directory holds what an earlier store recorded (Found): a new,
// empty store there would forget every release, key, profile revision and
// record, and the next owner change would treat the installed releases
// as orphans. Options.Recreate makes the new store anyway, when the owner
// asks for it. The CLI exits 75 on it.
type MissingError struct {
	Path  string
	Found []string // what was found, for the message
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("there is no store at %s, but %s holds what one recorded (%s), so this is not a new home and no empty store is started over it: "+
		"put the store file back (a copy saved as %s%s, or your backup), or, to start again from an empty store, run %s and follow \"Recovering a damaged store\" in the owner guide (docs/owner.md)",
		e.Path, filepath.Dir(e.Path), strings.Join(e.Found, ", "), filepath.Base(e.Path), RecoveredSuffix, cliname.Cmd("doctor --new-store"))
}

// lostStore returns the *MissingError for a store file missing at path
// whose directory holds what an earlier store recorded, nil when it holds
// none of that (a new home).
func lostStore(path string) error {
	dir := filepath.Dir(path)
	var found []string
	for _, sign := range homeSigns {
		ents, _ := os.ReadDir(filepath.Join(dir, sign.dir))
		n := 0
		for _, e := range ents {
			if sign.counts(e) {
				n++
			}
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("%d %s in %s/", n, sign.what, sign.dir))
		}
	}
	if copies := copiesOf(path + RecoveredSuffix); len(copies) > 0 {
		found = append(found, filepath.Base(copies[0]))
	}
	if len(found) == 0 {
		return nil
	}
	return &MissingError{Path: path, Found: found}
}
