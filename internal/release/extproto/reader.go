package extproto

import (
	"bufio"
	"errors"
	"io"
)

// readBuffer is the size of a Reader's read buffer. A line longer than
// this is gathered in a separate buffer of at most MaxFrame bytes.
const readBuffer = 32 << 10

// Reader reads the frames a child writes. Whatever the child writes, a
// Reader holds at most MaxFrame bytes of a line plus its read buffer: a
// line that grows past MaxFrame is refused as soon as it does, without
// reading the rest.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	lr lineReader
}

// NewReader returns a Reader of the frames on r.
func NewReader(r io.Reader) *Reader {
	return &Reader{lr: lineReader{br: bufio.NewReaderSize(r, readBuffer)}}
}

// Next returns the next frame. At the clean end of the channel (after a
// newline, or before any byte) it returns io.EOF. A refused frame is an
// *Error; after invalid_json, invalid_frame or unknown_type the line has
// been consumed and Next may be called again, while frame_too_large and
// truncated end the channel: Next then returns the same *Error again. An
// error from r other than io.EOF (for example a read deadline) is
// returned as it is, and again by every later call.
func (r *Reader) Next() (*Frame, error) {
	line, err := r.lr.next()
	if err != nil {
		return nil, err
	}
	f, e := parseFrame(line)
	if e != nil {
		return nil, e
	}
	return f, nil
}

// ReadInvoke reads and parses the invoke frame, the first line on r, as
// ParseInvoke does. It may read past the end of that line; the host
// sends nothing after it. An error from r is returned as it is; an
// empty channel is io.EOF.
func ReadInvoke(r io.Reader) (*Invoke, error) {
	lr := lineReader{br: bufio.NewReaderSize(r, readBuffer)}
	line, err := lr.next()
	if err != nil {
		return nil, err
	}
	in, e := parseInvoke(line)
	if e != nil {
		return nil, e
	}
	return in, nil
}

// lineReader splits a stream into lines of at most MaxFrame bytes.
type lineReader struct {
	br   *bufio.Reader
	buf  []byte // a line longer than the read buffer, gathered
	fail error  // sticky
}

// next returns the next line without its newline. The line is valid until
// the next call.
func (lr *lineReader) next() ([]byte, error) {
	if lr.fail != nil {
		return nil, lr.fail
	}
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		if len(lr.buf)+len(content) > MaxFrame {
			lr.fail = errorf(ReasonFrameTooLarge, "a line is longer than %d bytes", MaxFrame)
			lr.buf = nil
			return nil, lr.fail
		}
		switch {
		case err == nil && len(lr.buf) == 0:
			return content, nil // the whole line is in the read buffer
		case err == nil:
			lr.buf = append(lr.buf, content...)
			return lr.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.buf = append(lr.buf, content...)
		case err == io.EOF && len(lr.buf)+len(content) == 0:
			lr.fail = io.EOF
			return nil, io.EOF
		case err == io.EOF:
			lr.fail = errorf(ReasonTruncated, "the channel ended after %d bytes of a line without its newline", len(lr.buf)+len(content))
			return nil, lr.fail
		default:
			lr.fail = err
			return nil, err
		}
	}
}
