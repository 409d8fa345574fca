package store

import (
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// Decoding limits. A record is a map of at most a dozen small integer
// keys; lists (a revision's packages and keys) hold at most maxList
// elements, and writes refuse longer ones so the store never writes what
// it cannot read back.
const (
	maxNesting = 8
	maxList    = 1 << 14
	maxPairs   = 32
)

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	encMode, err = cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	decMode, err = cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   maxNesting,
		MaxArrayElements:  maxList,
		MaxMapPairs:       maxPairs,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		UTF8:              cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic(err)
	}
}

// The stored records. Keys are small integers (keyasint) so the encoding
// is compact and independent of Go field names; the bucket key carries
// the record's identity and is not repeated inside. Times are Unix
// nanoseconds, 0 for the zero time. Changing a record's shape is a new
// schema version with a migration: strict decoding rejects unknown keys.

type releaseRec struct {
	Package     string `cbor:"1,keyasint"`
	Version     string `cbor:"2,keyasint"`
	Publisher   string `cbor:"3,keyasint"`
	Dir         string `cbor:"4,keyasint"`
	SignedBy    string `cbor:"5,keyasint,omitempty"`
	Pinned      bool   `cbor:"6,keyasint,omitempty"`
	InstalledAt int64  `cbor:"7,keyasint"`
	InstalledBy int    `cbor:"8,keyasint"`
	Descriptor  []byte `cbor:"9,keyasint"`
	// Source: where the release was fetched from (schema version 3).
	Source *sourceRec `cbor:"10,keyasint,omitempty"`
}

type sourceRec struct {
	Ref       string `cbor:"1,keyasint"`
	Resolved  string `cbor:"2,keyasint"`
	Fixed     bool   `cbor:"3,keyasint,omitempty"`
	PlainHTTP bool   `cbor:"4,keyasint,omitempty"`
}

type keyRec struct {
	Public  []byte `cbor:"1,keyasint"`
	AddedAt int64  `cbor:"2,keyasint"`
	AddedBy int    `cbor:"3,keyasint"`
}

type nameRec struct {
	Publisher string `cbor:"1,keyasint"`
	Since     int64  `cbor:"2,keyasint"`
	By        int    `cbor:"3,keyasint"`
}

type activePackageRec struct {
	Package string `cbor:"1,keyasint"`
	Version string `cbor:"2,keyasint"`
	Digest  string `cbor:"3,keyasint"`
}

type revisionRec struct {
	Parent   uint64             `cbor:"1,keyasint"`
	Hash     string             `cbor:"2,keyasint"`
	Profile  []byte             `cbor:"3,keyasint"`
	Packages []activePackageRec `cbor:"4,keyasint"`
	Keys     []string           `cbor:"5,keyasint"`
	Routes   uint64             `cbor:"6,keyasint"` // number of entries in the route bucket
	Created  int64              `cbor:"7,keyasint"`
	Op       string             `cbor:"8,keyasint"`
	By       int                `cbor:"9,keyasint"`
}

type routeRec struct {
	Identity string `cbor:"1,keyasint"`
	Digest   string `cbor:"2,keyasint"`
	Command  int    `cbor:"3,keyasint"`
	Alias    bool   `cbor:"4,keyasint,omitempty"`
	Summary  string `cbor:"5,keyasint,omitempty"`
}

type auditRec struct {
	Time   int64  `cbor:"1,keyasint"`
	UID    int    `cbor:"2,keyasint"`
	Op     string `cbor:"3,keyasint"`
	Old    uint64 `cbor:"4,keyasint,omitempty"`
	New    uint64 `cbor:"5,keyasint,omitempty"`
	Detail string `cbor:"6,keyasint,omitempty"`
}

func encode(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return b, nil
}

// decode decodes one record strictly: trailing bytes, unknown or
// duplicate keys, tags, indefinite lengths and over-limit nesting are
// errors. A decoded record never aliases data.
func decode[T any](data []byte) (*T, error) {
	var v T
	if err := decMode.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
