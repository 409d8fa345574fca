package strictjson_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// BenchmarkParse compares the strict parser with encoding/json decoding
// the same descriptor into `any`, in one run.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "deploy", "rukh-extension.json"))
	if err != nil {
		b.Fatal(err)
	}
	lim := strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 48, MaxMembers: 1 << 16}
	b.Run("strictjson", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := strictjson.Parse(data, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
