// Package trust creates and checks signed extension releases: publisher
// keys, the release manifest, its ed25519 signature and the release
// archive.
//
// A release is a directory (or a gzip-compressed tar archive of one)
// holding rukh-extension.json, the files it runs, the manifest
// rukh-release.json and the signature rukh-release.sig. Pack makes the
// archive; Unpack extracts one safely; Verify checks a directory and
// decides whether to trust it. docs/releases.md describes the formats,
// the rules and every error code.
package trust
