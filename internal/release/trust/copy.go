package trust

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// hookBeforeCopy, when set (by tests), runs after src has been walked and
// hashed and before each file is opened to be copied.
var hookBeforeCopy func(p string)

// CopyRelease copies the release directory src into dst, an empty
// directory the caller made, and returns src's manifest as BuildManifest
// builds it. It copies every file the manifest lists, plus
// rukh-release.json and rukh-release.sig when src has them, so that a
// verification of dst checks exactly what was copied. A working directory
// (no rukh-release.json) loses what its ignore list leaves out; a signed
// one is copied whole, every file, for the verification to compare with
// its manifest.
//
// src may change while it is copied. Every file is opened without
// following a symbolic link and without blocking (a named pipe swapped in
// is never waited on), must still be the very regular file that was
// hashed (device, inode and size), and the bytes copied must hash to the
// digest the manifest records; otherwise the copy stops with
// file_changed. On error dst may hold part of the release, and the caller
// removes it.
func CopyRelease(src, dst string) (*Manifest, error) {
	from, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("open release directory: %w", err)
	}
	defer from.Close()
	_, err = from.Lstat(ManifestName)
	signed := err == nil
	m, _, infos, err := scanRelease(src, signed)
	if err != nil {
		return nil, err
	}
	to, err := os.OpenRoot(dst)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dst, err)
	}
	defer to.Close()
	if err := requireEmpty(to, dst); err != nil {
		return nil, err
	}
	type doc struct {
		name  string
		limit int64
	}
	docs := []doc{{ManifestName, limits.manifestBytes}, {SignatureName, limits.signatureBytes}}
	if !signed && m.file(IgnoreName) == nil {
		// The copy keeps the ignore list it was read with, so that it
		// reads as the same release.
		docs = append(docs, doc{IgnoreName, MaxIgnoreBytes})
	}
	for _, doc := range docs {
		data, err := readDoc(from, doc.name, doc.limit)
		if err != nil {
			return nil, err
		}
		if data != nil {
			if err := createFile(to, doc.name, 0o644, func(f *os.File) error { _, err := f.Write(data); return err }); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range m.Files {
		if hookBeforeCopy != nil {
			hookBeforeCopy(f.Path)
		}
		if err := copyListed(from, to, f, infos[f.Path]); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// copyListed copies the release file f, which the walk saw as fi.
func copyListed(from, to *os.Root, f File, fi fs.FileInfo) error {
	if fi == nil {
		return fmt.Errorf("copy %s: the walk did not see it", f.Path)
	}
	in, err := openSame(from, f.Path, fi)
	if err != nil {
		return err
	}
	defer in.Close()
	if dir := path.Dir(f.Path); dir != "." {
		if err := to.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("copy %s: %w", f.Path, err)
		}
	}
	perm := fs.FileMode(0o644)
	if f.Mode == "0755" {
		perm = 0o755
	}
	h := sha256.New()
	err = createFile(to, f.Path, perm, func(out *os.File) error {
		if err := copyExactly(out, io.TeeReader(in, h), f.Size); err != nil {
			if errors.Is(err, errSizeChanged) {
				return refuse(CodeFileChanged, f.Path, "file changed size while the release was copied; try again")
			}
			return fmt.Errorf("copy %s: %w", f.Path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if hexSum(h) != f.SHA256 {
		return refuse(CodeFileChanged, f.Path, "file content changed while the release was copied; try again")
	}
	return nil
}

// createFile creates name under root (never replacing anything), lets
// write fill it and sets perm whatever the umask.
func createFile(root *os.Root, name string, perm fs.FileMode, write func(*os.File) error) error {
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	err = write(out)
	if err == nil {
		err = out.Chmod(perm)
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("copy %s: %w", name, cerr)
	}
	return err
}
