// Package tests runs Rukh's end-to-end scripts: each file in
// testdata/script is a testscript (txtar) that drives the real rukh
// binary entry point with its own RUKH_HOME.
package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/internal/daemon"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){
		"rukh": func() { os.Exit(app.Single(app.Rukh, os.Args[1:])) },
	})
}

// TestScripts runs every script twice, as gopls runs its tests "direct"
// and "forwarded": in-process, and with a rukhd serving the script's
// RUKH_HOME, so that every flow gives identical results both ways. A
// script that must run without a daemon (it damages or locks the store)
// says so with `[daemon] skip 'why'`.
func TestScripts(t *testing.T) {
	for _, mode := range []string{"in-process", "daemon"} {
		t.Run(mode, func(t *testing.T) { runScripts(t, mode == "daemon") })
	}
}

func runScripts(t *testing.T, withDaemon bool) {
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Condition: func(cond string) (bool, error) {
			if cond == "daemon" {
				return withDaemon, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Dir: filepath.Join("testdata", "script"),
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// status N PROG ARGS... runs PROG and requires exit status N.
			"status": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: status N PROG [ARGS...]")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("%v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
			// setmatch VAR REGEXP sets VAR to the first submatch of REGEXP
			// in the last command's stdout (an invocation id, say).
			"setmatch": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: setmatch VAR REGEXP")
				}
				m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
				if len(m) < 2 {
					ts.Fatalf("stdout has no match for %s", args[1])
				}
				ts.Setenv(args[0], m[1])
			},
			// setdigest VAR DIR sets VAR to the release digest of DIR, as
			// an owner would read it from `ext pack` or an install refusal.
			"setdigest": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: setdigest VAR DIR")
				}
				m, err := trust.BuildManifest(ts.MkAbs(args[1]))
				ts.Check(err)
				ts.Setenv(args[0], m.Digest())
			},
		},
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".rukh")
			env.Setenv("RUKH_HOME", home)
			env.Setenv("EXAMPLES", examples)
			if withDaemon {
				return startDaemon(env, home)
			}
			return nil
		},
	})
}

// startDaemon serves home with a rukhd in this test process until the
// script ends.
func startDaemon(env *testscript.Env, home string) error {
	p, err := homePaths(home)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ln, _, err := daemon.Listen(ctx, "rukh", p)
	if err != nil {
		return err
	}
	srv, err := daemon.New("rukh", p, nil)
	if err != nil {
		ln.Close()
		return err
	}
	srv.Run = app.Runner(app.Rukh)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	env.Defer(func() {
		srv.Stop()
		if err := <-done; err != nil {
			env.T().Fatal(err)
		}
		srv.Close()
	})
	return nil
}
