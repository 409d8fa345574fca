// Command probe is a test extension that tries what a confined command
// must not do, and reports what happened: "ok: …" or "error: …". It is
// built by tests/confine_test.go.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rukh-cli/rukh/extsdk"
	"github.com/rukh-cli/rukh/internal/buildid"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

func main() {
	// A grandchild of an attack (below): it runs before the SDK reads
	// a channel it does not have.
	if mode := os.Getenv("PROBE_GRANDCHILD"); mode != "" {
		grandchild(mode)
		return
	}
	extsdk.Run(func(ctx context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
		arg := inv.String("arg")
		var out string
		var err error
		switch inv.String("what") {
		case "read":
			var b []byte
			b, err = os.ReadFile(arg)
			out = strings.TrimSpace(string(b))
		case "readother":
			var b []byte
			b, err = os.ReadFile(inv.String("other"))
			out = strings.TrimSpace(string(b))
		case "write":
			err = os.WriteFile(arg, []byte("x"), 0o644)
		case "tcp":
			var c net.Conn
			c, err = net.DialTimeout("tcp", arg, 2*time.Second)
			if c != nil {
				c.Close()
			}
		case "udp":
			// A datagram to arg.
			var c net.PacketConn
			if c, err = net.ListenPacket("udp", "127.0.0.1:0"); err == nil {
				var addr *net.UDPAddr
				if addr, err = net.ResolveUDPAddr("udp", arg); err == nil {
					_, err = c.WriteTo([]byte("hi"), addr)
				}
				c.Close()
			}
		case "unix":
			// Connect to a Unix socket by its path (strict: no Unix
			// sockets at all, whatever the path).
			var c net.Conn
			c, err = net.DialTimeout("unix", arg, 2*time.Second)
			if c != nil {
				c.Close()
			}
		case "daemon":
			// Talk to rukhd as a client would: it must refuse a confined
			// command, which could otherwise have it run anything.
			var c net.Conn
			c, err = net.DialTimeout("unix", arg, 2*time.Second)
			if err == nil {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				var m *wire.Msg
				if err = wire.Write(c, &wire.Msg{Hello: &wire.Hello{Protocol: wire.ProtocolVersion, Build: buildid.ID(), Name: "rukh"}}); err == nil {
					m, err = wire.Read(c)
				}
				switch {
				case err != nil:
				case m.Error != nil:
					err = fmt.Errorf("%s: %s", m.Error.Code, m.Error.Message)
				default:
					out = "the daemon answered hello"
				}
			}
		case "drop":
			// A destructive stand-in: each run appends a line to arg, so a
			// test counts the runs, and reports what it "deleted".
			var f *os.File
			if f, err = os.OpenFile(arg, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				_, err = f.WriteString("dropped\n")
				f.Close()
			}
			if err == nil {
				err = inv.AddEffect("deleted", "table:"+arg)
			}
		case "tmpdir":
			err = os.WriteFile(os.Getenv("TMPDIR")+"/probe", []byte("x"), 0o600)
			out = os.Getenv("TMPDIR")
		case "fds":
			var ents []os.DirEntry
			ents, err = os.ReadDir("/proc/self/fd")
			var names []string
			for _, e := range ents {
				target, _ := os.Readlink("/proc/self/fd/" + e.Name())
				names = append(names, e.Name()+"="+target)
			}
			out = strings.Join(names, " ")
		case "nnp":
			var b []byte
			b, err = os.ReadFile("/proc/self/status")
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "NoNewPrivs:") {
					out = strings.Join(strings.Fields(l), " ")
				}
			}
		case "limit":
			var b []byte
			b, err = os.ReadFile("/proc/self/limits")
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, arg) {
					out = strings.Join(strings.Fields(l), " ")
				}
			}
		case "stat":
			var fi os.FileInfo
			if fi, err = os.Stat(arg); err == nil {
				out = fi.Mode().String()
			}
		case "signal":
			// Signal 0 to the helper: the permission check alone.
			err = syscall.Kill(os.Getppid(), 0)
		case "procroot":
			// The helper's view of the files, as another process's.
			_, err = os.ReadDir(fmt.Sprintf("/proc/%d/root/", os.Getppid()))
		case "ptrace":
			err = ptraceAttach(os.Getppid())
		case "run":
			// The owner's CLI, run by the command: `rukh ARGS…`.
			var b []byte
			b, err = exec.Command(arg, strings.Fields(inv.String("other"))...).CombinedOutput()
			out = strings.TrimSpace(string(b))
		case "selfapprove":
			// A grandchild in a session of its own kills the helper and
			// approves (selfApprove); its report goes to the file arg
			// names, since this command dies with its helper when the
			// kill works. other: "APPROVAL-ID RUKH".
			cmd := exec.Command("/proc/self/exe", strings.Fields(inv.String("other"))...)
			cmd.Env = append(os.Environ(), "PROBE_GRANDCHILD=selfapprove", "PROBE_HELPER="+strconv.Itoa(os.Getppid()), "PROBE_PIDFILE="+arg)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err = cmd.Run(); err == nil {
				var b []byte
				b, err = os.ReadFile(arg)
				out = string(b)
			}
		case "stoploop", "traceloop":
			// A grandchild in a session of its own holds the helper
			// (SIGSTOP, again and again; or ptrace), and this command
			// waits for its call to end. arg: where the grandchild
			// writes its pid once it holds the helper.
			cmd := exec.Command("/proc/self/exe")
			cmd.Env = append(os.Environ(), "PROBE_GRANDCHILD="+inv.String("what"), "PROBE_HELPER="+strconv.Itoa(os.Getppid()), "PROBE_PIDFILE="+arg)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err = cmd.Start(); err == nil {
				for { // past its deadline, past SIGTERM
					signal.Ignore(syscall.SIGTERM)
					time.Sleep(time.Hour)
				}
			}
		case "sleep":
			// arg: a file (a FIFO the test reads) written once the command
			// started, and arg.finished once it has slept; other: how long
			// it sleeps before it reports.
			var d time.Duration
			if d, err = time.ParseDuration(inv.String("other")); err == nil {
				if err = os.WriteFile(arg, []byte("started"), 0o600); err == nil {
					time.Sleep(d)
					err = os.WriteFile(arg+".finished", []byte("finished"), 0o600)
				}
			}
		default:
			err = fmt.Errorf("unknown probe %q", inv.String("what"))
		}
		if err != nil {
			return extsdk.Text("error: " + err.Error()), nil
		}
		return extsdk.Text("ok: " + out), nil
	})
}

// grandchild runs an attack on the helper (PROBE_HELPER) from a session of
// its own: stoploop stops it again and again, traceloop attaches to it
// with ptrace (a traced process acts on no signal but SIGKILL). It writes
// its pid to PROBE_PIDFILE once it holds the helper, then holds on.
func grandchild(mode string) {
	helper, _ := strconv.Atoi(os.Getenv("PROBE_HELPER"))
	if mode == "selfapprove" {
		report, err := selfApprove(helper, os.Args[1], os.Args[2])
		if err != nil {
			report = "error: " + err.Error()
		}
		os.WriteFile(os.Getenv("PROBE_PIDFILE"), []byte(report), 0o600)
		return
	}
	if mode == "traceloop" {
		runtime.LockOSThread() // ptrace binds the tracer's thread
		if err := ptraceAttach(helper); err != nil {
			os.Exit(3)
		}
	} else if err := syscall.Kill(helper, syscall.SIGSTOP); err != nil {
		os.Exit(3)
	}
	os.WriteFile(os.Getenv("PROBE_PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	for mode == "stoploop" { // a SIGCONT is undone within a few microseconds
		syscall.Kill(helper, syscall.SIGSTOP)
		time.Sleep(50 * time.Microsecond)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func ptraceAttach(pid int) error {
	return syscall.PtraceAttach(pid)
}

// selfApprove is the self-approval attack, from a process in a session of
// its own: kill the helper (so that this process is no longer below it,
// nor below its host, once reparented), then run `rukh approve ID` from a
// new session on a pseudo-terminal of its own, without the RUKH_*
// variables of the call but its home, and answer yes.
func selfApprove(helper int, id, rukh string) (string, error) {
	killErr := syscall.Kill(helper, syscall.SIGKILL)
	if killErr == nil {
		// Wait until this process is reparented away from the command.
		for end := time.Now().Add(5 * time.Second); os.Getppid() != 1 && time.Now().Before(end); time.Sleep(time.Millisecond) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", os.Getppid())); !strings.Contains(string(b), "probe") {
				break
			}
		}
	}
	master, slave, err := openPTY()
	if err != nil {
		return "", err
	}
	defer master.Close()
	cmd := exec.Command(rukh, "approve", id)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUKH_") || strings.HasPrefix(kv, "RUKH_HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		return "", err
	}
	slave.Close()
	master.WriteString("yes\n")
	shown := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(master, 64<<10))
		shown <- string(b)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		werr = <-done
	}
	master.Close()
	text := strings.Join(strings.Fields(<-shown), " ")
	return fmt.Sprintf("kill helper: %v; approve: %v: %s", killErr, werr, text), nil
}

// openPTY opens a pseudo-terminal pair (/dev/ptmx).
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}
