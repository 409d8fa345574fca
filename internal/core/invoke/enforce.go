package invoke

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"golang.org/x/sys/unix"
)

// findHelper finds the enforcement helper, NAME-sandbox
// (cliname.Helper): beside the running executable, then on $PATH.
var findHelper = sync.OnceValue(func() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), cliname.Helper())
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	p, _ := exec.LookPath(cliname.Helper())
	return p
})

// helper is the enforcement helper's path, or "" when it is not installed.
func (c *Core) helper() string {
	if c.Sandbox != "" {
		return c.Sandbox
	}
	return findHelper()
}

// enforcement is how one invocation is confined.
type enforcement struct {
	profile string
	helper  string
	spec    *sandbox.Spec
	tmpdir  string   // the command's private TMPDIR, removed afterwards
	report  *os.File // the read end of the helper's failure report
	gate    *os.File // the write end of the helper's gate (open), until it is opened or closed
}

// prepareEnforcement builds the confinement of a command under the task's
// profile, or refuses: a profile this machine cannot apply is never run
// weaker.
func (c *Core) prepareEnforcement(task profile.Task, releaseDir, id string, grants []grant) (*enforcement, *Outcome) {
	e := &enforcement{profile: task.Enforcement, helper: c.helper()}
	if e.profile == "" || e.profile == profile.EnforceHost {
		// Supervised by the helper where it is installed (which is what
		// ends everything the command starts, whatever it does), else
		// as before it: in a group of its own (Enforceable says which).
		if e.helper != "" {
			e.spec = &sandbox.Spec{Profile: sandbox.Host}
		}
		return e, nil
	}
	if e.helper == "" {
		return nil, rejected(ReasonEnforcementUnavailable,
			"the task's enforcement is %q, but %s is not installed beside this program or on $PATH; nothing was run", e.profile, cliname.Helper())
	}
	spec := &sandbox.Spec{Profile: e.profile}
	for _, l := range []struct {
		res int
		v   int64
	}{{unix.RLIMIT_CPU, task.CPUSeconds}, {unix.RLIMIT_AS, task.MemoryBytes}, {unix.RLIMIT_NOFILE, task.OpenFiles}, {unix.RLIMIT_NPROC, task.Processes}} {
		if l.v > 0 {
			spec.Rlimits = append(spec.Rlimits, sandbox.Rlimit{Resource: l.res, Max: uint64(l.v)})
		}
	}
	tmp, err := os.MkdirTemp("", cliname.Name()+"-"+id[:12]+"-")
	if err != nil {
		return nil, &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: "private TMPDIR: " + err.Error()}
	}
	e.tmpdir = tmp
	// What the command must not see: the home (its release shown again)
	// and the user's runtime directory. A strict command's Landlock rules
	// keep it from them already, unless a grant reaches into them: only
	// then does it need the namespaces (which not every machine gives
	// an unprivileged user).
	hidden := c.hiddenDirs()
	if e.profile == profile.EnforceRestricted || grantsReach(grants, hidden) {
		spec.Hide, spec.Keep = hidden, []string{resolved(releaseDir)}
	}
	if e.profile == profile.EnforceStrict {
		spec.ReadOnly = append([]string{releaseDir}, sandbox.SystemReadOnly...)
		spec.ReadWrite = append([]string{tmp}, sandbox.SystemReadWrite...)
		// The call's grants apart: they were resolved at admission, and
		// the helper refuses one that leads through a symbolic link now.
		for _, g := range grants {
			if g.write {
				spec.GrantWrite = append(spec.GrantWrite, g.path)
			} else {
				spec.GrantRead = append(spec.GrantRead, g.path)
			}
		}
	}
	e.spec = spec
	return e, nil
}

// hiddenDirs are the directories a confined command does not see: the
// home's (Core.Hidden), the user's runtime directory — the session bus,
// systemd --user, agents' sockets, Wayland: each a way to have a program
// started outside the call — and the sockets of tmux and X11 in /tmp,
// through which a command could type into the owner's terminal. Each is
// resolved through symbolic links (the helper mounts over what a path
// leads to); one inside another is left to the outer.
func (c *Core) hiddenDirs() []string {
	dirs := c.Hidden
	if len(dirs) == 0 {
		dirs = []string{c.DataDir}
	}
	uid := strconv.Itoa(os.Getuid())
	dirs = append(slices.Clone(dirs), os.Getenv("XDG_RUNTIME_DIR"), "/run/user/"+uid, "/tmp/tmux-"+uid, "/tmp/.X11-unix")
	var out []string
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if d = resolved(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return slices.CompactFunc(out, func(outer, inner string) bool { return within(inner, outer) })
}

// grantsReach reports whether a granted path is one of dirs, inside one,
// or holds one.
func grantsReach(grants []grant, dirs []string) bool {
	for _, g := range grants {
		for _, d := range dirs {
			if within(g.path, d) || within(d, g.path) {
				return true
			}
		}
	}
	return false
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// resolved is path through its symbolic links, or path when it cannot be
// resolved (it is not there: nothing to hide).
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// supervised reports whether the helper starts the command (wrap) and
// stays to end all it starts.
func (e *enforcement) supervised() bool { return e.spec != nil }

// wrap makes ex start the helper, which forks, applies the profile and
// execs the command, and supervises it; the helper's report pipe is the
// descriptor after the channel, and its gate (open) the one after that.
// The host forks as for any command (a vfork, whatever the host's size),
// and what the kernel refuses the helper is reported like any profile it
// cannot apply.
func (e *enforcement) wrap(ex *exec.Cmd) (closeAfterStart []*os.File, err error) {
	if e.spec == nil {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	gr, gw, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	e.report, e.gate = r, gw
	e.spec.ReportFD = 3 + len(ex.ExtraFiles)
	e.spec.GateFD = e.spec.ReportFD + 1
	ex.ExtraFiles = append(ex.ExtraFiles, w, gr)
	if e.tmpdir != "" {
		ex.Env = append(ex.Env, "TMPDIR="+e.tmpdir)
	}
	ex.Args = e.spec.Args(e.helper, append([]string{ex.Path}, ex.Args...))
	ex.Path = e.helper
	return []*os.File{w, gr}, nil
}

// gated reports whether the helper waits at its gate (wrap) before it
// forks the command: then the command runs only once open is called.
func (e *enforcement) gated() bool { return e.gate != nil }

// open lets the helper fork the command; close, not open, has it exit
// with nothing run. Either is done once; the other does nothing then.
func (e *enforcement) open() {
	if e.gate != nil {
		e.gate.Write([]byte{'g'}) // a helper that is gone reads nothing: its exit tells
		e.closeGate()
	}
}

func (e *enforcement) closeGate() {
	if e.gate != nil {
		e.gate.Close()
		e.gate = nil
	}
}

// failure reads the helper's report once the command is done: a message
// means the profile could not be applied (or the program not executed)
// and the command never ran.
func (e *enforcement) failure() string {
	if e.report == nil {
		return ""
	}
	r := e.report
	e.report = nil
	defer r.Close()
	msg, _ := io.ReadAll(io.LimitReader(r, 4096))
	return strings.TrimSpace(string(msg))
}

// cleanup removes the private TMPDIR, and closes the report pipe when
// failure never read it (the command was cancelled before it started, or
// could not be started).
func (e *enforcement) cleanup() {
	e.closeGate()
	if e.report != nil {
		e.report.Close()
		e.report = nil
	}
	if e.tmpdir != "" {
		os.RemoveAll(e.tmpdir)
	}
}

// grantChanged refuses a strict call whose granted path leads through a
// symbolic link when the helper opens it: admission resolved it, so the
// tree changed under the call (or the link leads nowhere), and following
// the link could open to the command what the task never allowed. It is a
// denial of that access, and nothing ran.
func grantChanged(identity string, grants []grant, path string) *Outcome {
	action := ""
	for _, g := range grants {
		if g.path == path {
			action = g.action
			break
		}
	}
	return denied(action, "path:"+path, "cannot run %s under strict: its granted path %s leads through a symbolic link now; "+
		"it was resolved when the call was admitted, so the link was put there since, or leads nowhere; nothing was run", identity, path)
}

// startError classifies a failure to start the helper itself.
func (e *enforcement) startError(identity string, err error) *Outcome {
	return &Outcome{Outcome: ExecutionFailed, Reason: ReasonSpawnFailed, Message: fmt.Sprintf("cannot start %s: %v", identity, err)}
}

// Enforceable says, for each enforcement profile, whether this machine
// applies it and how, or why not: the helper is started in probe mode and
// applies everything but the exec; for strict it then checks that its
// filter refuses a TCP socket and allows a stream socket pair.
func (c *Core) Enforceable() map[string]string {
	out := map[string]string{}
	helper := c.helper()
	for _, p := range []string{profile.EnforceHost, profile.EnforceRestricted, profile.EnforceStrict} {
		if helper == "" && p == profile.EnforceHost {
			out[p] = "applied: scrubbed environment, descriptors 0-2 and the channel only, own process group, dies with its host; " +
				"what the command starts outside its group is NOT tracked: install " + cliname.Helper() + " beside this program or on $PATH"
			continue
		}
		if helper == "" {
			out[p] = "NOT available: " + cliname.Helper() + " is not installed beside this program or on $PATH; calls of such tasks are refused"
			continue
		}
		spec := &sandbox.Spec{Profile: p, Probe: true}
		if p == profile.EnforceRestricted {
			// A cover and a directory shown again inside it, as a
			// restricted call's home and release.
			probe, err := os.MkdirTemp("", cliname.Name()+"-probe-")
			if err == nil {
				defer os.RemoveAll(probe)
				err = os.MkdirAll(filepath.Join(probe, "releases", "r"), 0o700)
			}
			if err != nil {
				out[p] = "NOT checked: " + err.Error()
				continue
			}
			spec.Hide, spec.Keep = []string{probe}, []string{filepath.Join(probe, "releases", "r")}
		}
		if p == profile.EnforceStrict {
			// A grant too ("/", which no symbolic link leads to), so that
			// an openat2 the kernel lacks or a filter refuses shows here.
			spec.ReadOnly, spec.GrantRead = sandbox.SystemReadOnly, []string{"/"}
		}
		e := &enforcement{profile: p, helper: helper, spec: spec}
		// A probe: wrap makes the helper the whole command line.
		ex := &exec.Cmd{SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
		w, err := e.wrap(ex)
		if err == nil {
			// Tracked, so that a host of many calls never takes the probe
			// for what a call left behind (spawn.KillStrays).
			if err = spawn.StartTracked(ex); err == nil {
				err = ex.Wait()
				spawn.Untrack(ex.Process.Pid)
			}
			closeAll(w)
			e.closeGate() // a probe forks nothing: it never reads its gate
		}
		if msg := e.failure(); msg != "" || err != nil {
			out[p] = fmt.Sprintf("NOT available: %s %v; calls of such tasks are refused", msg, err)
			continue
		}
		switch p {
		case profile.EnforceHost:
			out[p] = "applied by " + helper + ": scrubbed environment, descriptors 0-2 and the channel only, own process group; everything the command starts is ended with the call, and when its host dies"
		case profile.EnforceRestricted:
			out[p] = "applied by " + helper + ": host + the task's rlimits, no_new_privs, no capabilities, no TIOCSTI, a private TMPDIR; " +
				"the home's store, keys, profile and socket and your runtime directory hidden (a user and mount namespace of its own); " +
				"it cannot signal, stop or trace its helper or any process outside its call (Landlock ABI 6 scoping)"
		default:
			out[p] = "applied by " + helper + ": restricted + Landlock (release, system libraries, granted paths; TCP bind/connect denied) + no network: no socket of any family, Unix stream pairs only, no io_uring or keyrings (seccomp) + no capabilities + no controlling terminal" +
				"; a grant that reaches into the home or your runtime directory needs the namespaces restricted uses, and is refused without them"
		}
	}
	return out
}
