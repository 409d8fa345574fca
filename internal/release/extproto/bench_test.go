package extproto

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkReader reads a typical report: ten progress frames and a
// complete frame with a 100 KiB structured result.
func BenchmarkReader(b *testing.B) {
	var stream []byte
	for i := range int64(10) {
		stream = AppendProgress(stream, Progress{Message: "working", Done: &i})
	}
	data := `{"kind":"structured","data":{"items":[` + strings.Repeat(`{"name":"item","size":12345,"ok":true},`, 2600) + `{}]}}`
	stream = AppendComplete(stream, Complete{Token: strings.Repeat("ab", 32), Status: StatusSucceeded, CommandResult: []byte(data)})
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(stream))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
