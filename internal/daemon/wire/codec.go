package wire

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// The members of a command line's frames, and Tool, are coded by hand
// (frames.go, tool.go); every other member of Msg is coded by a Codec,
// the CBOR library configured with the frame's rules, which package
// wirecbor provides and installs when it is linked. The thin client links
// only the hand coders: the library's package inits and size cost every
// process that links it about 55 µs at start, and the thin client is a
// new process for every command line (docs/benchmarks.md, "Sixteenth
// pass"). In a program without the codec, a frame whose member needs it
// is not sent (ErrNoCodec) and is read as a bad frame (ErrFrame).

// Codec encodes and decodes the members of a Msg that are not coded by
// hand, with the frame's rules.
type Codec interface {
	// AppendMember appends the encoding of v, a member's value, to b.
	AppendMember(b []byte, v any) ([]byte, error)
	// DecodeMember decodes the data item at the start of data into v, a
	// pointer to a member, one level of nesting below the frame's map,
	// and returns what follows it.
	DecodeMember(data []byte, v any) (rest []byte, err error)
}

var codec atomic.Pointer[Codec]

// SetCodec installs c as the codec of the members not coded by hand
// (package wirecbor does, at its init).
func SetCodec(c Codec) { codec.Store(&c) }

// memberCodec returns the installed codec, or an error naming the member
// (a Go type) that needs one.
func memberCodec(member any) (Codec, error) {
	if c := codec.Load(); c != nil {
		return *c, nil
	}
	return nil, fmt.Errorf("%w for a %T: it is not coded by hand, and this program does not link package wirecbor", ErrNoCodec, member)
}

// ErrNoCodec is the error of a member that only the codec codes, in a
// program without one.
var ErrNoCodec = errors.New("no codec")

// typeError is the error of a data item of the wrong type, worded as the
// CBOR library words its own.
type typeError struct{ cborType, goType string }

func (e *typeError) Error() string {
	return "cbor: cannot unmarshal " + e.cborType + " into Go value of type " + e.goType
}
