// Package systemd holds the systemd user units of rukhd, the per-user
// daemon: rukhd.socket, which listens on %t/rukh/rukhd.sock and starts the
// daemon on the first connection, and rukhd.service, which runs
// /usr/bin/rukhd --idle-timeout 15m. The .deb installs them under
// /usr/lib/systemd/user/ (packaging/); the tests check them with
// systemd-analyze verify and against the daemon's contract.
package systemd

import "embed"

// Units are rukhd.socket and rukhd.service, as installed.
//
//go:embed rukhd.socket rukhd.service
var Units embed.FS
