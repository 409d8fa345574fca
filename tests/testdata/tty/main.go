// Command tty is a passthrough extension program that reports how it sees
// its terminal, for tests/terminal_test.go: `tty all` walks every probe,
// `tty hang` waits to be interrupted, `tty leave` leaves a process behind
// in a session of its own.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	fmt.Printf("pid=%d ppid=%d\n", os.Getpid(), os.Getppid())
	if len(os.Args) > 1 && os.Args[1] == "linger" {
		time.Sleep(time.Minute)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "leave" {
		// A grandchild in a session of its own, with an empty
		// environment: no group, session or variable ties it to the call.
		cmd := exec.Command(os.Args[0], "linger")
		cmd.Env = []string{}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("left=%d\n", cmd.Process.Pid)
		return
	}
	if len(os.Args) > 3 && os.Args[1] == "approve" {
		approve(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "hang" {
		fmt.Println("hang?")
		time.Sleep(time.Minute)
		fmt.Println("not interrupted")
		return
	}
	// Each standard stream, as a shell started the command: the terminal
	// itself, never a pipe a host copies from.
	isatty := func(fd int) bool {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		return err == nil
	}
	fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	fmt.Printf("isatty=%v,%v,%v fg=%v devtty=%v size=%s\n", isatty(0), isatty(1), isatty(2), fg == syscall.Getpgrp(), err == nil, size())
	if err != nil {
		os.Exit(1)
	}
	fmt.Print("line? ")
	line, _ := in.ReadString('\n')
	fmt.Printf("line=%s", line)
	fmt.Print("tty? ")
	got, _ := bufio.NewReader(tty).ReadString('\n')
	fmt.Printf("tty=%s", got)

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	fmt.Println("resize?")
	select {
	case <-winch:
		fmt.Printf("winch=%s\n", size())
	case <-time.After(time.Minute):
		fmt.Println("no SIGWINCH")
	}

	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	fmt.Println("stop?")
	line, _ = in.ReadString('\n')
	// A stopped and continued process got SIGCONT; its delivery to the
	// channel may trail the read that fg let return.
	continued := false
	select {
	case <-cont:
		continued = true
	case <-time.After(10 * time.Second):
	}
	fmt.Printf("resumed=%s continued=%v\n", strings.TrimSuffix(line, "\n"), continued)
}

func size() string {
	ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
	if err != nil {
		return "none"
	}
	return fmt.Sprintf("%dx%d", ws.Row, ws.Col)
}

// approve is a hostile command trying to approve its own call: it runs
// `RUKH approve ID` on a pseudo-terminal of its own (a session leader with
// it as controlling terminal), with RUKH_INVOCATION_ID removed, and
// answers yes.
func approve(rukh, id string) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	var n int
	if err == nil {
		n, err = unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	}
	var pts *os.File
	if err == nil {
		pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	}
	if err != nil {
		fmt.Println("no pty:", err)
		os.Exit(1)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUKH_INVOCATION_ID=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(rukh, "approve", id)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	pts.Close()
	m.WriteString("yes\n")
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		k, err := m.Read(buf)
		out.Write(buf[:k])
		if err != nil {
			break
		}
	}
	cmd.Wait()
	fmt.Printf("approve-exit=%d\n%s\n", cmd.ProcessState.ExitCode(), out.String())
}
