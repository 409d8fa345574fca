package tests

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rukh-cli/rukh/internal/testhome"
)

// BenchmarkHTTP calls one tool over Streamable HTTP with a verified JWT,
// sequentially from one client and from 50 callers at once (each its own
// subject and session), through `rukh mcp --http` in-process and through
// rukhd, against the floor (tests/testdata/floorhttp): a go-sdk stateless
// server behind the go-sdk's bearer middleware verifying the same tokens,
// whose tool commits the same two durable records around a fork/exec of
// the same program, directly and (floor+helper) under rukh-sandbox as
// rukh's calls are. See docs/benchmarks.md.
func BenchmarkHTTP(b *testing.B) {
	rukh, _ := hostBinaries(b)
	f := newHTTPFixture(b)
	f.apply(b)
	floor := filepath.Join(f.dir, "floorhttp")
	build(b, floor, "./testdata/floorhttp")
	const callers = 50
	tokens := make([]string, callers)
	for i := range tokens {
		tokens[i] = f.issuer.token(b, fmt.Sprintf("user-%02d", i), func(c map[string]any) { c["groups"] = []string{"ops"} })
	}

	floorCmd := func(extra ...string) *exec.Cmd {
		args := append([]string{"-store", filepath.Join(f.dir, "floor.db"), "-jwks", f.issuer.jwks,
			"-issuer", httpIssuer, "-audience", httpResource, "-scope", "rukh:call"}, extra...)
		return exec.Command(floor, append(args, filepath.Join(f.dir, "src", "bin", "other"))...)
	}
	// one returns a call from one client to the server at base; round, a
	// round of calls from every caller at once. Each first calls once:
	// the first call fills the host's caches, not the steady state.
	one := func(b *testing.B, base string) func(*testing.B) {
		cs, tool := httpSession(b, base, tokens[0])
		httpCall(b, cs, tool)
		return func(b *testing.B) { httpCall(b, cs, tool) }
	}
	round := func(b *testing.B, base string) func(*testing.B) {
		sessions := make([]*sdk.ClientSession, callers)
		var tool string
		for i := range sessions {
			sessions[i], tool = httpSession(b, base, tokens[i])
		}
		httpCall(b, sessions[0], tool)
		return func(b *testing.B) {
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for _, cs := range sessions {
				wg.Go(func() {
					res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool})
					if err != nil || res.IsError {
						errs <- fmt.Errorf("%v %+v", err, res)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		}
	}
	run := func(b *testing.B, base string) {
		b.Run("sequential", func(b *testing.B) {
			call := one(b, base)
			for b.Loop() {
				call(b)
			}
		})
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			calls := round(b, base)
			start := time.Now()
			for b.Loop() {
				calls(b)
			}
			b.ReportMetric(float64(callers*b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
	b.Run("floor", func(b *testing.B) { run(b, startServing(b, floorCmd())) })
	// The floor with the command supervised by rukh-sandbox, as rukh's
	// calls below are (hostBinaries installs it beside rukh).
	b.Run("floor+helper", func(b *testing.B) {
		run(b, startServing(b, floorCmd("-helper", filepath.Join(filepath.Dir(rukh), "rukh-sandbox"))))
	})
	b.Run("rukh", func(b *testing.B) {
		base, cmd := startHTTPProc(b, rukh, f.env)
		run(b, base)
		cmd.Process.Kill() // before the daemon takes the store
		cmd.Wait()
	})
	b.Run("rukh-daemon", func(b *testing.B) {
		rukhCmd(b, f.env, rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, f.env, rukh, "daemon", "stop") })
		run(b, startHTTP(b, rukh, f.env))
	})
	// The targets as ratios of alternating pairs (each in turn first),
	// through rukhd against the floor under the helper: one client's call
	// (time), and a round of calls from every caller at once (time; the
	// calls/s ratio is its inverse).
	b.Run("rukh-daemon÷floor+helper", func(b *testing.B) {
		floor := startServing(b, floorCmd("-helper", filepath.Join(filepath.Dir(rukh), "rukh-sandbox")))
		rukhCmd(b, f.env, rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, f.env, rukh, "daemon", "stop") })
		base := startHTTP(b, rukh, f.env)
		b.Run("sequential", func(b *testing.B) { testhome.PairRatio(b, one(b, base), one(b, floor)) })
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { testhome.PairRatio(b, round(b, base), round(b, floor)) })
	})
}

// startServing starts cmd, which writes "serving URL/mcp" to stderr once
// it listens, and returns its base URL; it is killed in b's cleanup.
func startServing(b *testing.B, cmd *exec.Cmd) string {
	b.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	m := regexp.MustCompile(`serving (http://127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(line)
	if m == nil {
		b.Fatalf("%s never said where it listens: %v (%q)", cmd.Path, err, line)
	}
	return m[1]
}

// httpSession connects a client with token to base and returns it with
// the one tool it lists.
func httpSession(b *testing.B, base, token string) (*sdk.ClientSession, string) {
	b.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 1 {
		b.Fatalf("list: %v %+v", err, res)
	}
	return cs, res.Tools[0].Name
}

func httpCall(b *testing.B, cs *sdk.ClientSession, tool string) {
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool})
	if err != nil || res.IsError {
		b.Fatalf("call: %v %+v", err, res)
	}
}
