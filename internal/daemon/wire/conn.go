package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// Descriptors a frame may carry: Exec carries the client's stdin, stdout
// and stderr (ExecFiles); Spawn the command's three streams and its
// descriptors from 3 on (Spawn.Files, at most MaxFiles); Spawned the
// command's pidfd.
const (
	ExecFiles = 3
	MaxFiles  = 8
)

// Socket is a connected Unix stream socket: what the daemon's listener
// accepts (a *net.UnixConn), or the client's own (an *os.File, Dial).
// Package wire does not import net, and neither does the thin client: a
// program that links net starts slower, and the thin client's start is
// part of every command.
type Socket interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
	SyscallConn() (syscall.RawConn, error)
}

// Dial connects to the Unix socket at path without package net. The
// socket is non-blocking and close-on-exec, so its deadlines hold (the
// runtime's poller serves it) and no command inherits it.
func Dial(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	// A Unix socket connects at once, or fails (ECONNREFUSED when nothing
	// listens, EAGAIN when the listener's backlog is full).
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "connect", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Conn is a Unix-socket connection that reads and writes frames, some
// carrying open files (SCM_RIGHTS). Writes are serialized; reads are not,
// and belong to one goroutine.
type Conn struct {
	c  Socket
	mu sync.Mutex // serializes writes
	// WriteTimeout, when set, bounds each Send: a peer that stops reading
	// fails the write instead of blocking the sender for ever.
	WriteTimeout time.Duration
	// Budget, when set, bounds the frame bytes that all the connections
	// sharing it hold at once while they read them (a daemon's).
	Budget *Budget
}

// Budget is the memory a set of connections may hold in frames being
// read. A frame's buffer grows as its bytes arrive, a 64 KiB chunk and
// then doubling, and each growth is counted; never what was announced: a
// peer that announces 4 MiB and sends nothing holds one chunk.
//
// The last reserve bytes are for small frames (at most SmallFrame): a
// hello, a status request, a cancel. Frames held half-sent, however many,
// can then never keep those out.
type Budget struct {
	mu      sync.Mutex
	used    int64
	max     int64
	reserve int64
}

// SmallFrame is the largest frame that may use a Budget's reserve; every
// management frame and the usual request is smaller.
const SmallFrame = 64 << 10

// NewBudget returns a budget of max bytes, of which the last reserve are
// for small frames only.
func NewBudget(max, reserve int64) *Budget { return &Budget{max: max, reserve: reserve} }

// take counts n more bytes of a frame of size bytes, if there is room.
func (b *Budget) take(n int64, size int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.max
	if size > SmallFrame {
		limit -= b.reserve
	}
	if b.used+n > limit {
		return false
	}
	b.used += n
	return true
}

func (b *Budget) give(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// ErrBudget is the error of a frame that the connections' shared Budget
// has no room for; the connection should be closed.
var ErrBudget = errors.New("the daemon holds as many frame bytes as it may; retry")

// NewConn wraps c.
func NewConn(c Socket) *Conn { return &Conn{c: c} }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// SetReadDeadline bounds the reads of the connection (zero: no bound).
func (c *Conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// Send writes m's frame, with files attached to its first byte.
func (c *Conn) Send(m *Msg, files ...*os.File) error {
	buf, err := Encode(nil, m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.WriteTimeout > 0 {
		c.c.SetWriteDeadline(time.Now().Add(c.WriteTimeout))
		defer c.c.SetWriteDeadline(time.Time{})
	}
	if len(files) == 0 {
		_, err = c.c.Write(buf)
		return err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	n, err := c.sendmsg(buf, syscall.UnixRights(fds...))
	if err == nil && n < len(buf) {
		_, err = c.c.Write(buf[n:])
	}
	return err
}

// Receive reads one frame and the files that came with it. Files beyond
// MaxFiles, or sent with a frame that cannot carry them, are closed and
// make the frame an error.
func (c *Conn) Receive() (*Msg, []*os.File, error) {
	var head [4]byte
	oob := make([]byte, syscall.CmsgSpace(4*MaxFiles+4))
	var files []*os.File
	got := 0
	for got < len(head) {
		n, oobn, err := c.recvmsg(head[got:], oob)
		if oobn > 0 {
			fs, ferr := parseRights(oob[:oobn])
			files = append(files, fs...)
			if ferr != nil {
				closeFiles(files)
				return nil, nil, ferr
			}
		}
		got += n
		if err != nil {
			closeFiles(files)
			if got > 0 && errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: truncated: %v", ErrFrame, io.ErrUnexpectedEOF)
			}
			return nil, nil, err
		}
		if n == 0 {
			closeFiles(files)
			return nil, nil, io.EOF
		}
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > MaxFrame {
		closeFiles(files)
		return nil, nil, fmt.Errorf("%w: %d bytes announced, more than %d", ErrFrame, n, MaxFrame)
	}
	body, err := c.readBody(int(n))
	if err != nil {
		closeFiles(files)
		return nil, nil, err
	}
	m, err := Decode(body)
	if err != nil {
		closeFiles(files)
		return nil, nil, err
	}
	if want := m.files(); len(files) != want {
		closeFiles(files)
		what := "this frame"
		if m.Exec != nil {
			what = "exec (its stdin, stdout and stderr)"
		}
		return nil, nil, fmt.Errorf("%w: %d descriptors with %s; it takes %d", ErrFrame, len(files), what, want)
	}
	return m, files, nil
}

// readBody reads a frame's n bytes, growing its buffer as they arrive
// (64 KiB, then doubling) and counting each growth against c.Budget while
// it reads.
func (c *Conn) readBody(n int) ([]byte, error) {
	const chunk = 64 << 10
	body := []byte{}
	held := int64(0)
	defer func() { c.Budget.give(held) }()
	for len(body) < n {
		if len(body) == cap(body) {
			grow := min(n-len(body), max(chunk, len(body)))
			if !c.Budget.take(int64(grow), n) {
				return nil, fmt.Errorf("%w: %w", ErrFrame, ErrBudget)
			}
			held += int64(grow)
			bigger := make([]byte, len(body), len(body)+grow)
			copy(bigger, body)
			body = bigger
		}
		m, err := c.c.Read(body[len(body):cap(body)])
		body = body[:len(body)+m]
		if err != nil && len(body) < n {
			return nil, fmt.Errorf("%w: truncated: %v", ErrFrame, err)
		}
	}
	return body, nil
}

// sendmsg writes p with the control message oob (sendmsg(2)), waiting
// for the socket to take it as a Write would, deadline included.
func (c *Conn) sendmsg(p, oob []byte) (int, error) {
	raw, err := c.c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var serr error
	err = raw.Write(func(fd uintptr) bool {
		for {
			n, serr = syscall.SendmsgN(int(fd), p, oob, nil, 0)
			if serr != syscall.EINTR {
				return serr != syscall.EAGAIN
			}
		}
	})
	if err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, os.NewSyscallError("sendmsg", serr)
	}
	return n, nil
}

// recvmsg reads into p and the control message buffer oob (recvmsg(2);
// passed descriptors are close-on-exec), waiting for data as a Read
// would, deadline included. n is 0 at the end of the stream.
func (c *Conn) recvmsg(p, oob []byte) (n, oobn int, err error) {
	raw, err := c.c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, oob, syscall.MSG_CMSG_CLOEXEC)
			if rerr != syscall.EINTR {
				return rerr != syscall.EAGAIN
			}
		}
	})
	if err != nil {
		return 0, 0, err
	}
	if rerr != nil {
		return 0, 0, os.NewSyscallError("recvmsg", rerr)
	}
	return n, oobn, nil
}

func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: control message: %v", ErrFrame, err)
	}
	var files []*os.File
	for _, cm := range msgs {
		fds, err := syscall.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "passed"))
		}
	}
	if len(files) > MaxFiles {
		return files, fmt.Errorf("%w: %d descriptors, more than %d", ErrFrame, len(files), MaxFiles)
	}
	return files, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// PeerCred reads the uid and pid of the process at the other end of c
// from the kernel (SO_PEERCRED): both sides check who they talk to.
func PeerCred(c Socket) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, 0, err
	}
	if cerr != nil {
		return -1, 0, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}
