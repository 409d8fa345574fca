package wire

import (
	"io"
)

// A Tool is decoded by hand (UnmarshalCBOR). A listing is 63 pages of 32
// tools for 2,000 commands, and `rukh mcp` decodes every page it relays:
// the codec's reflection over Tool's members was the largest part of
// Rukh's own cost of a page (docs/benchmarks.md, "Eighth pass"). What a
// body decodes to, or that it is refused, is what the codec makes of the
// struct with the frame's options (FuzzToolCodec).

// UnmarshalCBOR decodes a CBOR map into t as the codec decodes the struct
// with decMode's options: members by their exact names, each at most
// once, no unknown member, text strings valid UTF-8, no tags and no
// indefinite lengths; null or undefined leaves a member unset.
func (t *Tool) UnmarshalCBOR(data []byte) error {
	*t = Tool{}
	if isNil(data) {
		return extraneous(data, data[1:])
	}
	rest, err := readMap(data, "wire.Tool", toolMember, func(i int, rest []byte) (_ []byte, err error) {
		switch i {
		case 0:
			t.Name, rest, err = textValue(rest)
		case 1:
			t.Title, rest, err = textValue(rest)
		case 2:
			t.Description, rest, err = textValue(rest)
		case 3:
			t.InputSchema, rest, err = bytesValue(rest)
		case 4:
			t.OutputSchema, rest, err = bytesValue(rest)
		case 5:
			t.Annotations, rest, err = annotationsValue(rest)
		}
		return rest, err
	})
	if err != nil {
		return err
	}
	return extraneous(data, rest)
}

// toolMember is the place of a Tool's member named key in
// UnmarshalCBOR's switch, or -1.
func toolMember(key []byte) int {
	switch string(key) {
	case "name":
		return 0
	case "title":
		return 1
	case "description":
		return 2
	case "inputSchema":
		return 3
	case "outputSchema":
		return 4
	case "annotations":
		return 5
	}
	return -1
}

// annotationMember is the place of an Annotations member named key, or
// -1.
func annotationMember(key []byte) int {
	switch string(key) {
	case "readOnly":
		return 0
	case "destructive":
		return 1
	case "idempotent":
		return 2
	case "openWorld":
		return 3
	}
	return -1
}

// annotationsValue decodes a tool's annotations: nil for null or
// undefined, else a map of its optional booleans.
func annotationsValue(data []byte) (*Annotations, []byte, error) {
	if isNil(data) {
		return nil, data[1:], nil
	}
	an := &Annotations{}
	members := [4]**bool{&an.ReadOnly, &an.Destructive, &an.Idempotent, &an.OpenWorld}
	rest, err := readMap(data, "wire.Annotations", annotationMember, func(i int, rest []byte) ([]byte, error) {
		switch rest[0] {
		case 0xf4, 0xf5:
			b := rest[0] == 0xf5
			*members[i] = &b
		case 0xf6, 0xf7:
		default:
			return nil, &typeError{"not a boolean", "bool"}
		}
		return rest[1:], nil
	})
	if err != nil {
		return nil, nil, err
	}
	return an, rest, nil
}

// textValue decodes a text string member ("" for null or undefined).
func textValue(data []byte) (string, []byte, error) {
	if isNil(data) {
		return "", data[1:], nil
	}
	s, rest, err := text(data)
	return string(s), rest, err
}

// bytesValue decodes a byte string member (nil for null or undefined)
// into a copy of its bytes.
func bytesValue(data []byte) ([]byte, []byte, error) {
	if isNil(data) {
		return nil, data[1:], nil
	}
	n, rest, err := itemHead(data, 2, "[]uint8")
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(rest)) < n {
		return nil, nil, io.ErrUnexpectedEOF
	}
	return append(make([]byte, 0, n), rest[:n]...), rest[n:], nil
}
