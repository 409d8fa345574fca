// Package sandbox applies a task's enforcement profile to a command
// before it runs: a small helper process (rukh-sandbox) started in the
// command's place sets its resource limits, no_new_privs and, for
// strict, a Landlock domain, then execs the command itself. The host
// creates the network namespace (strict) when it starts the helper. A
// profile that cannot be applied is reported to the host, which refuses
// the call; a command never runs weaker than its task declares.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Profiles.
const (
	Host       = "host"
	Restricted = "restricted"
	Strict     = "strict"
)

// EnvSpec carries the Spec (JSON) from the host to the helper; the helper
// removes it before exec.
const EnvSpec = "RUKH_SANDBOX_SPEC"

// Spec is what the helper applies.
type Spec struct {
	Profile string   `json:"profile"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Strict only: the paths the command may read (and execute) and
	// read and write; everything else is denied. TCP bind and connect are
	// denied too (the host also gives it a network namespace of its own).
	ReadOnly  []string `json:"readOnly,omitempty"`
	ReadWrite []string `json:"readWrite,omitempty"`
	Program   string   `json:"program"`
	ReportFD  int      `json:"reportFd"`
	Probe     bool     `json:"probe,omitempty"` // only check that the profile can be applied
}

// Rlimit is one resource limit.
type Rlimit struct {
	Resource int    `json:"resource"` // unix.RLIMIT_*
	Max      uint64 `json:"max"`
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

// Main is the helper's entry point: apply the Spec from the environment,
// then exec args (the program and its arguments). It returns only on
// failure, having written the reason to ReportFD.
func Main(args []string) int {
	var report *os.File // Spec.ReportFD, close-on-exec: the host reads EOF once the command runs
	fail := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if report != nil {
			report.WriteString(msg)
		} else {
			fmt.Fprintln(os.Stderr, "rukh-sandbox:", msg)
		}
		return 1
	}
	raw := os.Getenv(EnvSpec)
	if raw == "" {
		return fail("no %s: this helper is started by rukh, not by hand", EnvSpec)
	}
	var spec Spec
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return fail("bad spec: %v", err)
	}
	if spec.ReportFD >= 3 {
		unix.CloseOnExec(spec.ReportFD)
		report = os.NewFile(uintptr(spec.ReportFD), "report")
	}
	if err := Apply(&spec); err != nil {
		return fail("%v", err)
	}
	if spec.Probe {
		return 0
	}
	if len(args) == 0 {
		return fail("no program to run")
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvSpec+"=") {
			env = append(env, kv)
		}
	}
	err := unix.Exec(spec.Program, args, env)
	return fail("exec %s: %v", spec.Program, err)
}

// ErrUnavailable wraps every reason a profile cannot be applied here.
var ErrUnavailable = errors.New("enforcement unavailable")

// Apply applies spec to the calling process (all its threads).
func Apply(spec *Spec) error {
	switch spec.Profile {
	case Restricted, Strict:
	default:
		return fmt.Errorf("%w: unknown profile %q", ErrUnavailable, spec.Profile)
	}
	for _, r := range spec.Rlimits {
		lim := unix.Rlimit{Cur: r.Max, Max: r.Max}
		if err := unix.Setrlimit(r.Resource, &lim); err != nil {
			return fmt.Errorf("%w: setrlimit %d: %v", ErrUnavailable, r.Resource, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%w: no_new_privs: %v", ErrUnavailable, err)
	}
	if spec.Profile != Strict {
		return nil
	}
	// Landlock ABI 4: files (read, write, execute, truncate, refer) and
	// TCP bind/connect. Not best-effort: a kernel without it refuses.
	rules := []landlock.Rule{
		landlock.RODirs(existing(spec.ReadOnly, true)...),
		landlock.ROFiles(existing(spec.ReadOnly, false)...),
		landlock.RWDirs(existing(spec.ReadWrite, true)...),
		landlock.RWFiles(existing(spec.ReadWrite, false)...),
	}
	if err := landlock.V4.Restrict(rules...); err != nil {
		return fmt.Errorf("%w: landlock: %v", ErrUnavailable, err)
	}
	// Where the kernel has it (ABI 6), also keep signals and abstract
	// sockets inside the domain: the command cannot signal the user's other
	// processes.
	if err := landlock.V6.BestEffort().RestrictScoped(); err != nil {
		return fmt.Errorf("%w: landlock scoping: %v", ErrUnavailable, err)
	}
	return nil
}

// existing returns the paths that exist and are (dirs) or are not (files)
// directories; Landlock rules need open-able paths.
func existing(paths []string, dirs bool) []string {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() != dirs {
			continue
		}
		out = append(out, p)
	}
	return out
}
