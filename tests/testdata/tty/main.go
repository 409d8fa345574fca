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
	if len(os.Args) > 1 && os.Args[1] == "hang" {
		fmt.Println("hang?")
		time.Sleep(time.Minute)
		fmt.Println("not interrupted")
		return
	}
	_, err := unix.IoctlGetTermios(0, unix.TCGETS)
	isatty := err == nil
	fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	fmt.Printf("isatty=%v fg=%v devtty=%v size=%s\n", isatty, fg == syscall.Getpgrp(), err == nil, size())
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
