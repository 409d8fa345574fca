// Package sandbox applies a task's enforcement profile to a command
// before it runs: a small helper process (rukh-sandbox) started in the
// command's place sets its resource limits and no_new_privs and, for
// strict, gives up its controlling terminal and every capability, enters
// a Landlock domain and installs a seccomp filter (no socket of any
// family: no network; no io_uring, no keyrings), then execs the command
// itself. A profile that cannot be applied is reported to the host, which
// refuses the call; a command never runs weaker than its task declares.
//
// The helper is C without libc (helper/rukh-sandbox.c): it starts before
// every restricted or strict call, and a Go program's start-up alone
// (about 2 ms here) is many times its whole budget. Build compiles it.
package sandbox

import (
	"errors"
	"strconv"
)

// Profiles.
const (
	Host       = "host"
	Restricted = "restricted"
	Strict     = "strict"
)

// GateClosed is the exit status of a helper whose gate (Spec.GateFD)
// closed before it was opened: nothing ran.
const GateClosed = 125

// Spec is what the helper applies.
type Spec struct {
	Profile string
	Rlimits []Rlimit
	// Strict only: the paths the command may read (and execute) and
	// read and write; everything else is denied. It can create no socket
	// of any family (seccomp), and TCP bind and connect are denied too.
	ReadOnly  []string
	ReadWrite []string
	// Strict only: the paths this call was granted, read-only and
	// read-write, which the host authorized resolved (no symbolic link on
	// the way). The helper opens them following no symbolic link: one on
	// the way when the command starts fails the call (ErrGrantSymlink)
	// rather than grant the tree it leads to. ReadOnly and ReadWrite are
	// the host's own choice (the system's paths, the release, TMPDIR) and
	// may lead through symbolic links (/lib on merged-/usr systems).
	GrantRead  []string
	GrantWrite []string
	// Restricted and strict: the directories the command must not see
	// (the home's store, keys, profile and socket, the user's runtime
	// directory). The helper enters a user and mount namespace of the
	// command's own and covers each with an empty, read-only tmpfs;
	// Keep are directories inside them shown again, read-only (the
	// command's release); Tmp is bound over /tmp and /var/tmp (the
	// call's private TMPDIR), so that sockets kept there (tmux, X11)
	// are not the command's to reach. A directory Hide names must
	// exist.
	Hide     []string
	Keep     []string
	Tmp      string
	ReportFD int // the helper reports a failure here (0: on its stderr)
	// GateFD, when set, is a descriptor the helper reads one byte from
	// before it forks the command: the host writes it once the call's
	// begin record is durable. At the end of the file instead (the host
	// refused the call, or died), the helper exits GateClosed and runs
	// nothing.
	GateFD int
	Probe  bool // only check that the profile can be applied
}

// Rlimit is one resource limit.
type Rlimit struct {
	Resource int // unix.RLIMIT_*
	Max      uint64
}

// Args is the helper's command line for spec, running argv (the program's
// path, then its argv[0] and arguments); argv is ignored for a probe.
func (s *Spec) Args(helper string, argv []string) []string {
	args := []string{helper, s.Profile}
	if s.ReportFD > 0 {
		args = append(args, "--report", strconv.Itoa(s.ReportFD))
	}
	if s.GateFD > 0 {
		args = append(args, "--gate", strconv.Itoa(s.GateFD))
	}
	for _, r := range s.Rlimits {
		args = append(args, "--rlimit", strconv.Itoa(r.Resource), strconv.FormatUint(r.Max, 10))
	}
	for _, p := range s.ReadOnly {
		args = append(args, "--ro", p)
	}
	for _, p := range s.ReadWrite {
		args = append(args, "--rw", p)
	}
	for _, p := range s.GrantRead {
		args = append(args, "--grant-ro", p)
	}
	for _, p := range s.GrantWrite {
		args = append(args, "--grant-rw", p)
	}
	for _, p := range s.Hide {
		args = append(args, "--hide", p)
	}
	for _, p := range s.Keep {
		args = append(args, "--keep", p)
	}
	if s.Tmp != "" {
		args = append(args, "--tmp", s.Tmp)
	}
	if s.Probe {
		return append(args, "--probe")
	}
	return append(append(args, "--"), argv...)
}

// SystemReadOnly are the paths every strict command may read: programs and
// libraries, and the few files of /etc that programs need to start (never
// /etc as a whole: it holds secrets).
var SystemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/etc/alternatives", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group",
	"/etc/ssl/certs", "/etc/ca-certificates", "/etc/mime.types",
	"/dev/urandom", "/dev/random", "/dev/zero", "/proc/self",
}

// SystemReadWrite are the paths every strict command may write.
var SystemReadWrite = []string{"/dev/null", "/dev/tty"}

// ErrUnavailable wraps every reason a profile cannot be applied here; the
// helper's reports of such reasons start with its text.
var ErrUnavailable = errors.New("enforcement unavailable")

// ErrGrantSymlink starts the helper's report of a granted path (GrantRead,
// GrantWrite) that leads through a symbolic link when the command starts;
// the path follows its text and ": ". The host resolved it when it
// authorized the call, so the link was put there since (or leads
// nowhere): nothing runs.
var ErrGrantSymlink = errors.New("granted path leads through a symbolic link")
