package daemon

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func pidfdOf(t *testing.T, pid int) *os.File {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	t.Cleanup(func() { f.Close() })
	return f
}

// waitExited waits, bounded, until pidfd shows its process exited.
func waitExited(t *testing.T, pidfd *os.File, what string) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(pidfd.Fd()), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 10_000); err != nil || n == 0 {
		t.Fatalf("%s did not exit within 10s (%v)", what, err)
	}
}

// The peer is named by a pidfd with SO_PEERPIDFD and, where the kernel
// lacks it, by pidfd_open checked against the accept: both name this
// process, alive; a child of it is verified, this process itself, pid 1
// and a wrong claimed pid are not.
func TestPeerAndChild(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	defer func() { peerPidfdOpt, pidfdGetInfo = unix.SO_PEERPIDFD, true }()
	for _, c := range []struct {
		opt     int
		getInfo bool
	}{
		{unix.SO_PEERPIDFD, true},
		{unix.SO_PEERPIDFD, false}, // the pids and parents from /proc, as before Linux 6.13
		{0x7fff, false},            // 0x7fff: no such option (ENOPROTOOPT), the fallback
	} {
		opt := c.opt
		peerPidfdOpt, pidfdGetInfo = c.opt, c.getInfo
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		uc, err := ln.AcceptUnix()
		if err != nil {
			t.Fatal(err)
		}
		p, err := takePeer(uc, os.Getpid())
		if err != nil || p.pid != os.Getpid() || !p.alive() {
			t.Fatalf("option %#x: peer %+v, %v; want this process, alive", opt, p, err)
		}
		// Credentials naming a process that is not the peer: one that has
		// exited and been reaped (pid+1 may be any older process of the
		// machine's, which the fallback cannot tell from the peer, as
		// daemon.md says).
		other := exec.Command("true")
		if err := other.Run(); err != nil {
			t.Fatal(err)
		}
		if _, err := takePeer(uc, other.Process.Pid); err == nil {
			t.Errorf("option %#x: a peer whose credentials name another pid was taken", opt)
		}

		child := exec.Command("sleep", "60")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		childfd := pidfdOf(t, child.Process.Pid)
		if pid, ppid, ok := pidfdInfo(childfd); c.getInfo && !ok {
			t.Logf("PIDFD_GET_INFO is not available here (Linux < 6.13): /proc is read both ways")
		} else if ok && (pid != child.Process.Pid || ppid != os.Getpid()) {
			t.Errorf("PIDFD_GET_INFO says pid %d, parent %d; want %d, %d", pid, ppid, child.Process.Pid, os.Getpid())
		}
		if pid, err := p.verifyChild(childfd, child.Process.Pid); err != nil || pid != child.Process.Pid {
			t.Errorf("own child: %d, %v", pid, err)
		}
		if _, err := p.verifyChild(childfd, 0); err == nil {
			t.Error("a claimed pid 0 for a child's pidfd was accepted")
		}
		if _, err := p.verifyChild(pidfdOf(t, 1), 1); err == nil {
			t.Error("pid 1 was accepted as a child")
		}
		if _, err := p.verifyChild(pidfdOf(t, os.Getpid()), os.Getpid()); err == nil {
			t.Error("the client itself was accepted as its child")
		}
		null, _ := os.Open(os.DevNull)
		if _, err := p.verifyChild(null, 0); err == nil {
			t.Error("/dev/null was accepted as a pidfd")
		}
		null.Close()
		// A child that exited is still the client's until it is reaped.
		child.Process.Signal(syscall.SIGTERM)
		waitExited(t, childfd, "sleep")
		if _, err := p.verifyChild(childfd, child.Process.Pid); err != nil {
			t.Errorf("an exited, unreaped child: %v", err)
		}
		if st, ok := exitStatus(childfd); !ok || st != 128+int(syscall.SIGTERM) {
			t.Errorf("a zombie's exit status: %d, %v; want 143", st, ok)
		}
		child.Wait()
		if _, err := p.verifyChild(childfd, child.Process.Pid); err == nil {
			t.Error("a reaped child was accepted")
		}
		if st, ok := exitStatus(childfd); ok && st != 143 {
			t.Errorf("a reaped child's exit status: %d; want 143 (or unknown before Linux 6.15)", st)
		}
		p.close()
		uc.Close()
		conn.Close()
	}
}

// A peer that exited is gone, whichever way it is named, and a pidfd
// shows it.
func TestPeerGone(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		uc, _ := ln.AcceptUnix()
		accepted <- uc
	}()
	// This process connects (the end-to-end dead connector is
	// tests/forged_client_test.go); what is checked here is that a pidfd
	// whose process was reaped reads as gone.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var uc *net.UnixConn
	select {
	case uc = <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("no accept within 10s")
	}
	defer uc.Close()
	p, err := takePeer(uc, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	// Stand a child's pidfd in for the peer's: it must read as gone once
	// the child exits.
	child := exec.Command("true")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	p.pidfd.Close()
	p.pidfd = pidfdOf(t, child.Process.Pid)
	child.Wait()
	if p.alive() {
		t.Error("a peer that exited and was reaped reads as alive")
	}
	p.pidfd = pidfdOf(t, os.Getpid()) // for close
}

// signalGroup reaches the group a process leads, and nothing when it
// leads none.
func TestSignalGroup(t *testing.T) {
	leader := exec.Command("sh", "-c", "sleep 60 & wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer leader.Wait()
	fd := pidfdOf(t, leader.Process.Pid)
	if err := signalGroup(fd, syscall.SIGKILL); err != nil {
		t.Fatalf("signalGroup of a group leader: %v", err)
	}
	waitExited(t, fd, "the group leader")

	member := exec.Command("sleep", "60") // in this test's group, which it does not lead
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { member.Process.Kill(); member.Wait() }()
	mfd := pidfdOf(t, member.Process.Pid)
	if err := signalGroup(mfd, syscall.SIGTERM); err == nil {
		t.Error("signalGroup of a process that leads no group reached a group")
	}
	if pidfdExited(mfd) {
		t.Error("signalGroup of a process that leads no group killed it")
	}
}
