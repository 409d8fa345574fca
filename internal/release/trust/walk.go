package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// walkFiles lists every regular file under root except the manifest and
// signature at its top, with size, mode and SHA-256, sorted by path. It
// follows no symbolic link and refuses everything a release may not hold,
// two paths that differ only in letter case included. infos holds what
// Lstat said of each file listed, so that a later open can require the
// very file that was hashed. With ig, what it ignores is skipped unseen:
// neither listed nor checked, and an ignored directory is not entered.
func walkFiles(root *os.Root, ig *ignorer) (files []File, infos map[string]fs.FileInfo, err error) {
	var (
		entries int64
		total   int64
		names   = newCaseNames()
	)
	infos = map[string]fs.FileInfo{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if p == "." {
			return nil
		}
		if ig.ignored(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e := checkPath(p); e != nil {
			return e
		}
		if entries++; entries > limits.maxEntries() {
			return refuse(CodeTooManyFiles, "", "the release has more than %d files and directories; the limit is %d files", limits.maxEntries(), limits.files)
		}
		fi, err := root.Lstat(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if e := checkFileMode(p, fi.Mode()); e != nil {
			return e
		}
		if fi.IsDir() {
			if reserved(p) {
				return refuse(CodeUnsafePath, p, "%s and %s are the release's own documents; rename the directory", ManifestName, SignatureName)
			}
			return nil
		}
		if p == ManifestName || p == SignatureName {
			return nil // the release's own documents, checked by their readers
		}
		if e := names.add(p); e != nil {
			return e
		}
		if int64(len(files)) >= limits.files {
			return refuse(CodeTooManyFiles, "", "the release has more than %d files; remove some", limits.files)
		}
		if fi.Size() > limits.fileBytes {
			return refuse(CodeTooLarge, p, "file is %d bytes; the limit is %d", fi.Size(), limits.fileBytes)
		}
		if total += fi.Size(); total > limits.totalBytes {
			return refuse(CodeTooLarge, "", "the release's files add up to more than %d bytes; remove some", limits.totalBytes)
		}
		sum, err := hashFile(root, p, fi, nil)
		if err != nil {
			return err
		}
		files = append(files, File{Path: p, Size: fi.Size(), Mode: modeString(fi.Mode()), SHA256: sum})
		infos[p] = fi
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, infos, nil
}

// checkFileMode refuses every file type but regular files and
// directories, and special permission bits on files.
func checkFileMode(p string, m fs.FileMode) *Error {
	switch {
	case m&fs.ModeSymlink != 0:
		return refuse(CodeSymlink, p, "symbolic link; a release holds regular files only, so copy the target in")
	case m.IsDir():
		return nil
	case !m.IsRegular():
		return refuse(CodeSpecialFile, p, "%s, not a regular file; a release holds regular files and directories only, so remove it", KindOf(m))
	case m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0:
		return refuse(CodeSetuid, p, "file has a setuid, setgid or sticky bit; clear it with chmod")
	}
	return nil
}

// modeString maps a file's permissions to the two a release knows.
func modeString(m fs.FileMode) string {
	if m.Perm()&0o111 != 0 {
		return "0755"
	}
	return "0644"
}

// hashFile returns the hex SHA-256 of regular file p, whose Lstat is fi,
// copying the content to w when w is not nil. The file opened must be the
// one fi describes (openSame), and must hold exactly fi.Size() bytes.
func hashFile(root *os.Root, p string, fi fs.FileInfo, w io.Writer) (string, error) {
	f, err := openSame(root, p, fi)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	var dst io.Writer = h
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	if err := copyExactly(dst, f, fi.Size()); err != nil {
		if errors.Is(err, errSizeChanged) {
			return "", refuse(CodeFileChanged, p, "file changed size while it was read; try again")
		}
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hexSum(h), nil
}

// openSame opens the release file p without following a symbolic link
// and without blocking (openNoFollow), and requires it to be the very
// regular file fi, its Lstat, describes: the same device, inode and size.
// A file replaced in between — by a named pipe that would block a reader
// forever, a link, or another file — is file_changed.
func openSame(root *os.Root, p string, fi fs.FileInfo) (*os.File, error) {
	f, err := openNoFollow(root, p)
	var nr *notRegularError
	switch {
	case errors.As(err, &nr):
		return nil, refuse(CodeFileChanged, p, "file was replaced while the release was read (it is now %s); try again", nr.kind)
	case errors.Is(err, errLink):
		return nil, refuse(CodeFileChanged, p, "file was replaced while the release was read (its path now holds a symbolic link); try again")
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	ofi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if !os.SameFile(fi, ofi) || !ofi.Mode().IsRegular() {
		f.Close()
		return nil, refuse(CodeFileChanged, p, "file was replaced while the release was read (by another file); try again")
	}
	if ofi.Size() != fi.Size() {
		f.Close()
		return nil, refuse(CodeFileChanged, p, "file changed size while it was read; try again")
	}
	return f, nil
}

// errLink: a component of a path turned out to be a symbolic link.
var errLink = errors.New("a symbolic link in the path")

// notRegularError: the path opened is not a regular file.
type notRegularError struct{ kind string }

func (e *notRegularError) Error() string { return "the file is " + e.kind }

// KindOf names the type of a file that is not a regular one, for messages
// ("a named pipe").
func KindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

var errSizeChanged = errors.New("size changed")

// copyExactly copies n bytes from r to w and requires r to end there.
func copyExactly(w io.Writer, r io.Reader, n int64) error {
	got, err := io.CopyN(w, r, n)
	if err == io.EOF || (err == nil && got < n) {
		return errSizeChanged
	}
	if err != nil {
		return err
	}
	var one [1]byte
	if k, _ := io.ReadFull(r, one[:]); k > 0 {
		return errSizeChanged
	}
	return nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
