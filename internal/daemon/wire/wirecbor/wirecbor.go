// Package wirecbor links the CBOR library as the codec of the members of
// a wire.Msg that are not coded by hand (wire.Codec), with the frame's
// rules: decoding is strict (duplicate map keys, unknown fields,
// indefinite lengths, tags and invalid UTF-8 are errors; nesting, arrays
// and maps are bounded) and encoding core deterministic. Importing it
// installs the codec. Every program that sends or reads more than a
// command line's frames imports it (the daemon, its clients in the core);
// the thin client does not, and so never starts the library.
package wirecbor

import (
	"sync"

	"github.com/fxamacker/cbor/v2"

	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

func init() { wire.SetCodec(codec{}) }

// The modes are made on first use, not at init: a core program that
// sends no frame should not pay for them at its start.
var (
	// EncMode encodes as a frame is encoded.
	EncMode = sync.OnceValue(func() cbor.EncMode {
		m, err := cbor.EncOptions{Sort: cbor.SortCoreDeterministic}.EncMode()
		if err != nil {
			panic(err)
		}
		return m
	})
	// DecMode decodes a whole frame body.
	DecMode = sync.OnceValue(func() cbor.DecMode {
		m, err := cbor.DecOptions{
			DupMapKey:         cbor.DupMapKeyEnforcedAPF,
			IndefLength:       cbor.IndefLengthForbidden,
			TagsMd:            cbor.TagsForbidden,
			ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
			UTF8:              cbor.UTF8RejectInvalid,
			MaxNestedLevels:   wire.MaxDepth,
			MaxArrayElements:  wire.MaxElements,
			MaxMapPairs:       wire.MaxElements,
			FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		}.DecMode()
		if err != nil {
			panic(err)
		}
		return m
	})
	// memberDecMode decodes a member of a frame: DecMode with one level
	// of nesting fewer, the frame's map being the first.
	memberDecMode = sync.OnceValue(func() cbor.DecMode {
		o := DecMode().DecOptions()
		o.MaxNestedLevels--
		m, err := o.DecMode()
		if err != nil {
			panic(err)
		}
		return m
	})
)

type codec struct{}

func (codec) AppendMember(b []byte, v any) ([]byte, error) {
	data, err := EncMode().Marshal(v)
	return append(b, data...), err
}

func (codec) DecodeMember(data []byte, v any) ([]byte, error) {
	return memberDecMode().UnmarshalFirst(data, v)
}
