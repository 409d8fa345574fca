package wire

import (
	"fmt"
	"io"
	"math"
)

// The members of a command line's frames (Hello, Error, Exec, Spawn,
// Spawned, Exited, Started, Exit, Cancel) are encoded and decoded by hand
// (appendCBOR, decodeCBOR), as Tool is decoded. The thin client is a new
// process for every command line, so each frame it sends or reads was
// the codec's first of its type: the codec then walks the type by
// reflection before it writes a byte, about 0.1 ms of the client's CPU
// a call, on the call's path (docs/benchmarks.md, "Eleventh pass"). The
// bytes are the codec's own for the struct (TestMsgCodec), and what a
// body decodes to, or that it is refused, is what the codec makes of the
// struct with the frame's options (FuzzMsgCodec).
//
// These methods are not the codec's Marshaler and Unmarshaler: the tests'
// reference (plainMsg) must still be the codec's own walk of the structs.

// memberEncoder is a member of Msg that appends its own encoding.
type memberEncoder interface{ appendCBOR(b []byte) []byte }

// memberDecoder is a member of Msg that decodes itself from the start of
// data and returns what follows it.
type memberDecoder interface {
	decodeCBOR(data []byte) (rest []byte, err error)
}

func (h *Hello) appendCBOR(b []byte) []byte {
	b = appendMapHead(b, 3, h.PID != 0)
	if h.PID != 0 {
		b = appendInt(appendText(b, "pid"), h.PID)
	}
	b = appendText(appendText(b, "name"), h.Name)
	b = appendText(appendText(b, "build"), h.Build)
	return appendInt(appendText(b, "protocol"), h.Protocol)
}

func (h *Hello) decodeCBOR(data []byte) ([]byte, error) {
	return readMap(data, "wire.Hello", keyIn("protocol", "build", "name", "pid"), func(i int, rest []byte) (_ []byte, err error) {
		switch i {
		case 0:
			h.Protocol, rest, err = intValue(rest)
		case 1:
			h.Build, rest, err = textValue(rest)
		case 2:
			h.Name, rest, err = textValue(rest)
		case 3:
			h.PID, rest, err = intValue(rest)
		}
		return rest, err
	})
}

func (e *Error) appendCBOR(b []byte) []byte {
	b = appendMapHead(b, 2)
	b = appendText(appendText(b, "code"), e.Code)
	return appendText(appendText(b, "message"), e.Message)
}

func (e *Error) decodeCBOR(data []byte) ([]byte, error) {
	return readMap(data, "wire.Error", keyIn("code", "message"), func(i int, rest []byte) (_ []byte, err error) {
		if i == 0 {
			e.Code, rest, err = textValue(rest)
		} else {
			e.Message, rest, err = textValue(rest)
		}
		return rest, err
	})
}

func (x *Exec) appendCBOR(b []byte) []byte {
	b = appendMapHead(b, 3)
	b = appendText(appendText(b, "dir"), x.Dir)
	b = appendTexts(appendText(b, "env"), x.Env)
	return appendTexts(appendText(b, "args"), x.Args)
}

func (x *Exec) decodeCBOR(data []byte) ([]byte, error) {
	return readMap(data, "wire.Exec", keyIn("args", "dir", "env"), func(i int, rest []byte) (_ []byte, err error) {
		switch i {
		case 0:
			x.Args, rest, err = textsValue(rest)
		case 1:
			x.Dir, rest, err = textValue(rest)
		case 2:
			x.Env, rest, err = textsValue(rest)
		}
		return rest, err
	})
}

func (s *Spawn) appendCBOR(b []byte) []byte {
	b = appendMapHead(b, 6, s.Session, s.Supervised)
	b = appendText(appendText(b, "dir"), s.Dir)
	b = appendTexts(appendText(b, "env"), s.Env)
	b = appendTexts(appendText(b, "args"), s.Args)
	b = appendText(appendText(b, "path"), s.Path)
	b = appendInt(appendText(b, "files"), s.Files)
	b = appendHead(appendText(b, "ticket"), 0, s.Ticket)
	if s.Session {
		b = appendBool(appendText(b, "session"), true)
	}
	if s.Supervised {
		b = appendBool(appendText(b, "supervised"), true)
	}
	return b
}

func (s *Spawn) decodeCBOR(data []byte) ([]byte, error) {
	keys := keyIn("path", "args", "env", "dir", "session", "supervised", "files", "ticket")
	return readMap(data, "wire.Spawn", keys, func(i int, rest []byte) (_ []byte, err error) {
		switch i {
		case 0:
			s.Path, rest, err = textValue(rest)
		case 1:
			s.Args, rest, err = textsValue(rest)
		case 2:
			s.Env, rest, err = textsValue(rest)
		case 3:
			s.Dir, rest, err = textValue(rest)
		case 4:
			s.Session, rest, err = boolValue(rest)
		case 5:
			s.Supervised, rest, err = boolValue(rest)
		case 6:
			s.Files, rest, err = intValue(rest)
		case 7:
			s.Ticket, rest, err = uintValue(rest)
		}
		return rest, err
	})
}

func (s *Spawned) appendCBOR(b []byte) []byte {
	b = appendMapHead(b, 1, s.PID != 0, s.Error != "", s.Foreground)
	if s.PID != 0 {
		b = appendInt(appendText(b, "pid"), s.PID)
	}
	if s.Error != "" {
		b = appendText(appendText(b, "error"), s.Error)
	}
	b = appendHead(appendText(b, "ticket"), 0, s.Ticket)
	if s.Foreground {
		b = appendBool(appendText(b, "foreground"), true)
	}
	return b
}

func (s *Spawned) decodeCBOR(data []byte) ([]byte, error) {
	return readMap(data, "wire.Spawned", keyIn("ticket", "pid", "foreground", "error"), func(i int, rest []byte) (_ []byte, err error) {
		switch i {
		case 0:
			s.Ticket, rest, err = uintValue(rest)
		case 1:
			s.PID, rest, err = intValue(rest)
		case 2:
			s.Foreground, rest, err = boolValue(rest)
		case 3:
			s.Error, rest, err = textValue(rest)
		}
		return rest, err
	})
}

func (x *Exited) appendCBOR(b []byte) []byte { return appendStatus(b, x.Status) }
func (x *Exit) appendCBOR(b []byte) []byte   { return appendStatus(b, x.Status) }

func (x *Exited) decodeCBOR(data []byte) ([]byte, error) {
	return readStatus(data, "wire.Exited", &x.Status)
}

func (x *Exit) decodeCBOR(data []byte) ([]byte, error) {
	return readStatus(data, "wire.Exit", &x.Status)
}

// appendStatus and readStatus code Exited and Exit: {"status": N}.
func appendStatus(b []byte, status int) []byte {
	return appendInt(appendText(appendMapHead(b, 1), "status"), status)
}

func readStatus(data []byte, goType string, status *int) ([]byte, error) {
	return readMap(data, goType, keyIn("status"), func(_ int, rest []byte) (_ []byte, err error) {
		*status, rest, err = intValue(rest)
		return rest, err
	})
}

func (s *Started) appendCBOR(b []byte) []byte {
	return appendText(appendText(appendMapHead(b, 1), "invocationId"), s.InvocationID)
}

func (s *Started) decodeCBOR(data []byte) ([]byte, error) {
	return readMap(data, "wire.Started", keyIn("invocationId"), func(_ int, rest []byte) (_ []byte, err error) {
		s.InvocationID, rest, err = textValue(rest)
		return rest, err
	})
}

func (c *Cancel) appendCBOR(b []byte) []byte {
	return appendText(appendText(appendMapHead(b, 1), "reason"), c.Reason)
}

func (c *Cancel) decodeCBOR(data []byte) ([]byte, error) {
	return readMap(data, "wire.Cancel", keyIn("reason"), func(_ int, rest []byte) (_ []byte, err error) {
		c.Reason, rest, err = textValue(rest)
		return rest, err
	})
}

// keyIn places a member's key by its place among keys (readMap's index).
func keyIn(keys ...string) func(key []byte) int {
	return func(key []byte) int {
		for i, k := range keys {
			if k == string(key) {
				return i
			}
		}
		return -1
	}
}

// appendHead appends the head of a data item of the major type with the
// argument n, in its shortest form, as the codec writes it.
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return append(b, m|25, byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return append(b, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, m|27, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// appendMapHead appends the head of a map of always pairs, plus one for
// each optional member that is set (omitempty).
func appendMapHead(b []byte, always int, optional ...bool) []byte {
	for _, set := range optional {
		if set {
			always++
		}
	}
	return appendHead(b, 5, uint64(always))
}

func appendText(b []byte, s string) []byte { return append(appendHead(b, 3, uint64(len(s))), s...) }

func appendInt(b []byte, n int) []byte {
	if n < 0 {
		return appendHead(b, 1, uint64(-1-n))
	}
	return appendHead(b, 0, uint64(n))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xf5)
	}
	return append(b, 0xf4)
}

// appendTexts appends an array of text strings; nil is null, as the codec
// writes a nil slice.
func appendTexts(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0xf6)
	}
	b = appendHead(b, 4, uint64(len(ss)))
	for _, s := range ss {
		b = appendText(b, s)
	}
	return b
}

// intValue decodes an integer member (0 for null or undefined).
func intValue(data []byte) (int, []byte, error) {
	if n, rest, ok, err := simpleValue(data, "int"); ok || err != nil {
		return int(n), rest, err
	}
	major := data[0] >> 5
	if major != 0 && major != 1 {
		return 0, nil, &typeError{fmt.Sprintf("major type %d", major), "int"}
	}
	n, rest, err := itemHead(data, major, "int")
	if err != nil {
		return 0, nil, err
	}
	if n > math.MaxInt64 {
		return 0, nil, fmt.Errorf("cbor: cannot unmarshal integer into Go value of type int: %d overflows it", n)
	}
	if major == 1 {
		return -1 - int(n), rest, nil
	}
	return int(n), rest, nil
}

// uintValue decodes an unsigned integer member (0 for null or undefined).
func uintValue(data []byte) (uint64, []byte, error) {
	if n, rest, ok, err := simpleValue(data, "uint64"); ok || err != nil {
		return n, rest, err
	}
	return itemHead(data, 0, "uint64")
}

// simpleValue reads what the codec takes for an integer among CBOR's
// simple values (major type 7): null and undefined as 0, and a simple
// value that is neither a boolean nor a float as its number (0 to 19, 32
// to 255). ok is false when data does not start with a simple value.
func simpleValue(data []byte, goType string) (n uint64, rest []byte, ok bool, err error) {
	if data[0]>>5 != 7 {
		return 0, nil, false, nil
	}
	switch info := data[0] & 0x1f; {
	case info < 20:
		return uint64(info), data[1:], true, nil
	case info == 22 || info == 23: // null, undefined
		return 0, data[1:], true, nil
	case info == 24:
		if len(data) < 2 {
			return 0, nil, true, io.ErrUnexpectedEOF
		}
		if data[1] < 32 {
			return 0, nil, true, fmt.Errorf("cbor: invalid simple value %d for type primitives", data[1])
		}
		return uint64(data[1]), data[2:], true, nil
	}
	return 0, nil, true, &typeError{"primitives", goType}
}

// boolValue decodes a boolean member (false for null or undefined).
func boolValue(data []byte) (bool, []byte, error) {
	switch data[0] {
	case 0xf4, 0xf5:
		return data[0] == 0xf5, data[1:], nil
	case 0xf6, 0xf7:
		return false, data[1:], nil
	}
	return false, nil, &typeError{"not a boolean", "bool"}
}

// textsValue decodes an array of text strings (nil for null or
// undefined; an element that is null or undefined is "").
func textsValue(data []byte) ([]string, []byte, error) {
	if isNil(data) {
		return nil, data[1:], nil
	}
	n, rest, err := itemHead(data, 4, "[]string")
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(rest)) { // each element takes a byte at least
		return nil, nil, io.ErrUnexpectedEOF
	}
	out := make([]string, n)
	for i := range out {
		if len(rest) == 0 {
			return nil, nil, io.ErrUnexpectedEOF
		}
		if out[i], rest, err = textValue(rest); err != nil {
			return nil, nil, err
		}
	}
	return out, rest, nil
}
