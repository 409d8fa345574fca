// Command hello is the acme.hello example extension, written with extsdk:
// it greets name count times and returns the greeting as structured data.
package main

import (
	"context"
	"strings"

	"github.com/rukh-cli/rukh/extsdk"
)

func main() {
	extsdk.Run(func(ctx context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
		n := inv.Int("count")
		greeting := strings.TrimSpace(strings.Repeat("Hello, "+inv.String("name")+"! ", int(n)))
		return extsdk.Structured(map[string]any{"greeting": greeting, "count": n}), nil
	})
}
