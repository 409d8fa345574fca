package wire

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The hand decoders of a frame (Msg's, Tool's) read CBOR with these, by
// the same rules as the codec's decMode: definite lengths only, no tags,
// text strings valid UTF-8, a struct's members by their exact names,
// each at most once, none unknown.

// readMap reads the CBOR map at the start of data as the codec reads a
// struct: each key a text string that index places (0 to 63), at most
// once; value reads the member's value from the bytes that follow its
// key and returns what follows the value. goType names the struct for
// the error of something else than a map. readMap returns what follows
// the map.
func readMap(data []byte, goType string, index func(key []byte) int, value func(i int, rest []byte) ([]byte, error)) ([]byte, error) {
	n, rest, err := itemHead(data, 5, goType)
	if err != nil {
		return nil, err
	}
	var seen uint64
	for range n {
		var key []byte
		if key, rest, err = text(rest); err != nil {
			return nil, err
		}
		i := index(key)
		switch {
		case i < 0 || i >= 64:
			return nil, fmt.Errorf("cbor: unknown field %q", key)
		case seen&(1<<i) != 0:
			return nil, fmt.Errorf("cbor: found duplicate map key %q", key)
		}
		seen |= 1 << i
		if len(rest) == 0 {
			return nil, io.ErrUnexpectedEOF
		}
		if rest, err = value(i, rest); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// text reads a text string (a member's key or value) and checks that it
// is UTF-8.
func text(data []byte) ([]byte, []byte, error) {
	n, rest, err := itemHead(data, 3, "string")
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(rest)) < n {
		return nil, nil, io.ErrUnexpectedEOF
	}
	if !utf8.Valid(rest[:n]) {
		return nil, nil, errors.New("cbor: invalid UTF-8 string")
	}
	return rest[:n], rest[n:], nil
}

// isNil reports whether data starts with CBOR null or undefined.
func isNil(data []byte) bool { return len(data) > 0 && (data[0] == 0xf6 || data[0] == 0xf7) }

// itemHead reads the head of a definite-length data item of the major
// type want: its argument (a length, or a map's number of pairs) and what
// follows. goType names what it decodes into, for the error.
func itemHead(data []byte, want byte, goType string) (uint64, []byte, error) {
	if len(data) == 0 {
		return 0, nil, io.ErrUnexpectedEOF
	}
	major, info, rest := data[0]>>5, data[0]&0x1f, data[1:]
	switch {
	case major == 6:
		return 0, nil, errors.New("cbor: CBOR tag isn't allowed")
	case major != want:
		return 0, nil, &typeError{fmt.Sprintf("major type %d", major), goType}
	case info == 31:
		return 0, nil, errors.New("cbor: indefinite-length item isn't allowed")
	case info < 24:
		return uint64(info), rest, nil
	case info <= 27:
		size := 1 << (info - 24)
		if len(rest) < size {
			return 0, nil, io.ErrUnexpectedEOF
		}
		var n uint64
		for _, b := range rest[:size] {
			n = n<<8 | uint64(b)
		}
		if major == 5 && n > MaxElements {
			return 0, nil, fmt.Errorf("cbor: exceeded max number of key-value pairs %d for CBOR map", MaxElements)
		}
		if major == 4 && n > MaxElements {
			return 0, nil, fmt.Errorf("cbor: exceeded max number of elements %d for CBOR array", MaxElements)
		}
		return n, rest[size:], nil
	}
	return 0, nil, errors.New("cbor: invalid additional information in a head")
}

// extraneous is the error of bytes left after a whole data item.
func extraneous(data, rest []byte) error {
	if len(rest) > 0 {
		return fmt.Errorf("cbor: %d bytes of extraneous data starting at index %d", len(rest), len(data)-len(rest))
	}
	return nil
}
