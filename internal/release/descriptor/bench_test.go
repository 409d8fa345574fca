package descriptor_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// BenchmarkDecode decodes the structured-result example (two commands,
// six inputs, a nested result schema).
func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "deploy", descriptor.FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := descriptor.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
