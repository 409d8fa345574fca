package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/jsoncanon"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Manifest lists every file of a release with its digest, and names the
// package, version and publisher its descriptor declares. Its canonical
// form is what a publisher signs and what a pin names.
type Manifest struct {
	Format     string `json:"format"` // ManifestFormat
	Package    string `json:"package"`
	Version    string `json:"version"`
	Publisher  string `json:"publisher"`
	Descriptor string `json:"descriptor"` // "sha256:<hex>" of rukh-extension.json
	Files      []File `json:"files"`      // sorted by path, byte order
}

// File is one regular file of a release.
type File struct {
	Path   string `json:"path"`   // relative, slash-separated
	Size   int64  `json:"size"`   // bytes
	Mode   string `json:"mode"`   // "0644" or "0755"
	SHA256 string `json:"sha256"` // lowercase hex
}

// BuildManifest describes the release directory dir: every regular file
// but the manifest and signature themselves and what the ignore list
// leaves out (DefaultIgnore, then dir's IgnoreName), and the package,
// version and publisher of its descriptor: what Pack packs. It follows no
// symbolic links and refuses
// anything a release may not hold (see docs/releases.md). An invalid
// descriptor is an *Error with code invalid_descriptor that unwraps to
// descriptor.Errors.
func BuildManifest(dir string) (*Manifest, error) {
	m, _, err := buildManifest(dir)
	return m, err
}

func buildManifest(dir string) (*Manifest, *descriptor.Descriptor, error) {
	m, d, _, err := scanRelease(dir, false)
	return m, d, err
}

// scanRelease is buildManifest that also returns the Lstat of every file
// listed (see walkFiles). With exact, nothing is ignored: every file is
// listed, as a signed release's are.
func scanRelease(dir string, exact bool) (*Manifest, *descriptor.Descriptor, map[string]fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open release directory: %w", err)
	}
	defer root.Close()
	var ig *ignorer
	if !exact {
		if ig, err = loadIgnore(root); err != nil {
			return nil, nil, nil, err
		}
	}
	files, infos, err := walkFiles(root, ig)
	if err != nil {
		return nil, nil, nil, err
	}
	d, err := loadDescriptor(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if ig != nil {
		if e := keepsPrograms(d, infos); e != nil {
			return nil, nil, nil, e
		}
	}
	m := &Manifest{
		Format:    ManifestFormat,
		Package:   d.Package,
		Version:   d.Version,
		Publisher: d.Publisher,
		Files:     files,
	}
	for _, f := range files {
		if f.Path == descriptor.FileName {
			m.Descriptor = "sha256:" + f.SHA256
		}
	}
	if e := m.validate(); e != nil {
		return nil, nil, nil, e
	}
	if n := len(m.Canonical()); int64(n) > limits.manifestBytes {
		return nil, nil, nil, refuse(CodeTooLarge, ManifestName, "the manifest would be %d bytes; the limit is %d, so ship fewer files or shorter paths", n, limits.manifestBytes)
	}
	return m, d, infos, nil
}

// keepsPrograms refuses an ignore list that leaves out a program the
// descriptor runs (listed holds the files it kept): the descriptor found
// the program on disk, but the release would not hold it.
func keepsPrograms(d *descriptor.Descriptor, listed map[string]fs.FileInfo) *Error {
	for _, c := range d.Commands {
		if _, ok := listed[c.Execute.Program]; !ok {
			return refuse(CodeBadIgnoreFile, IgnoreName, "the ignore list leaves out %q, the program of %s, so the release would not hold it; "+
				"change the line of %s that leaves it or its directory out", c.Execute.Program, c.Identity, IgnoreName)
		}
	}
	return nil
}

func loadDescriptor(dir string) (*descriptor.Descriptor, error) {
	d, err := descriptor.Load(dir)
	if err != nil {
		return nil, &Error{Code: CodeInvalidDescriptor, Path: descriptor.FileName,
			Message: "the descriptor is invalid; fix it (" + cliname.Cmd("ext validate") + " lists every problem): " + err.Error(), Err: err}
	}
	return d, nil
}

// Canonical returns the manifest's RFC 8785 (JCS) canonical JSON: the
// bytes a signature covers and the digest is taken of.
func (m *Manifest) Canonical() []byte {
	c := *m
	if c.Files == nil {
		c.Files = []File{}
	}
	raw, err := json.Marshal(&c)
	if err != nil {
		panic("trust: marshal manifest: " + err.Error())
	}
	out, err := jsoncanon.Transform(raw)
	if err != nil {
		panic("trust: canonicalize manifest: " + err.Error())
	}
	return out
}

// Digest returns the release digest, "sha256:" and the lowercase hex
// SHA-256 of Canonical(). It is what --pin names and what the store keys
// a release by.
func (m *Manifest) Digest() string {
	sum := sha256.Sum256(m.Canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// file returns the manifest entry for path p, or nil.
func (m *Manifest) file(p string) *File {
	for i := range m.Files {
		if m.Files[i].Path == p {
			return &m.Files[i]
		}
	}
	return nil
}

// ParseManifest reads rukh-release.json strictly: strict JSON, exactly the
// members of the format, files sorted and unique, valid paths, modes and
// digests, within the release limits. Errors are *Error with code
// bad_manifest or too_large.
func ParseManifest(data []byte) (*Manifest, error) {
	if int64(len(data)) > limits.manifestBytes {
		return nil, refuse(CodeTooLarge, ManifestName, "manifest is %d bytes; the limit is %d", len(data), limits.manifestBytes)
	}
	v, err := strictjson.Parse(data, strictjson.Limits{MaxBytes: int(limits.manifestBytes), MaxDepth: 3, MaxMembers: 16 + 8*int(limits.files)})
	if err != nil {
		return nil, badManifest("%v", err)
	}
	r := &docReader{what: "manifest"}
	top := r.object(v, "", "format", "package", "version", "publisher", "descriptor", "files")
	m := &Manifest{
		Format:     r.str(top, "format"),
		Package:    r.str(top, "package"),
		Version:    r.str(top, "version"),
		Publisher:  r.str(top, "publisher"),
		Descriptor: r.str(top, "descriptor"),
	}
	if r.err != nil {
		return nil, badManifest("%s", r.err)
	}
	if m.Format != ManifestFormat {
		return nil, refuse(CodeBadManifest, ManifestName, "format is %q and this build reads only %q; upgrade "+cliname.Name()+", or repack the release with this one", m.Format, ManifestFormat)
	}
	files := top["files"]
	if files.Kind != strictjson.Array {
		return nil, badManifest(`"files" must be an array`)
	}
	if int64(len(files.Items)) > limits.files {
		return nil, refuse(CodeTooManyFiles, "", "the manifest lists %d files; the limit is %d", len(files.Items), limits.files)
	}
	m.Files = make([]File, 0, len(files.Items))
	for i, item := range files.Items {
		at := "/files/" + strconv.Itoa(i)
		o := r.object(item, at, "path", "size", "mode", "sha256")
		f := File{Path: r.str(o, "path"), Mode: r.str(o, "mode"), SHA256: r.str(o, "sha256")}
		if o != nil {
			f.Size = r.size(o["size"], at+"/size")
		}
		if r.err != nil {
			return nil, badManifest("%s", r.err)
		}
		m.Files = append(m.Files, f)
	}
	if e := m.validate(); e != nil {
		return nil, e
	}
	return m, nil
}

func badManifest(format string, args ...any) *Error {
	return refuse(CodeBadManifest, ManifestName, format+"; repack the release with "+cliname.Cmd("ext pack"), args...)
}

// validate checks everything ParseManifest promises about m.
func (m *Manifest) validate() *Error {
	if m.Format != ManifestFormat {
		return badManifest("format is %q, not %q", m.Format, ManifestFormat)
	}
	switch {
	case !descriptor.ValidPackage(m.Package):
		return badManifest("package %q is not a valid package name", m.Package)
	case !descriptor.ValidPublisher(m.Publisher):
		return badManifest("publisher %q is not a valid publisher name", m.Publisher)
	case !plainName(m.Version):
		return badManifest("version %q is empty, too long or has spaces or control characters", m.Version)
	}
	if !descriptor.ValidDigest(m.Descriptor) {
		return badManifest(`descriptor %q is not "sha256:" and 64 lowercase hex digits`, m.Descriptor)
	}
	if int64(len(m.Files)) > limits.files {
		return refuse(CodeTooManyFiles, "", "the manifest lists %d files; the limit is %d", len(m.Files), limits.files)
	}
	files := make(map[string]bool, len(m.Files))
	var total int64
	for i, f := range m.Files {
		if e := checkPath(f.Path); e != nil {
			return badManifest("file %q: %s", e.Path, e.Message)
		}
		if reserved(f.Path) {
			return badManifest("file %q: %s and %s are not release files", f.Path, ManifestName, SignatureName)
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			return badManifest("files are not sorted by path and unique: %q comes after %q", f.Path, m.Files[i-1].Path)
		}
		if f.Size < 0 || f.Size > limits.fileBytes {
			return refuse(CodeTooLarge, f.Path, "manifest gives the file %d bytes; the limit is %d", f.Size, limits.fileBytes)
		}
		if total += f.Size; total > limits.totalBytes {
			return refuse(CodeTooLarge, "", "the manifest's files add up to more than %d bytes", limits.totalBytes)
		}
		if f.Mode != "0644" && f.Mode != "0755" {
			return badManifest("file %q: mode %q is not \"0644\" or \"0755\"", f.Path, f.Mode)
		}
		if !descriptor.Hex64(f.SHA256) {
			return badManifest("file %q: sha256 %q is not 64 lowercase hex digits", f.Path, f.SHA256)
		}
		files[f.Path] = true
	}
	// A path cannot be a file and the directory of another file.
	for _, f := range m.Files {
		for i := strings.IndexByte(f.Path, '/'); i >= 0; i = nextSlash(f.Path, i) {
			if files[f.Path[:i]] {
				return badManifest("%q is listed as a file and as the directory of %q", f.Path[:i], f.Path)
			}
		}
	}
	d := m.file(descriptor.FileName)
	if d == nil {
		return badManifest("the manifest does not list %s", descriptor.FileName)
	}
	if m.Descriptor != "sha256:"+d.SHA256 {
		return badManifest("descriptor digest %s is not the digest of the listed %s", m.Descriptor, descriptor.FileName)
	}
	return nil
}

func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func plainName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || r == ' ' {
			return false
		}
	}
	return true
}

// docReader reads the closed objects of the manifest and signature
// formats, keeping the first problem.
type docReader struct {
	what string
	err  error
}

func (r *docReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// object returns the members of v by name, requiring exactly names.
func (r *docReader) object(v *strictjson.Value, at string, names ...string) map[string]*strictjson.Value {
	if r.err != nil {
		return nil
	}
	if v.Kind != strictjson.Object {
		r.fail("%s: must be an object, not %s", pointer(at), v.Kind)
		return nil
	}
	out := make(map[string]*strictjson.Value, len(names))
	for _, mem := range v.Members {
		known := false
		for _, n := range names {
			known = known || mem.Name == n
		}
		if !known {
			r.fail("%s: unknown member %q", pointer(at), mem.Name)
			return nil
		}
		out[mem.Name] = mem.Value
	}
	for _, n := range names {
		if out[n] == nil {
			r.fail("%s: member %q is required", pointer(at), n)
			return nil
		}
	}
	return out
}

func (r *docReader) str(o map[string]*strictjson.Value, name string) string {
	if r.err != nil || o == nil {
		return ""
	}
	v := o[name]
	if v.Kind != strictjson.String {
		r.fail("%q must be a string, not %s", name, v.Kind)
		return ""
	}
	return v.Text
}

// size reads a non-negative integer written plainly (no sign, fraction or
// exponent).
func (r *docReader) size(v *strictjson.Value, at string) int64 {
	if r.err != nil {
		return 0
	}
	if v.Kind != strictjson.Number {
		r.fail("%s: must be a number, not %s", at, v.Kind)
		return 0
	}
	n, err := strconv.ParseInt(v.Text, 10, 64)
	if err != nil || v.Text[0] == '-' {
		r.fail("%s: %s is not a whole number of bytes", at, v.Text)
		return 0
	}
	return n
}

func pointer(at string) string {
	if at == "" {
		return "document root"
	}
	return at
}
