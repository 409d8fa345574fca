// Package tests runs Rukh's end-to-end scripts: each file in
// testdata/script is a testscript (txtar) that drives the real rukh
// binary entry point with its own RUKH_HOME.
package tests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rukh-cli/rukh/app"
	"github.com/rukh-cli/rukh/trust"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rukh": func() { os.Exit(app.Main(app.Rukh, os.Args[1:])) },
	})
}

func TestScripts(t *testing.T) {
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
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
			env.Setenv("RUKH_HOME", filepath.Join(env.WorkDir, ".rukh"))
			env.Setenv("EXAMPLES", examples)
			return nil
		},
	})
}
