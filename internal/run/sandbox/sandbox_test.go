package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/testpty"
	"golang.org/x/sys/unix"
)

// The test binary is also the confined command: with envProbe set, it
// runs probe (what it was asked to try) and exits.
const envProbe = "RUKH_SANDBOX_TEST_PROBE"

// With envSession set, the test binary is a terminal's session leader (a
// shell, say) that runs the helper's command line it is given in a
// process group of its own, as rukh's CLI transport does: see session.
const envSession = "RUKH_SANDBOX_TEST_SESSION"

var helper string

// reportFD is the helper's report pipe: not 3, which the Go runtime of the
// probe opens for itself (its cgroup's CPU quota).
const reportFD = 9

func TestMain(m *testing.M) {
	if os.Getenv(envSession) != "" {
		os.Exit(session(os.Args[1:]))
	}
	if what := os.Getenv(envProbe); what != "" {
		fmt.Print(probe(what, os.Args[1:]))
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helper = filepath.Join(dir, "rukh-sandbox")
	if err := sandbox.Build(helper); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// probe tries one thing and reports "ok: …" or "error: …".
func probe(what string, args []string) string {
	res := func(out string, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok: " + out
	}
	switch what {
	case "read":
		b, err := os.ReadFile(args[0])
		return res(strings.TrimSpace(string(b)), err)
	case "write":
		return res("", os.WriteFile(args[0], []byte("x"), 0o600))
	case "list":
		ents, err := os.ReadDir(args[0])
		return res(fmt.Sprint(len(ents) > 0), err)
	case "exec":
		out, err := exec.Command(args[0], args[1:]...).Output()
		return res(strings.TrimSpace(string(out)), err)
	case "tcp", "unix", "abstract":
		// Dial args[0]: a TCP address, a Unix socket's path, or an
		// abstract Unix socket's name.
		network, addr := what, args[0]
		if what == "abstract" {
			network, addr = "unix", "@"+addr
		}
		c, err := net.Dial(network, addr)
		if c != nil {
			c.Close()
		}
		return res("", err)
	case "listen":
		// Plain TCP, or MPTCP (Go's default for listening), which Landlock
		// ABI 4 does not cover: args[1] "mptcp".
		var lc net.ListenConfig
		lc.SetMultipathTCP(len(args) > 1 && args[1] == "mptcp")
		l, err := lc.Listen(context.Background(), "tcp", args[0])
		if l != nil {
			l.Close()
		}
		return res("", err)
	case "udp":
		// A datagram to args[0].
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return res("", err)
		}
		defer c.Close()
		addr, err := net.ResolveUDPAddr("udp", args[0])
		if err == nil {
			_, err = c.WriteTo([]byte("hi"), addr)
		}
		return res("", err)
	case "socketpair":
		// A fresh pair of the given type (stream, seqpacket, dgram,
		// stream-nonblock), of AF_UNIX or of the family args[1].
		typ := map[string]int{"stream": unix.SOCK_STREAM, "seqpacket": unix.SOCK_SEQPACKET, "dgram": unix.SOCK_DGRAM,
			"stream-nonblock": unix.SOCK_STREAM | unix.SOCK_NONBLOCK}[args[0]]
		family := unix.AF_UNIX
		if len(args) > 1 {
			fmt.Sscan(args[1], &family)
		}
		fds, err := unix.Socketpair(family, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return res("", err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if _, err := unix.Write(fds[0], []byte("hi")); err != nil {
			return res("", err)
		}
		b := make([]byte, 8)
		n, err := unix.Read(fds[1], b)
		return res(string(b[:max(n, 0)]), err)
	case "socket":
		// socket(FAMILY, TYPE, PROTOCOL), the protocol 0 if not given.
		var family, typ, proto int
		fmt.Sscan(args[0], &family)
		fmt.Sscan(args[1], &typ)
		if len(args) > 2 {
			fmt.Sscan(args[2], &proto)
		}
		fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
		if err == nil {
			unix.Close(fd)
		}
		return res("", err)
	case "pidfd_getfd":
		// Take descriptor args[1] of process args[0].
		var pid, fd int
		fmt.Sscan(args[0], &pid)
		fmt.Sscan(args[1], &fd)
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return res("", err)
		}
		defer unix.Close(pidfd)
		got, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err == nil {
			unix.Close(got)
		}
		return res("", err)
	case "keyrings":
		// The user's keyring, and a key added to the process's own.
		_, err1 := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
		_, err2 := unix.AddKey("user", "rukh-sandbox-test", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		return res(fmt.Sprint(err1, ", ", err2), nil)
	case "every socket":
		// socket(2) of every family with every type: those not refused
		// with EACCES.
		var got []string
		for _, fam := range []struct {
			name   string
			family int
		}{{"unspec", unix.AF_UNSPEC}, {"unix", unix.AF_UNIX}, {"inet", unix.AF_INET}, {"inet6", unix.AF_INET6},
			{"packet", unix.AF_PACKET}, {"netlink", unix.AF_NETLINK}, {"vsock", unix.AF_VSOCK}, {"alg", unix.AF_ALG},
			{"key", unix.AF_KEY}, {"bluetooth", unix.AF_BLUETOOTH}, {"can", unix.AF_CAN}, {"tipc", unix.AF_TIPC},
			{"rds", unix.AF_RDS}, {"xdp", unix.AF_XDP}, {"qipcrtr", unix.AF_QIPCRTR}, {"mctp", unix.AF_MCTP},
			{"beyond AF_MAX", 99}, {"upper bits", 1<<32 | unix.AF_INET}} {
			for _, typ := range []struct {
				name       string
				typ, proto int
			}{{"stream", unix.SOCK_STREAM, 0}, {"dgram", unix.SOCK_DGRAM, 0}, {"raw", unix.SOCK_RAW, 0},
				{"seqpacket", unix.SOCK_SEQPACKET, 0}, {"mptcp", unix.SOCK_STREAM, unix.IPPROTO_MPTCP}} {
				fd, err := unix.Socket(fam.family, typ.typ|unix.SOCK_CLOEXEC, typ.proto)
				if err == nil {
					unix.Close(fd)
					got = append(got, fam.name+" "+typ.name+" created")
				} else if err != unix.EACCES {
					got = append(got, fam.name+" "+typ.name+": "+err.Error())
				}
			}
		}
		return res(strings.Join(got, ", "), nil)
	case "namespaces":
		// The user and network namespaces, as /proc/self/ns names them.
		var ns []string
		for _, n := range []string{"user", "net"} {
			l, err := os.Readlink("/proc/self/ns/" + n)
			if err != nil {
				return res("", err)
			}
			ns = append(ns, l)
		}
		return res(strings.Join(ns, " "), nil)
	case "kernel":
		// Kernel surface strict closes (kernel_filter), each with the
		// arguments an exploit would give it, and the process creation
		// it leaves open.
		var clone3Args [88]byte // struct clone_args, zero: a plain fork
		var errs []string
		for _, c := range []struct {
			name string
			nr   uintptr
			args [3]uintptr
		}{{"unshare", unix.SYS_UNSHARE, [3]uintptr{unix.CLONE_NEWUSER, 0, 0}},
			{"setns", unix.SYS_SETNS, [3]uintptr{^uintptr(0), 0, 0}},
			{"clone3", unix.SYS_CLONE3, [3]uintptr{uintptr(unsafe.Pointer(&clone3Args)), unsafe.Sizeof(clone3Args), 0}},
			{"userfaultfd", unix.SYS_USERFAULTFD, [3]uintptr{1 /* UFFD_USER_MODE_ONLY */, 0, 0}},
			{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [3]uintptr{0, 0, ^uintptr(0)}},
			{"bpf", unix.SYS_BPF, [3]uintptr{0, 0, 0}},
			{"chroot", unix.SYS_CHROOT, [3]uintptr{uintptr(unsafe.Pointer(&[]byte("/\x00")[0])), 0, 0}}} {
			r, _, errno := unix.Syscall(c.nr, c.args[0], c.args[1], c.args[2])
			if errno == 0 && c.name == "clone3" && r == 0 {
				unix.Exit(0) // the child of a clone3 that was let through
			}
			errs = append(errs, c.name+" "+pick(errno == 0, "allowed", fmt.Sprint(errno)))
		}
		if err := exec.Command("/bin/true").Run(); err != nil {
			errs = append(errs, "fork "+err.Error())
		} else {
			errs = append(errs, "fork ok")
		}
		return res(strings.Join(errs, ", "), nil)
	case "io_uring":
		// io_uring_setup(1, &params); _enter and _register of no ring
		// (EBADF, where they are allowed).
		var params [120]byte // struct io_uring_params
		var errs []string
		for _, c := range []struct {
			name string
			nr   uintptr
			args [3]uintptr
		}{{"setup", unix.SYS_IO_URING_SETUP, [3]uintptr{1, uintptr(unsafe.Pointer(&params)), 0}},
			{"enter", unix.SYS_IO_URING_ENTER, [3]uintptr{^uintptr(0), 0, 0}},
			{"register", unix.SYS_IO_URING_REGISTER, [3]uintptr{^uintptr(0), 0, 0}}} {
			r, _, errno := unix.Syscall6(c.nr, c.args[0], c.args[1], c.args[2], 0, 0, 0)
			if errno == 0 && c.name == "setup" {
				unix.Close(int(r))
			}
			errs = append(errs, c.name+" "+pick(errno == 0, "ok", fmt.Sprint(errno)))
		}
		return res(strings.Join(errs, ", "), nil)
	case "x32":
		// getpid through the x32 ABI (x86-64 only).
		_, _, errno := unix.RawSyscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
		if errno != 0 {
			return res("", errno)
		}
		return res("", nil)
	case "signal":
		var pid int
		fmt.Sscan(args[0], &pid)
		return res("", syscall.Kill(pid, 0))
	case "interfaces":
		ifs, err := net.Interfaces()
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name+pick(i.Flags&net.FlagUp != 0, "(up)", ""))
		}
		return res(strings.Join(names, " "), err)
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, args[0]+":") {
				return res(strings.Join(strings.Fields(l), " "), err)
			}
		}
		return res("", err)
	case "limit":
		b, err := os.ReadFile("/proc/self/limits")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, args[0]) {
				return res(strings.Join(strings.Fields(l), " "), err)
			}
		}
		return res("", err)
	case "ids":
		b, err := os.ReadFile("/proc/self/uid_map")
		return res(fmt.Sprintf("uid %d gid %d map %s", os.Getuid(), os.Getgid(), strings.Join(strings.Fields(string(b)), " ")), err)
	case "pdeathsig":
		var sig int
		err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0)
		return res(fmt.Sprint(sig), err)
	case "report fd":
		_, err := unix.FcntlInt(reportFD, unix.F_GETFD, 0)
		target, _ := os.Readlink(fmt.Sprint("/proc/self/fd/", reportFD))
		return res("open "+target, err)
	case "env":
		return res(os.Getenv(args[0]), nil)
	case "tiocsti":
		// Type a line on the terminal, through stdin and through /dev/tty.
		var got []string
		for _, name := range []string{"stdin", "/dev/tty"} {
			f := os.Stdin
			if name != "stdin" {
				var err error
				if f, err = os.OpenFile(name, os.O_RDWR, 0); err != nil {
					got = append(got, name+": "+err.Error())
					continue
				}
				defer f.Close()
			}
			var err error
			for _, c := range []byte("id\n") {
				if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); errno != 0 {
					err = errno
					break
				}
			}
			got = append(got, name+": "+pick(err == nil, "typed", fmt.Sprint(err)))
		}
		return res(strings.Join(got, ", "), nil)
	}
	return "error: unknown probe " + what
}

// session runs the helper's command line args with the terminal (its
// stdin) as stdin, in a process group of its own, then prints what the
// terminal has for it to read, which nobody typed.
func session(args []string) int {
	cmd := exec.Command(args[0])
	cmd.Args = args
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envSession+"=") })
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return 1
	}
	unix.SetNonblock(0, true)
	b := make([]byte, 64)
	n, _ := unix.Read(0, b)
	fmt.Printf("\nthe terminal holds %q\n", b[:max(n, 0)])
	return 0
}

func pick(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}

// run starts the helper as the host does (own process group, parent-death
// signal, the report pipe after 0-2) applying spec to the test binary
// probing what with args. It returns the command's output, the helper's
// report and the exit status.
func run(t *testing.T, spec sandbox.Spec, what string, args ...string) (out, report string, status int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spec.ReportFD = reportFD
	self, _ := os.Executable()
	cmd := exec.Command(helper)
	cmd.Args = spec.Args(helper, append([]string{self, "probe"}, args...))
	cmd.Env = append(os.Environ(), envProbe+"="+what)
	cmd.ExtraFiles = make([]*os.File, reportFD-3+1)
	cmd.ExtraFiles[reportFD-3] = w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	rep, _ := io.ReadAll(r)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return stdout.String(), string(rep), status
}

// hasCap says whether this process has capability c in its effective set.
func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capget(&hdr, &data[0]) == nil && data[c/32].Effective&(1<<(c%32)) != 0
}

// namespaces is the probe "namespaces" of this process.
func namespaces(t *testing.T) string {
	t.Helper()
	var ns []string
	for _, n := range []string{"user", "net"} {
		l, err := os.Readlink("/proc/self/ns/" + n)
		if err != nil {
			t.Fatal(err)
		}
		ns = append(ns, l)
	}
	return strings.Join(ns, " ")
}

func strictSpec(t *testing.T, ro, rw []string) sandbox.Spec {
	self, _ := os.Executable()
	return sandbox.Spec{Profile: sandbox.Strict,
		ReadOnly:  append(append([]string{filepath.Dir(self)}, sandbox.SystemReadOnly...), ro...),
		ReadWrite: append(slices.Clone(sandbox.SystemReadWrite), rw...)}
}

func landlockABI() int {
	abi, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

// needStrict skips where the kernel cannot give strict at all (the host
// would refuse such calls): no Landlock ABI 4.
func needStrict(t *testing.T) {
	t.Helper()
	if abi := landlockABI(); abi < 4 {
		if os.Getenv("CI") != "" {
			t.Fatalf("Landlock ABI %d: strict is unavailable on this CI machine", abi)
		}
		t.Skipf("Landlock ABI %d < 4", abi)
	}
}

func TestArgs(t *testing.T) {
	s := sandbox.Spec{Profile: sandbox.Strict, ReportFD: 4,
		Rlimits:  []sandbox.Rlimit{{Resource: unix.RLIMIT_NOFILE, Max: 64}, {Resource: unix.RLIMIT_AS, Max: 1 << 40}},
		ReadOnly: []string{"/usr", "/a b"}, ReadWrite: []string{"/tmp/x\ny"},
		GrantRead: []string{"/srv/r"}, GrantWrite: []string{"/srv/w", "/srv/w2"}}
	got := s.Args("/h", []string{"/p", "p", "--", "-x"})
	want := []string{"/h", "strict", "--report", "4", "--rlimit", "7", "64", "--rlimit", "9", "1099511627776",
		"--ro", "/usr", "--ro", "/a b", "--rw", "/tmp/x\ny", "--grant-ro", "/srv/r", "--grant-rw", "/srv/w", "--grant-rw", "/srv/w2",
		"--", "/p", "p", "--", "-x"}
	if !slices.Equal(got, want) {
		t.Errorf("Args:\n got %q\nwant %q", got, want)
	}
	s.Probe = true
	if got := s.Args("/h", []string{"/p"}); got[len(got)-1] != "--probe" {
		t.Errorf("probe: %q", got)
	}
}

func TestRestricted(t *testing.T) {
	spec := sandbox.Spec{Profile: sandbox.Restricted, Rlimits: []sandbox.Rlimit{
		{Resource: unix.RLIMIT_NOFILE, Max: 64}, {Resource: unix.RLIMIT_CPU, Max: 30},
		{Resource: unix.RLIMIT_AS, Max: 8 << 30}, {Resource: unix.RLIMIT_NPROC, Max: 4096}}}
	for _, tc := range []struct{ what, arg, want string }{
		{"status", "NoNewPrivs", "ok: NoNewPrivs: 1"},
		{"limit", "Max open files", "ok: Max open files 64 64 files"},
		{"limit", "Max cpu time", "ok: Max cpu time 30 30 seconds"},
		{"limit", "Max address space", fmt.Sprintf("ok: Max address space %d %d bytes", 8<<30, 8<<30)},
		{"limit", "Max processes", "ok: Max processes 4096 4096 processes"},
		// The caller's namespace and ids.
		{"ids", "", fmt.Sprintf("ok: uid %d gid %d map 0 0 4294967295", os.Getuid(), os.Getgid())},
		// The report pipe is closed on exec.
		{"report fd", "", "error: bad file descriptor"},
		{"pdeathsig", "", "ok: 9"},
		// No capabilities, whoever the caller (this test may run as
		// root): a root caller's would let it type on any terminal, load
		// a module, reboot.
		{"status", "CapPrm", "ok: CapPrm: 0000000000000000"},
		{"status", "CapEff", "ok: CapEff: 0000000000000000"},
		{"status", "CapAmb", "ok: CapAmb: 0000000000000000"},
	} {
		out, rep, status := run(t, spec, tc.what, tc.arg)
		if status != 0 || rep != "" || !strings.HasPrefix(out, tc.want) {
			t.Errorf("%s %s: exit %d, report %q, out %q; want %q", tc.what, tc.arg, status, rep, out, tc.want)
		}
	}
}

func TestStrict(t *testing.T) {
	needStrict(t)
	dir := t.TempDir()
	for name, content := range map[string]string{"ro/a.txt": "ro a", "rw/b.txt": "rw b", "secret/c.txt": "secret", "rofile.txt": "ro file"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	os.Symlink(filepath.Join(dir, "secret/c.txt"), filepath.Join(dir, "ro/link.txt"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	abstract := fmt.Sprintf("rukh-sandbox-test-%d", os.Getpid())
	al, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	spec := strictSpec(t, []string{filepath.Join(dir, "ro"), filepath.Join(dir, "rofile.txt"), filepath.Join(dir, "missing")},
		[]string{filepath.Join(dir, "rw")})
	spec.Rlimits = []sandbox.Rlimit{{Resource: unix.RLIMIT_NOFILE, Max: 32}}
	denied := func(p string) string { return "error: open " + p + ": permission denied" }
	cases := []struct{ what, arg, want string }{
		{"read", filepath.Join(dir, "ro/a.txt"), "ok: ro a"},
		{"read", filepath.Join(dir, "rofile.txt"), "ok: ro file"},
		{"read", filepath.Join(dir, "rw/b.txt"), "ok: rw b"},
		{"list", filepath.Join(dir, "ro"), "ok: true"},
		{"read", filepath.Join(dir, "secret/c.txt"), denied(filepath.Join(dir, "secret/c.txt"))},
		{"read", filepath.Join(dir, "ro/link.txt"), denied(filepath.Join(dir, "ro/link.txt"))},
		{"read", "/etc/shadow", denied("/etc/shadow")},
		{"read", "/etc/hostname", denied("/etc/hostname")},
		{"write", filepath.Join(dir, "ro/new.txt"), denied(filepath.Join(dir, "ro/new.txt"))},
		{"write", filepath.Join(dir, "rofile.txt"), denied(filepath.Join(dir, "rofile.txt"))},
		{"write", filepath.Join(dir, "rw/new.txt"), "ok: "},
		{"write", "/dev/null", "ok: "},
		{"exec", "/bin/true", "ok: "},
		// No network: no socket can be created (the seccomp filter).
		{"tcp", ln.Addr().String(), "error: dial tcp " + ln.Addr().String() + ": socket: permission denied"},
		{"listen", "127.0.0.1:4242", "error: listen tcp 127.0.0.1:4242: socket: permission denied"},
		{"udp", ln.Addr().String(), "error: listen udp 127.0.0.1:0: socket: permission denied"},
		// The caller's own namespaces: strict enters none, so it needs no
		// unprivileged user namespaces.
		{"namespaces", "", "ok: " + namespaces(t)},
		// No capabilities, whoever the caller (this test may run as root):
		// the user namespace used to leave none in the caller's.
		{"status", "CapInh", "ok: CapInh: 0000000000000000"},
		{"status", "CapPrm", "ok: CapPrm: 0000000000000000"},
		{"status", "CapEff", "ok: CapEff: 0000000000000000"},
		{"status", "CapAmb", "ok: CapAmb: 0000000000000000"},
		{"keyrings", "", "ok: permission denied, permission denied"},
		{"status", "NoNewPrivs", "ok: NoNewPrivs: 1"},
		{"limit", "Max open files", "ok: Max open files 32 32 files"},
		{"pdeathsig", "", "ok: 9"},
		{"report fd", "", "error: bad file descriptor"},
		{"env", "PATH", "ok: " + os.Getenv("PATH")},
	}
	if c, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SETPCAP, 0, 0, 0); c == 1 && hasCap(unix.CAP_SETPCAP) {
		// A caller that can drop the bounding set has it dropped.
		cases = append(cases, struct{ what, arg, want string }{"status", "CapBnd", "ok: CapBnd: 0000000000000000"})
	}
	if landlockABI() >= 6 {
		// Scoped to its domain: no signals to processes outside it, no
		// abstract sockets of theirs.
		cases = append(cases,
			struct{ what, arg, want string }{"signal", fmt.Sprint(os.Getpid()), "error: operation not permitted"},
			struct{ what, arg, want string }{"abstract", abstract, "error: dial unix @" + abstract + ": "})
	}
	for _, tc := range cases {
		out, rep, status := run(t, spec, tc.what, tc.arg)
		if status != 0 || rep != "" || !strings.HasPrefix(out, tc.want) || (tc.what == "namespaces" && out != tc.want) {
			t.Errorf("%s %s: exit %d, report %q, out %q; want %q", tc.what, tc.arg, status, rep, out, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "rw/new.txt")); err != nil {
		t.Error("the granted write did not happen")
	}
	if _, err := os.Stat(filepath.Join(dir, "ro/new.txt")); err == nil {
		t.Error("a read-only grant was written")
	}
}

// A granted path is opened following no symbolic link: the host resolved
// it when it admitted the call, so a link on the way when the command
// starts was swapped in since (by whoever can write a directory on the
// way) and could lead anywhere. Such a call is refused and nothing runs;
// the link's target is never opened to the command. A plain grant still
// works, a missing one grants nothing, and the host's own paths
// (ReadOnly, ReadWrite: /lib may be a link) still follow links.
func TestStrictGrantSymlink(t *testing.T) {
	needStrict(t)
	dir := t.TempDir()
	for name, content := range map[string]string{"ro/a.txt": "ro a", "rw/b.txt": "rw b", "secret/c.txt": "secret", "secret/d/e.txt": "secret e"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	// Swapped in "after admission": the spec names paths through them.
	for link, target := range map[string]string{"ro/link": "secret", "ro/file-link": "secret/c.txt", "link": "secret", "dangling": "secret/none",
		"rw/link": "secret", "rel": "secret"} {
		if filepath.Base(link) == "rel" {
			target = "./" + target
		} else {
			target = filepath.Join(dir, target)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	const refused = "granted path leads through a symbolic link: "
	for _, tc := range []struct {
		name       string
		read, rw   []string
		what, arg  string
		wantReport string
	}{
		{"a directory link", []string{p("link")}, nil, "read", p("link/c.txt"), refused + p("link")},
		{"a link on the way", []string{p("link/d")}, nil, "read", p("link/d/e.txt"), refused + p("link/d")},
		{"a relative link on the way", []string{p("rel/d/e.txt")}, nil, "read", p("rel/d/e.txt"), refused + p("rel/d/e.txt")},
		{"a link deeper down", []string{p("ro/link/d")}, nil, "list", p("ro/link/d"), refused + p("ro/link/d")},
		{"a file link", []string{p("ro/file-link")}, nil, "read", p("ro/file-link"), refused + p("ro/file-link")},
		{"a dangling link", []string{p("dangling")}, nil, "read", p("secret/c.txt"), refused + p("dangling")},
		{"a missing path under a link", []string{p("link/none")}, nil, "read", p("secret/c.txt"), refused + p("link/none")},
		{"a write grant", nil, []string{p("rw/link")}, "write", p("rw/link/new.txt"), refused + p("rw/link")},
		// Refused whichever grant it is, with plain ones beside it.
		{"among plain grants", []string{p("ro")}, []string{p("rw"), p("link")}, "write", p("secret/new.txt"), refused + p("link")},
	} {
		spec := strictSpec(t, nil, nil)
		spec.GrantRead, spec.GrantWrite = tc.read, tc.rw
		out, rep, status := run(t, spec, tc.what, tc.arg)
		if status != 1 || rep != tc.wantReport || out != "" {
			t.Errorf("%s: exit %d, report %q, out %q; want exit 1, report %q and nothing run", tc.name, status, rep, out, tc.wantReport)
		}
	}
	if _, err := os.Stat(p("secret/new.txt")); err == nil {
		t.Error("a write through a refused link happened")
	}

	// Plain grants: read, list and write what they grant, and nothing else.
	spec := strictSpec(t, nil, nil)
	spec.GrantRead = []string{p("ro"), p("missing"), p("ro/a.txt/none")}
	spec.GrantWrite = []string{p("rw")}
	denied := func(p string) string { return "error: open " + p + ": permission denied" }
	for _, tc := range []struct{ what, arg, want string }{
		{"read", p("ro/a.txt"), "ok: ro a"},
		{"list", p("ro"), "ok: true"},
		{"read", p("rw/b.txt"), "ok: rw b"},
		{"write", p("rw/new.txt"), "ok: "},
		{"write", p("ro/new.txt"), denied(p("ro/new.txt"))},
		{"read", p("secret/c.txt"), denied(p("secret/c.txt"))},
		// A link inside a granted tree is followed by the command, and
		// Landlock checks where it leads: not granted.
		{"read", p("ro/link/c.txt"), denied(p("ro/link/c.txt"))},
		{"read", p("ro/file-link"), denied(p("ro/file-link"))},
		{"write", p("rw/link/new.txt"), denied(p("rw/link/new.txt"))},
		// A granted path that is not there grants nothing.
		{"read", p("missing"), "error: open " + p("missing") + ": no such file or directory"},
	} {
		out, rep, status := run(t, spec, tc.what, tc.arg)
		if status != 0 || rep != "" || !strings.HasPrefix(out, tc.want) {
			t.Errorf("plain grants: %s %s: exit %d, report %q, out %q; want %q", tc.what, tc.arg, status, rep, out, tc.want)
		}
	}
	if _, err := os.Stat(p("secret/new.txt")); err == nil {
		t.Error("a write through a link in a granted tree happened")
	}

	// The host's own paths still follow links.
	spec = strictSpec(t, []string{p("link")}, nil)
	if out, rep, status := run(t, spec, "read", p("secret/c.txt")); status != 0 || rep != "" || out != "ok: secret" {
		t.Errorf("a system path through a link: exit %d, report %q, out %q; want it read", status, rep, out)
	}
}

// A strict command can create no socket of any family: that is its "no
// network", and it covers Unix sockets too (Landlock, up to ABI 7 at
// least, does not control connecting to one by its path, so any on the
// file system would be reachable: the session bus, docker.sock, agents).
// It cannot use io_uring (which creates sockets itself); it still has
// Unix stream and seqpacket pairs, born connected (as its channel is),
// and everything else. Under restricted the same socket is reachable: the
// filter is strict's.
func TestStrictSockets(t *testing.T) {
	needStrict(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if out, rep, status := run(t, sandbox.Spec{Profile: sandbox.Restricted}, "unix", sock); status != 0 || rep != "" || out != "ok: " {
		t.Fatalf("restricted: exit %d, report %q, out %q; want the socket reachable", status, rep, out)
	}
	denied := "error: dial unix " + sock + ": socket: permission denied"
	for _, tc := range []struct {
		name string
		spec sandbox.Spec
		what string
		args []string
		want string
	}{
		{"socket not granted", strictSpec(t, nil, nil), "unix", []string{sock}, denied},
		// Not even in a directory granted read-write.
		{"socket granted", strictSpec(t, nil, []string{dir}), "unix", []string{sock}, denied},
		// A datagram pair could sendto(2) or connect(2) any datagram
		// socket by its path; stream and seqpacket pairs cannot. No pair
		// of another family.
		{"socketpair dgram", strictSpec(t, nil, nil), "socketpair", []string{"dgram"}, "error: permission denied"},
		{"socketpair stream", strictSpec(t, nil, nil), "socketpair", []string{"stream"}, "ok: hi"},
		{"socketpair stream nonblocking", strictSpec(t, nil, nil), "socketpair", []string{"stream-nonblock"}, "ok: hi"},
		{"socketpair seqpacket", strictSpec(t, nil, nil), "socketpair", []string{"seqpacket"}, "ok: hi"},
		{"socketpair inet", strictSpec(t, nil, nil), "socketpair", []string{"stream", fmt.Sprint(unix.AF_INET)}, "error: permission denied"},
		{"socketpair tipc", strictSpec(t, nil, nil), "socketpair", []string{"stream", fmt.Sprint(unix.AF_TIPC)}, "error: permission denied"},
		{"io_uring", strictSpec(t, nil, nil), "io_uring", nil,
			"ok: setup operation not permitted, enter operation not permitted, register operation not permitted"},
		{"netlink", strictSpec(t, nil, nil), "interfaces", nil, "error: route ip+net: netlinkrib: permission denied"},
		{"mptcp listen", strictSpec(t, nil, nil), "listen", []string{"127.0.0.1:4242", "mptcp"}, "error: listen tcp 127.0.0.1:4242: socket: permission denied"},
		{"exec", strictSpec(t, nil, nil), "exec", []string{"/bin/sh", "-c", "echo fine"}, "ok: fine"},
		{"kernel surface", strictSpec(t, nil, nil), "kernel", nil,
			"ok: unshare operation not permitted, setns operation not permitted, clone3 function not implemented, userfaultfd operation not permitted, " +
				"perf_event_open operation not permitted, bpf operation not permitted, chroot operation not permitted, fork ok"},
	} {
		out, rep, status := run(t, tc.spec, tc.what, tc.args...)
		if status != 0 || rep != "" || out != tc.want {
			t.Errorf("%s: exit %d, report %q, out %q; want %q", tc.name, status, rep, out, tc.want)
		}
	}
	// Every family, every type: EACCES from the filter, before the kernel
	// looks at either (no EAFNOSUPPORT, no EPERM for want of CAP_NET_RAW).
	// Under restricted some of them are created: the probe tells.
	if out, rep, status := run(t, sandbox.Spec{Profile: sandbox.Restricted}, "every socket"); status != 0 || rep != "" || !strings.Contains(out, "inet stream created") {
		t.Errorf("restricted: every socket: exit %d, report %q, out %q; want some created", status, rep, out)
	}
	if out, rep, status := run(t, strictSpec(t, nil, nil), "every socket"); status != 0 || rep != "" || out != "ok: " {
		t.Errorf("every socket: exit %d, report %q, out %q; want every one refused with permission denied", status, rep, out)
	}
	// Nor can it take a socket from another process: pidfd_getfd needs
	// ptrace access, which Landlock refuses outside the command's domain.
	// (Under restricted a caller with the rights takes it.)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	tf, err := tl.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	pid, fd := fmt.Sprint(os.Getpid()), fmt.Sprint(tf.Fd())
	if out, rep, status := run(t, sandbox.Spec{Profile: sandbox.Restricted}, "pidfd_getfd", pid, fd); status != 0 || rep != "" {
		t.Errorf("restricted pidfd_getfd: exit %d, report %q, out %q", status, rep, out)
	} else {
		t.Logf("restricted pidfd_getfd: %s", out)
	}
	if out, rep, status := run(t, strictSpec(t, nil, nil), "pidfd_getfd", pid, fd); status != 0 || rep != "" || out != "error: operation not permitted" {
		t.Errorf("pidfd_getfd: exit %d, report %q, out %q; want operation not permitted", status, rep, out)
	}
	if runtime.GOARCH == "amd64" {
		// x32 calls fail as on a kernel without x32, and nothing dies.
		out, rep, status := run(t, strictSpec(t, nil, nil), "x32")
		if status != 0 || rep != "" || out != "error: function not implemented" {
			t.Errorf("x32: exit %d, report %q, out %q", status, rep, out)
		}
	}
}

// A strict command that makes an i386 system call (int 0x80, where
// socketcall would reach socket(2) by another number) is killed: the
// filter knows the x86-64 calls only.
func TestStrictKillsOtherArchitectures(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("an i386 call from x86-64 only")
	}
	needStrict(t)
	dir := t.TempDir()
	src, prog := filepath.Join(dir, "i386.c"), filepath.Join(dir, "i386")
	// getpid by int 0x80 (i386's 20), then exit_group(0) by syscall.
	os.WriteFile(src, []byte(`void _start(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	__asm__ volatile("syscall" : : "a"(231L), "D"(0L) : "rcx", "r11", "memory");
	for (;;)
		;
}
`), 0o644)
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if out, err := exec.Command(cc, "-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-pie", "-no-pie", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	exitOf := func(spec sandbox.Spec) (*os.ProcessState, string) {
		cmd := exec.Command(helper)
		cmd.Args = spec.Args(helper, []string{prog, "i386"})
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState, string(out)
	}
	if ps, out := exitOf(sandbox.Spec{Profile: sandbox.Restricted}); !ps.Success() {
		t.Skipf("no i386 system calls here (%v %q)", ps, out)
	}
	ps, out := exitOf(strictSpec(t, []string{dir}, nil))
	if ws, ok := ps.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Errorf("strict: %v %q; want killed by SIGSYS", ps, out)
	}
}

// Every uint64 is a limit the spec can carry: the largest is
// RLIM_INFINITY, one more is a bad spec.
func TestRlimitRange(t *testing.T) {
	spec := sandbox.Spec{Profile: sandbox.Restricted, Rlimits: []sandbox.Rlimit{{Resource: unix.RLIMIT_CPU, Max: 1<<64 - 1}}}
	out, rep, status := run(t, spec, "limit", "Max cpu time")
	if status != 0 || rep != "" || out != "ok: Max cpu time unlimited unlimited seconds" {
		t.Errorf("RLIM_INFINITY: exit %d, report %q, out %q", status, rep, out)
	}
	for _, v := range []string{"18446744073709551616", "18446744073709551620", "99999999999999999999", "-1", "", "1x"} {
		out, err := exec.Command(helper, "restricted", "--rlimit", "0", v, "--probe").CombinedOutput()
		if want := "rukh-sandbox: bad spec: bad --rlimit value " + v; err == nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%q: %v %q; want %q", v, err, out, want)
		}
	}
}

// A strict command started on its owner's terminal (rukh's CLI transport:
// the command is in the terminal's session, in a process group of its
// own) cannot type on that terminal for the owner's shell to run once it
// is done: the kernel allows TIOCSTI on one's controlling terminal, so
// the helper gives it up, and the command has none (no /dev/tty either).
func TestStrictCannotTypeOnTerminal(t *testing.T) {
	needStrict(t)
	out, stderr, err := typeOnTerminal(t, strictSpec(t, nil, nil))
	if err != nil || !strings.HasPrefix(out, "ok: stdin: ") || strings.Contains(out, "typed") ||
		!strings.HasSuffix(out, "the terminal holds \"\"\n") {
		t.Errorf("%v: %q, stderr %q; want nothing typed on the terminal", err, out, stderr)
	}
}

// typeOnTerminal runs the tiocsti probe under spec in a session whose
// controlling terminal is a new pseudo-terminal, its stdin, and returns
// what it said.
func typeOnTerminal(t *testing.T, spec sandbox.Spec) (out, stderr string, err error) {
	t.Helper()
	master, slave := testpty.Open(t)
	defer master.Close()
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Args = append([]string{self}, spec.Args(helper, []string{self, "probe"})...)
	cmd.Env = append(os.Environ(), envSession+"=1", envProbe+"=tiocsti")
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	var errb strings.Builder
	cmd.Stderr = &errb
	o, err := cmd.Output()
	slave.Close()
	return string(o), errb.String(), err
}

// A restricted command keeps its caller's terminal as its controlling
// terminal, but cannot type on it (TIOCSTI, through stdin or /dev/tty):
// without the filter, the kernel lets it, and a line typed there runs in
// the owner's shell once the command is done (or answers `rukh approve`).
func TestRestrictedCannotTypeOnTerminal(t *testing.T) {
	out, stderr, err := typeOnTerminal(t, sandbox.Spec{Profile: sandbox.Restricted})
	want := "ok: stdin: operation not permitted, /dev/tty: operation not permitted"
	if err != nil || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "the terminal holds \"\"\n") {
		t.Errorf("%v: %q, stderr %q; want %q and nothing typed on the terminal", err, out, stderr, want)
	}
}

// What cannot be applied or run is reported on the pipe, and nothing runs.
func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec sandbox.Spec
		args []string
		want string
	}{
		{"rlimit refused", sandbox.Spec{Profile: sandbox.Restricted, Rlimits: []sandbox.Rlimit{{Resource: 40, Max: 1}}}, nil,
			"enforcement unavailable: setrlimit 40: invalid argument"},
		{"unknown profile", sandbox.Spec{Profile: "hots"}, nil, "bad spec: unknown profile hots"},
		{"rlimits under host", sandbox.Spec{Profile: sandbox.Host, Rlimits: []sandbox.Rlimit{{Resource: 7, Max: 1}}}, nil, "bad spec: rlimits given to the host profile"},
		{"paths outside strict", sandbox.Spec{Profile: sandbox.Restricted, ReadOnly: []string{"/usr"}}, nil, "bad spec: paths given to the profile /usr"},
		{"grants outside strict", sandbox.Spec{Profile: sandbox.Restricted, GrantWrite: []string{"/srv"}}, nil, "bad spec: paths given to the profile /srv"},
		{"bad rlimit", sandbox.Spec{Profile: sandbox.Restricted, Rlimits: []sandbox.Rlimit{{Resource: 99, Max: 1}}}, nil, "bad spec: bad --rlimit resource 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rep, status := run(t, tc.spec, "env", tc.args...)
			if status != 1 || !strings.HasPrefix(rep, tc.want) {
				t.Errorf("exit %d, report %q; want 1 and %q", status, rep, tc.want)
			}
		})
	}
	// A program that is not there: the helper reports the exec.
	cmd := exec.Command(helper, "restricted", "--", "/nonexistent", "x")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || string(out) != "rukh-sandbox: exec /nonexistent: no such file or directory\n" {
		t.Errorf("exec: %v %q", err, out)
	}
	// Started by hand, without a profile.
	out, _ = exec.Command(helper).CombinedOutput()
	if !strings.Contains(string(out), "started by rukh, not by hand") {
		t.Errorf("by hand: %q", out)
	}
	for _, args := range [][]string{{"strict", "--rw"}, {"strict", "--grant-ro"}, {"strict", "--grant-rw", "/x"}, {"strict", "--grant-r", "/x", "--probe"}, {"strict", "--", "/bin/true"}, {"restricted", "--report", "1", "--probe"}, {"restricted", "--bogus", "--probe"}, {"restricted", "--probe", "x"}} {
		out, _ := exec.Command(helper, args...).CombinedOutput()
		if !strings.HasPrefix(string(out), "rukh-sandbox: bad spec: ") {
			t.Errorf("%q: %q", args, out)
		}
	}
}

func TestProbe(t *testing.T) {
	for _, spec := range []sandbox.Spec{{Profile: sandbox.Restricted, Probe: true}, strictSpec(t, nil, nil)} {
		if spec.Profile == sandbox.Strict {
			needStrict(t)
			spec.Probe = true
		}
		_, rep, status := run(t, spec, "env")
		if status != 0 || rep != "" {
			t.Errorf("%s probe: exit %d, report %q", spec.Profile, status, rep)
		}
	}
}
