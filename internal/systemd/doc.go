// Package systemd holds the systemd user units of rukhd, the per-user
// daemon: rukhd.socket, which listens on %t/rukh/rukhd.sock and starts the
// daemon on the first connection, and rukhd.service, which runs
// /usr/bin/rukhd --idle-timeout 15m; and rukh-mcp-http@.service, which runs
// `rukh mcp --http` on the address of its instance name. The .deb installs
// them under /usr/lib/systemd/user/ (packaging/); the tests check them with
// systemd-analyze verify and against the daemon's contract.
package systemd

import "embed"

// Units are the units, as installed.
//
//go:embed rukhd.socket rukhd.service rukh-mcp-http@.service
var Units embed.FS

// UnitNames are the units' file names.
var UnitNames = []string{"rukhd.socket", "rukhd.service", "rukh-mcp-http@.service"}
