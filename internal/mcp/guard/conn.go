package guard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readChunk is the size of one read from the input.
const readChunk = 64 << 10

// codeRejected is the SDK's "rejected by transport" code (jsonrpc2.ErrRejected,
// not exported): a Write error that is this code fails one call and leaves
// the connection up.
const codeRejected = -32005

var errRejected = &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}

// frame is one incoming line.
type frame struct {
	data []byte // the line without its newline, at most MaxMessage+1 bytes of it
	size int    // the full length of the line in bytes
}

// conn is the guarded connection. readLoop frames the input and hands lines
// to Read, which checks them; Write queues encoded messages for writeLoop.
type conn struct {
	r   io.Reader
	w   io.Writer
	lim Limits
	log *slog.Logger

	frames  chan frame // readLoop → Read; closed after readErr is set
	readErr error      // what ended the input: io.EOF or a wrapped read error

	mu       sync.Mutex
	queue    [][]byte // encoded messages with their newline; queue[0] is being written
	queued   int      // bytes in queue
	closing  bool     // Close has begun: no new messages
	wake     chan struct{}
	progress chan struct{}

	stop      chan struct{} // closed once the transport is closed, for whatever reason
	stopOnce  sync.Once
	reason    error // why, or nil for Close; set before stop is closed
	closeOnce sync.Once

	refused atomic.Int64 // refused lines, for the log

	readDone, writeDone chan struct{} // closed when the loops return (tests wait on them)
}

func newConn(r io.Reader, w io.Writer, lim Limits, log *slog.Logger) *conn {
	return &conn{
		r: r, w: w, lim: lim, log: log,
		frames:    make(chan frame),
		wake:      make(chan struct{}, 1),
		progress:  make(chan struct{}, 1),
		stop:      make(chan struct{}),
		readDone:  make(chan struct{}),
		writeDone: make(chan struct{}),
	}
}

// SessionID implements mcp.Connection; stdio has no session id.
func (c *conn) SessionID() string { return "" }

// Read implements mcp.Connection. It returns the next message that passed
// every check; refused lines are answered and skipped here.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.stop:
			return nil, c.stopErr()
		case f, ok := <-c.frames:
			if !ok {
				if c.stopped() {
					// The read failed because the transport closed r.
					return nil, c.stopErr()
				}
				return nil, c.readErr
			}
			if msg := c.check(f); msg != nil {
				return msg, nil
			}
		}
	}
}

// Write implements mcp.Connection. It encodes msg, replaces an oversize
// response by an error response, and queues the bytes without waiting for
// them to be written.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp guard: encoding a message: %w", err)
	}
	if len(data) > c.lim.MaxResponse {
		if data, err = c.oversize(msg, len(data)); err != nil {
			return err
		}
	}
	return c.enqueue(append(data, '\n'))
}

// oversize returns what to send instead of msg, whose encoding is n bytes.
func (c *conn) oversize(msg jsonrpc.Message, n int) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || !resp.ID.IsValid() {
		method := ""
		if req, ok := msg.(*jsonrpc.Request); ok {
			method = req.Method
		}
		c.log.Error("mcp guard: an outgoing message is over the size limit; not sent",
			"method", method, "bytes", n, "limit", c.lim.MaxResponse)
		return nil, fmt.Errorf("mcp guard: outgoing message is %d bytes; the limit is %d: %w", n, c.lim.MaxResponse, errRejected)
	}
	text := fmt.Sprintf("response too large: %d bytes; the limit is %d", n, c.lim.MaxResponse)
	c.log.Error("mcp guard: a response is over the size limit; sending an error instead",
		"id", resp.ID.Raw(), "bytes", n, "limit", c.lim.MaxResponse)
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: resp.ID,
		Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: text}})
}

// enqueue appends data to the outgoing queue, or closes the transport when
// the queue is full.
func (c *conn) enqueue(data []byte) error {
	c.mu.Lock()
	if c.closing || c.stopped() {
		c.mu.Unlock()
		return fmt.Errorf("mcp guard: %w", mcp.ErrConnectionClosed)
	}
	if len(c.queue)+1 > c.lim.QueueMessages || c.queued+len(data) > c.lim.QueueBytes {
		n, b := len(c.queue), c.queued
		c.mu.Unlock()
		c.log.Warn("mcp guard: the outgoing queue is full",
			"messages", n, "bytes", b, "next", len(data),
			"limitMessages", c.lim.QueueMessages, "limitBytes", c.lim.QueueBytes)
		c.shutdown(ErrQueueFull)
		return ErrQueueFull
	}
	c.queue = append(c.queue, data)
	c.queued += len(data)
	c.mu.Unlock()
	signal(c.wake)
	return nil
}

// Close implements mcp.Connection. It waits at most Limits.Stall for the
// queued messages to be written, then closes the transport.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.drain()
		c.shutdown(nil)
	})
	return nil
}

func (c *conn) drain() {
	t := time.NewTimer(c.lim.Stall)
	defer t.Stop()
	for {
		c.mu.Lock()
		n := len(c.queue)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.progress:
		case <-c.stop:
			return
		case <-t.C:
			c.log.Warn("mcp guard: closing with messages not yet written", "messages", n)
			return
		}
	}
}

// shutdown closes the transport once; reason is nil for Close.
func (c *conn) shutdown(reason error) {
	c.stopOnce.Do(func() {
		c.reason = reason
		close(c.stop)
		if reason != nil {
			c.log.Warn("mcp guard: closing the transport", "reason", reason.Error())
		}
		if n := c.refused.Load(); n > maxLoggedRefusals {
			c.log.Warn("mcp guard: refused messages on this connection", "total", n)
		}
		if rc, ok := c.r.(io.Closer); ok {
			_ = rc.Close()
		}
		if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
			_ = d.SetWriteDeadline(time.Now())
		}
	})
}

func (c *conn) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// stopErr is what Read returns once the transport is closed.
func (c *conn) stopErr() error {
	if c.reason != nil {
		return c.reason
	}
	return io.EOF
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// readLoop frames the input into lines. It holds at most MaxMessage+1 bytes
// of a line and times each line from its first byte.
func (c *conn) readLoop() {
	defer close(c.readDone)
	var (
		buf    = make([]byte, readChunk)
		line   []byte
		size   int
		inLine bool
		stall  *time.Timer
	)
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	for {
		n, err := c.r.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			if !inLine {
				inLine = true
				if stall == nil {
					stall = time.AfterFunc(c.lim.Stall, func() { c.shutdown(ErrReadStalled) })
				} else {
					stall.Reset(c.lim.Stall)
				}
			}
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
			}
			line = c.appendLine(line, part)
			size += len(part)
			if i < 0 {
				break
			}
			chunk = chunk[i+1:]
			stall.Stop()
			inLine = false
			if !c.deliver(frame{data: line, size: size}) {
				return
			}
			line, size = nil, 0
		}
		if err != nil {
			if err == io.EOF {
				if inLine {
					stall.Stop()
					if !c.deliver(frame{data: line, size: size}) {
						return
					}
				}
				c.readErr = io.EOF
			} else {
				c.readErr = fmt.Errorf("mcp guard: reading from the client: %w", err)
			}
			close(c.frames)
			return
		}
	}
}

// appendLine appends part to line, keeping at most MaxMessage+1 bytes and
// never allocating more than that.
func (c *conn) appendLine(line, part []byte) []byte {
	limit := c.lim.MaxMessage + 1
	room := limit - len(line)
	if room <= 0 {
		return line
	}
	if len(part) > room {
		part = part[:room]
	}
	if need := len(line) + len(part); need > cap(line) {
		grown := make([]byte, len(line), min(max(2*cap(line), need), limit))
		copy(grown, line)
		line = grown
	}
	return append(line, part...)
}

func (c *conn) deliver(f frame) bool {
	select {
	case c.frames <- f:
		return true
	case <-c.stop:
		return false
	}
}

// writeLoop writes the queue out, one message at a time, each within
// Limits.Stall.
func (c *conn) writeLoop() {
	defer close(c.writeDone)
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	for {
		c.mu.Lock()
		var data []byte
		if len(c.queue) > 0 {
			data = c.queue[0]
		}
		c.mu.Unlock()
		if data == nil {
			select {
			case <-c.wake:
				continue
			case <-c.stop:
				return
			}
		}
		if c.stopped() {
			return
		}
		if stall == nil {
			stall = time.AfterFunc(c.lim.Stall, func() { c.shutdown(ErrWriteStalled) })
		} else {
			stall.Reset(c.lim.Stall)
		}
		_, err := c.w.Write(data)
		stall.Stop()
		if err != nil {
			c.shutdown(fmt.Errorf("mcp guard: writing to the client: %w", err))
			return
		}
		c.mu.Lock()
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.queued -= len(data)
		c.mu.Unlock()
		signal(c.progress)
	}
}
