// Package buildid names the build of this binary, so that a client and a
// daemon can tell whether they were built from the same code.
package buildid

import (
	"runtime/debug"
	"sync"
)

// stamp is set at link time by `make build`
// (-ldflags "-X github.com/rukh-cli/rukh/internal/buildid.stamp=…"): a
// hash of the sources. A plain `go build` leaves it empty.
var stamp string

var id = sync.OnceValue(func() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v += "+" + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					v += "-dirty"
				}
			}
		}
	}
	if stamp != "" {
		v += "/" + stamp
	}
	return v
})

// ID is this build's identity: the module version, the VCS revision when
// recorded, and the source stamp when linked in.
func ID() string { return id() }

// Version is the module version of this build, or "devel" (a build from
// a checkout); ID is the identity a client and a daemon compare.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
