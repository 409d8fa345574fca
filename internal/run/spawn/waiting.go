package spawn

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The spec a Waiting helper takes (rukh-sandbox.c, take_spec): a header
// of six little-endian uint32s — magic, payload length, descriptors,
// flags, argc, envc — then the directory, the argv and the environment,
// each string ended by a NUL, with the descriptors in one SCM_RIGHTS
// message. The limits are the helper's: a command beyond them is started
// as before (Start).
const (
	specMagic      = 0x72737031 // "rsp1"
	specSession    = 1          // setsid()
	specGroup      = 2          // setpgid(0, 0)
	specMax        = 256 << 10
	specMaxStrings = 4096
	specMaxFiles   = 16
	specHeader     = 24
)

// specAck bounds the wait for a Waiting helper's acknowledgement: a few
// system calls of its own, so only a helper that is stuck or gone takes
// it, and then the command is started as before.
const specAck = 10 * time.Second

// ErrNotWaiting is Waiting.Start's answer for a command the helper
// cannot take — another program, a stream that is not a file, a spec
// beyond its limits — or that it did not take: the caller discards it and
// starts the command with Start. Nothing of the command ran.
var ErrNotWaiting = errors.New("the helper started ahead cannot take this command")

// Waiting is a supervising helper (rukh-sandbox --wait) started before
// its command is known: the thin client starts it while the daemon
// resolves the command line, so that the fork and exec of the helper are
// off the call's path, and hands it the command with Start
// (docs/adr/0008-thin-client.md). Until then it holds nothing of the
// caller's but its stderr, and runs nothing; Discard ends it.
type Waiting struct {
	Path   string // the helper's program
	pid    int
	handle *os.File // the pidfd its clone gave, nil if none
	ctl    *os.File // the socket it reads its spec from
}

// StartWaiting starts the helper at path waiting for its command on a
// socket, with /dev/null as its stdin and stdout and this process's
// stderr, and as Start would start it: dying with the thread that
// started it, tracked as this process's child.
func StartWaiting(path string) (*Waiting, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ctl, theirs := os.NewFile(uintptr(pair[0]), "spec"), os.NewFile(uintptr(pair[1]), "spec")
	defer theirs.Close()
	ex := &exec.Cmd{Path: path, Args: []string{path, "--wait", "3"}, Env: []string{},
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	pid, handle, err := startFiles(ex, []*os.File{nil, nil, os.Stderr, theirs})
	if err != nil {
		ctl.Close()
		return nil, err
	}
	return &Waiting{Path: path, pid: pid, handle: handle, ctl: ctl}, nil
}

// Start hands the helper the command ex, to be run as job, as Start
// would have started it: the same argv, environment, directory,
// descriptors and process group or session, and the same Proc. It
// returns ErrNotWaiting, having run nothing, for a command the helper
// does not take; the caller then Discards it and calls Start.
func (w *Waiting) Start(ex *exec.Cmd, job Job) (*Proc, error) {
	if w.ctl == nil || ex.Path != w.Path || len(ex.Args) == 0 || ex.Args[0] != w.Path || !job.Supervised {
		return nil, ErrNotWaiting
	}
	files, ok := streamFiles(ex)
	if !ok || len(files) > specMaxFiles {
		return nil, ErrNotWaiting
	}
	fds := make([]int, len(files))
	for i, f := range files {
		switch {
		case f == nil && i < 3:
			null, err := OpenNull(i)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			fds[i] = int(null.Fd())
		case f == nil:
			return nil, ErrNotWaiting // a closed descriptor in the middle
		default:
			fds[i] = int(f.Fd())
		}
	}
	fg := job.Isolation == Group && Foreground(ex.Stdin, ex.Stdout, ex.Stderr)
	var flags uint32
	switch {
	case job.Isolation == Session:
		flags = specSession
	case !fg:
		flags = specGroup
	}
	env := ex.Environ()
	if len(ex.Args)+len(env) > specMaxStrings {
		return nil, ErrNotWaiting
	}
	payload := append([]byte(ex.Dir), 0)
	for _, s := range append(ex.Args[:len(ex.Args):len(ex.Args)], env...) {
		payload = append(append(payload, s...), 0)
	}
	if len(payload) > specMax {
		return nil, ErrNotWaiting
	}
	msg := make([]byte, specHeader, specHeader+len(payload))
	for i, v := range []uint32{specMagic, uint32(len(payload)), uint32(len(fds)), flags, uint32(len(ex.Args)), uint32(len(env))} {
		binary.LittleEndian.PutUint32(msg[4*i:], v)
	}
	msg = append(msg, payload...)
	if err := w.send(msg, fds); err != nil {
		return nil, ErrNotWaiting
	}
	ctl := w.ctl
	w.ctl = nil
	defer ctl.Close()
	if !ack(ctl) {
		return nil, ErrNotWaiting
	}
	p := &Proc{Pid: w.pid, Foreground: fg, job: job, handle: w.handle}
	w.pid, w.handle = 0, nil // the command's now: Discard leaves it
	if adopted.Load() || strays.Load() {
		if fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK); err == nil {
			p.pidfd = os.NewFile(uintptr(fd), "pidfd")
		}
	}
	return p, nil
}

// send writes the spec msg with the descriptors fds, all of it.
func (w *Waiting) send(msg []byte, fds []int) error {
	rc, err := w.ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(s uintptr) {
		n, err := unix.SendmsgN(int(s), msg, unix.UnixRights(fds...), nil, 0)
		for err == nil && n < len(msg) {
			msg = msg[n:]
			n, err = unix.Write(int(s), msg)
		}
		serr = err
	})
	if err != nil {
		return err
	}
	return serr
}

// ack waits, within specAck, for the helper's byte saying it took the
// spec: it is in its directory and its job, and runs the command.
func ack(ctl *os.File) bool {
	rc, err := ctl.SyscallConn()
	if err != nil {
		return false
	}
	var ok bool
	rc.Control(func(s uintptr) {
		pfd := []unix.PollFd{{Fd: int32(s), Events: unix.POLLIN}}
		deadline := time.Now().Add(specAck)
		for {
			ms := int(time.Until(deadline).Milliseconds())
			if ms <= 0 {
				return
			}
			n, err := unix.Poll(pfd, ms)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				return
			}
			break
		}
		var b [1]byte
		n, err := unix.Read(int(s), b[:])
		ok = err == nil && n == 1 && b[0] == 'k'
	})
	return ok
}

// Discard ends a helper that was not handed its command, or did not take
// it: it is killed and reaped. It may be called more than once.
func (w *Waiting) Discard() {
	if w.ctl != nil {
		w.ctl.Close()
		w.ctl = nil
	}
	if w.pid == 0 {
		return
	}
	p := &Proc{Pid: w.pid, handle: w.handle}
	w.pid, w.handle = 0, nil
	p.signal(syscall.SIGKILL)
	p.wait()
	Untrack(p.Pid)
	if p.handle != nil {
		p.handle.Close()
	}
}
