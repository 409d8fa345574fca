package trust

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/internal/cliname"
)

// Pack builds the manifest of the release directory dir, signs it with k
// and writes the release archive to out: a gzip-compressed tar holding
// rukh-release.json, rukh-release.sig and then every file in manifest
// order. The archive depends only on the release's content and the key:
// no times, owners or directory entries, modes 0644 or 0755 only.
func Pack(dir string, k PrivateKey, out io.Writer) (*Manifest, error) {
	m, err := BuildManifest(dir)
	if err != nil {
		return nil, err
	}
	sig, err := Sign(m, k)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open release directory: %w", err)
	}
	defer root.Close()

	zw, err := gzip.NewWriterLevel(out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, doc := range []struct {
		name string
		data []byte
	}{{ManifestName, m.Canonical()}, {SignatureName, sig}} {
		if err := tw.WriteHeader(entryHeader(doc.name, int64(len(doc.data)), "0644")); err != nil {
			return nil, fmt.Errorf("write archive: %w", err)
		}
		if _, err := tw.Write(doc.data); err != nil {
			return nil, fmt.Errorf("write archive: %w", err)
		}
	}
	for _, f := range m.Files {
		fi, err := root.Lstat(f.Path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Path, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() != f.Size || modeString(fi.Mode()) != f.Mode {
			return nil, refuse(CodeFileChanged, f.Path, "file changed while the release was packed; pack it again")
		}
		if err := tw.WriteHeader(entryHeader(f.Path, f.Size, f.Mode)); err != nil {
			return nil, fmt.Errorf("write archive: %w", err)
		}
		sum, err := hashFile(root, f.Path, fi, tw)
		if err != nil {
			return nil, err
		}
		if sum != f.SHA256 {
			return nil, refuse(CodeFileChanged, f.Path, "file changed while the release was packed; pack it again")
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("write archive: %w", err)
	}
	return m, nil
}

// entryHeader is the one header shape Pack writes.
func entryHeader(name string, size int64, mode string) *tar.Header {
	perm := int64(0o644)
	if mode == "0755" {
		perm = 0o755
	}
	return &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Size:     size,
		Mode:     perm,
		ModTime:  time.Unix(0, 0),
		Format:   tar.FormatPAX,
	}
}

// Unpack extracts a release archive into dest, an empty directory the
// caller made. It reads within the release limits, counted on the
// decompressed bytes, and refuses links, special files, unsafe or
// duplicate names (names that differ only in letter case included) and
// setuid, setgid or sticky bits. Files are written
// 0644 or 0755 and never through a symbolic link. Unpack checks no
// digest or signature; Verify does. On error dest may hold part of the
// archive, and the caller removes it.
func Unpack(archive io.Reader, dest string) error {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return fmt.Errorf("open %s: %w", dest, err)
	}
	defer root.Close()
	if err := requireEmpty(root, dest); err != nil {
		return err
	}
	zr, err := gzip.NewReader(archive)
	if err != nil {
		return refuse(CodeBadArchive, "", "not a gzip-compressed tar archive (%v); make one with "+cliname.Cmd("ext pack"), err)
	}
	defer zr.Close()
	u := &unpacker{
		root:  root,
		tr:    tar.NewReader(&boundedReader{r: zr, n: limits.maxStream()}),
		kinds: make(map[string]bool),
		names: newCaseNames(),
	}
	return u.run()
}

func requireEmpty(root *os.Root, dest string) error {
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("open %s: %w", dest, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if err != nil && err != io.EOF {
		return fmt.Errorf("read %s: %w", dest, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("unpack into %s: the directory is not empty; unpack into a new, empty directory", dest)
	}
	return nil
}

type unpacker struct {
	root *os.Root
	tr   *tar.Reader
	// kinds records every path written: true for a directory, false for a
	// file.
	kinds map[string]bool
	// names finds two paths that differ only in letter case.
	names          caseNames
	entries, files int64
	total          int64
}

func (u *unpacker) run() error {
	for {
		hdr, err := u.tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil && !(errors.Is(err, tar.ErrInsecurePath) && hdr != nil) {
			return archiveError(err)
		}
		if e := u.entry(hdr); e != nil {
			return e
		}
		if err != nil {
			// archive/tar found the name insecure on this platform and
			// the checks above did not.
			return refuse(CodeUnsafePath, hdr.Name, "unsafe file name: %v", err)
		}
	}
}

func (u *unpacker) entry(hdr *tar.Header) error {
	if u.entries++; u.entries > limits.maxEntries() {
		return refuse(CodeTooManyFiles, "", "the archive has more than %d entries; the limit is %d files", limits.maxEntries(), limits.files)
	}
	name := hdr.Name
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir:
		name = strings.TrimSuffix(name, "/")
	case tar.TypeSymlink:
		return refuse(CodeSymlink, hdr.Name, "symbolic link to %q; a release holds regular files only", hdr.Linkname)
	case tar.TypeLink:
		return refuse(CodeHardlink, hdr.Name, "hard link to %q; a release holds regular files only", hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return refuse(CodeSpecialFile, hdr.Name, "device file; a release holds regular files only")
	case tar.TypeFifo:
		return refuse(CodeSpecialFile, hdr.Name, "named pipe; a release holds regular files only")
	default:
		return refuse(CodeSpecialFile, hdr.Name, "archive entry of type %q; a release holds regular files and directories only", hdr.Typeflag)
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return refuse(CodeSpecialFile, hdr.Name, "sparse file entry; a release holds plain regular files only")
		}
	}
	if e := checkPath(name); e != nil {
		return e
	}
	if hdr.Mode&0o7000 != 0 {
		return refuse(CodeSetuid, name, "entry has a setuid, setgid or sticky bit; a release may not carry them")
	}
	if e := u.names.add(name); e != nil {
		return e
	}
	if hdr.Typeflag == tar.TypeDir {
		if reserved(name) {
			return refuse(CodeUnsafePath, name, "%s and %s are the release's own documents, not directories", ManifestName, SignatureName)
		}
		if isDir, seen := u.kinds[name]; seen && !isDir {
			return refuse(CodeDuplicateEntry, name, "the archive names this path as a file and as a directory")
		}
		return u.mkdirs(name + "/")
	}

	limit, meta := limits.fileBytes, true
	switch {
	case name == ManifestName:
		limit = limits.manifestBytes
	case name == SignatureName:
		limit = limits.signatureBytes
	case reserved(name):
		return refuse(CodeUnsafePath, name, "%s and %s are the release's own documents, not directories", ManifestName, SignatureName)
	default:
		meta = false
		if u.files++; u.files > limits.files {
			return refuse(CodeTooManyFiles, "", "the archive has more than %d files", limits.files)
		}
	}
	if hdr.Size > limit {
		return refuse(CodeTooLarge, name, "file is %d bytes; the limit is %d", hdr.Size, limit)
	}
	if !meta {
		if u.total += hdr.Size; u.total > limits.totalBytes {
			return refuse(CodeTooLarge, "", "the archive's files add up to more than %d bytes", limits.totalBytes)
		}
	}
	if isDir, seen := u.kinds[name]; seen {
		if isDir {
			return refuse(CodeDuplicateEntry, name, "the archive names this path as a directory and as a file")
		}
		return refuse(CodeDuplicateEntry, name, "the archive names this path more than once")
	}
	if err := u.mkdirs(name); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if hdr.Mode&0o111 != 0 && !meta {
		perm = 0o755
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return refuse(CodeDuplicateEntry, name, "the archive names this path more than once (perhaps in another letter case)")
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	u.kinds[name] = false
	_, err = io.CopyN(f, u.tr, hdr.Size)
	if err == nil {
		err = f.Chmod(perm) // the umask must not decide the mode
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("unpack %s: %w", name, cerr)
	}
	if err != nil {
		return archiveError(err)
	}
	return nil
}

// mkdirs makes every directory above name (and name itself when it ends
// in "/"), recording each, and refuses a directory that is already a file.
func (u *unpacker) mkdirs(name string) error {
	for i := strings.IndexByte(name, '/'); i >= 0; i = nextSlash(name, i) {
		dir := name[:i]
		isDir, seen := u.kinds[dir]
		if seen {
			if !isDir {
				return refuse(CodeDuplicateEntry, dir, "the archive names this path as a file and as a directory")
			}
			continue
		}
		if err := u.root.Mkdir(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return refuse(CodeDuplicateEntry, dir, "the archive names this path more than once (perhaps in another letter case)")
			}
			return fmt.Errorf("unpack %s: %w", dir, err)
		}
		u.kinds[dir] = true
	}
	return nil
}

// archiveError maps an error reading the archive stream to a refusal.
func archiveError(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, errStreamTooLarge):
		return refuse(CodeTooLarge, "", "the archive expands to more than %d bytes; it is not a release %s can install", limits.maxStream(), cliname.Name())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return refuse(CodeBadArchive, "", "the archive is truncated; download it again")
	case errors.Is(err, tar.ErrHeader), errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum),
		errors.Is(err, tar.ErrFieldTooLong):
		return refuse(CodeBadArchive, "", "the archive is corrupt (%v); make it again with "+cliname.Cmd("ext pack"), err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("unpack: %w", err)
	}
	return refuse(CodeBadArchive, "", "cannot read the archive (%v); make it again with "+cliname.Cmd("ext pack"), err)
}

var errStreamTooLarge = errors.New("archive stream over its limit")

// boundedReader returns errStreamTooLarge once more than n bytes would be
// read from r.
type boundedReader struct {
	r io.Reader
	n int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.n <= 0 {
		// At the limit: only the end of the stream is still acceptable.
		var one [1]byte
		if k, err := b.r.Read(one[:]); k == 0 && err != nil {
			return 0, err
		}
		return 0, errStreamTooLarge
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	return k, err
}
