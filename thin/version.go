package thin

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/paths"
	"github.com/rukh-cli/rukh/internal/release/descriptor/format"
)

// WriteVersion writes what `NAME version` prints: this build and what it
// supports, and where the CLI keeps its files when p is not nil. The thin
// client answers it itself, daemon or not (nothing in it is the
// daemon's: a daemon serves only clients of its own build), and the
// core's `version` prints it with the same function.
func WriteVersion(w io.Writer, name string, p *paths.Paths) {
	fmt.Fprintf(w, "%s %s (%s)\nbuild: %s\ndescriptor formats: %s\nmachine features: %s\n",
		name, buildid.Version(), runtime.Version(), buildid.ID(), format.V1+", "+format.V2, strings.Join(format.Features(), ", "))
	if p != nil {
		fmt.Fprintf(w, "data: %s\nconfig: %s\nruntime: %s\n", p.Data, p.Config, p.Runtime)
	}
}

// version answers `NAME version` in this process; ok is false for any
// other command line (`version --json` included, which the core prints).
func version(name string, args []string) (status int, ok bool) {
	if len(args) != 1 || args[0] != "version" {
		return 0, false
	}
	var where *paths.Paths
	if p, err := paths.Resolve(name, os.Getenv); err == nil {
		where = &p
	}
	WriteVersion(os.Stdout, name, where)
	return exitcode.OK, true
}
