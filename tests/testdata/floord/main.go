// Command floord is the least a daemon-hosted call must do, for
// BenchmarkCLI's F-daemon row: what rukh through rukhd does for a call,
// with nothing of Rukh's own. It has the same processes and the same
// exchanges on a Unix socket: the client (a Go program, as the thin
// client is) asks; the daemon, which holds the bbolt file open, commits
// the begin record durably while it sends the client what to start (the
// channel's end and the helper's gate, by SCM_RIGHTS); the client starts
// the supervising helper (`HELPER host --gate 4 -- PROG PROG`) and says
// so; the daemon opens the gate once the record is durable and the
// client has answered; the client waits for the helper and says it
// exited; the daemon reads the command's result from the channel,
// commits the end record durably and answers; the client prints it. No
// resolve, no validation, no peer checks, no CBOR.
//
//	floord serve SOCKET STORE HELPER PROG FRAME [ENV]...   (prints "ready" once it listens)
//	floord call SOCKET
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// The client's one-byte messages.
const (
	askExec = 'x'
	spawned = 's'
	exited  = 'e'
)

func main() {
	var err error
	switch {
	case len(os.Args) >= 7 && os.Args[1] == "serve":
		err = serve(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6], os.Args[7:])
	case len(os.Args) == 3 && os.Args[1] == "call":
		err = call(os.Args[2])
	default:
		err = errors.New("usage: floord serve SOCKET STORE HELPER PROG FRAME [ENV]... | floord call SOCKET")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floord:", err)
		os.Exit(1)
	}
}

func serve(socket, store, helper, prog, frame string, env []string) error {
	db, err := bolt.Open(store, 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println("ready")
	argv := []string{helper, "host", "--gate", "4", "--", prog, prog}
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			if err := host(c, db, argv, env, frame); err != nil {
				fmt.Fprintln(os.Stderr, "floord: a call:", err)
			}
		}()
	}
}

func record(db *bolt.DB, state string) error {
	return db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("invocations"))
		if err != nil {
			return err
		}
		return b.Put([]byte("0123456789abcdef0123456789abcdef"), []byte(state))
	})
}

// host serves one call on c.
func host(c *net.UnixConn, db *bolt.DB, argv, env []string, frame string) error {
	if err := expect(c, askExec); err != nil {
		return err
	}
	began := make(chan error, 1)
	go func() { began <- record(db, "running") }()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	channel, child := os.NewFile(uintptr(fds[0]), "channel"), os.NewFile(uintptr(fds[1]), "channel")
	defer channel.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		child.Close()
		return err
	}
	defer gateW.Close()
	if _, err := channel.WriteString(frame); err != nil {
		return err
	}
	payload := []byte(strings.Join(argv, "\x00") + "\n" + strings.Join(env, "\x00"))
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	_, _, err = c.WriteMsgUnix(append(msg, payload...), syscall.UnixRights(int(child.Fd()), int(gateR.Fd())), nil)
	child.Close()
	gateR.Close()
	if err != nil {
		return err
	}
	result := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(channel).ReadString('\n')
		result <- line
	}()
	if err := expect(c, spawned); err != nil {
		return err
	}
	if err := <-began; err != nil {
		return err
	}
	gateW.WriteString("g")
	gateW.Close()
	if err := expect(c, exited); err != nil {
		return err
	}
	line := <-result
	if err := record(db, "succeeded"); err != nil {
		return err
	}
	_, err = c.Write([]byte(line))
	return err
}

func expect(c io.Reader, want byte) error {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return err
	}
	if b[0] != want {
		return fmt.Errorf("got %q, want %q", b[0], want)
	}
	return nil
}

// call is the client: one call, its result on stdout.
func call(socket string) error {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte{askExec}); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return err
	}
	files, err := rights(oob[:oobn])
	if err != nil {
		return err
	}
	for n < 4 || n < 4+int(binary.BigEndian.Uint32(buf)) {
		m, err := c.Read(buf[n:])
		if err != nil {
			return err
		}
		n += m
	}
	argvText, envText, _ := strings.Cut(string(buf[4:n]), "\n")
	argv := strings.Split(argvText, "\x00")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = strings.Split(envText, "\x00")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = files // the channel on fd 3, the gate on fd 4
	err = cmd.Start()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return err
	}
	if _, err := c.Write([]byte{spawned}); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return err
	}
	if _, err := c.Write([]byte{exited}); err != nil {
		return err
	}
	line, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(line)
	return err
}

func rights(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no descriptors came with the spawn (%v)", err)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		return nil, fmt.Errorf("%d descriptors came with the spawn, want 2 (%v)", len(fds), err)
	}
	return []*os.File{os.NewFile(uintptr(fds[0]), "channel"), os.NewFile(uintptr(fds[1]), "gate")}, nil
}
