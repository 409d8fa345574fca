package trust

import "fmt"

// Code is a stable error code. docs/releases.md lists every code.
type Code string

// Error codes. Each names one reason a release, key or archive is refused.
const (
	CodeUnsigned          Code = "unsigned"           // no signature and no pin; the message names the digest to pin
	CodeUnknownPublisher  Code = "unknown_publisher"  // no key is trusted for the release's publisher
	CodePublisherMismatch Code = "publisher_mismatch" // the signature's publisher is not the descriptor's
	CodeBadSignature      Code = "bad_signature"      // the signature does not verify under the key it names
	CodeKeyMismatch       Code = "key_mismatch"       // signed by a key that is not trusted for the publisher
	CodeFileChanged       Code = "file_changed"       // a file's size, mode or content differs from the manifest
	CodeFileAdded         Code = "file_added"         // a file the manifest does not list
	CodeFileMissing       Code = "file_missing"       // a file the manifest lists is absent
	CodeManifestMismatch  Code = "manifest_mismatch"  // package, version or publisher differ from the descriptor
	CodeSymlink           Code = "symlink"            // a symbolic link
	CodeHardlink          Code = "hardlink"           // a hard-link archive entry
	CodeSpecialFile       Code = "special_file"       // a device, fifo, socket or other non-regular entry
	CodeUnsafePath        Code = "unsafe_path"        // absolute, "..", backslash, NUL, control character, not UTF-8, too long or reserved
	CodeSetuid            Code = "setuid"             // a setuid, setgid or sticky bit
	CodeTooManyFiles      Code = "too_many_files"     // more files than MaxFiles
	CodeTooLarge          Code = "too_large"          // a file, the manifest, the signature or the whole release over its limit
	CodeDuplicateEntry    Code = "duplicate_entry"    // an archive names one path twice, or as both file and directory; two paths differ only in letter case
	CodeBadArchive        Code = "bad_archive"        // not a readable gzip-compressed tar archive
	CodeBadManifest       Code = "bad_manifest"       // rukh-release.json is malformed
	CodeBadSignatureFile  Code = "bad_signature_file" // rukh-release.sig is malformed
	CodeInvalidDescriptor Code = "invalid_descriptor" // rukh-extension.json is missing or invalid; unwraps to descriptor.Errors
	CodeBadPin            Code = "bad_pin"            // a pin that is not sha256: and 64 lowercase hex digits
	CodePinMismatch       Code = "pin_mismatch"       // the release digest is not the pinned one
	CodeBadKey            Code = "bad_key"            // a key file or key that is not a usable ed25519 key
	CodeBadIgnoreFile     Code = "bad_ignore_file"    // .rukhignore is not a file of valid patterns; names the line
)

// Error is a refusal: a stable code, the path of the file in the release
// it concerns ("" when none) and a message that says what to do. Err is
// the underlying cause, if any (descriptor.Errors for invalid_descriptor).
type Error struct {
	Code    Code
	Path    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %q: %s", e.Code, e.Path, e.Message)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

func refuse(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Message: fmt.Sprintf(format, args...)}
}
