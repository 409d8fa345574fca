package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/run/sandbox"
	"github.com/rukh-cli/rukh/internal/run/spawn"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// BenchmarkCLI measures, in one run, an empty Go program and `rukh
// version` without and with a daemon, and a whole `rukh hello` process (resolve
// from the route index, admit, record, run the Go example extension over
// rukh.ipc/1, validate, finalize) against running the same extension
// program directly with a prepared channel, with 1 and 2,001 installed
// commands, in-process (in the one-shot core) and through a running rukhd
// (whose resident memory is reported as MiB-rss), with rukh-sandbox
// installed beside them. See
// docs/benchmarks.md.
func BenchmarkCLI(b *testing.B) {
	dir := testhome.TempDir(b)
	rukh := filepath.Join(dir, "rukh")
	hello := filepath.Join(dir, "hello-src")
	build(b, rukh, "../cmd/rukh")
	build(b, filepath.Join(dir, "rukhd"), "../cmd/rukhd")
	// The one-shot core, in which the thin rukh runs `rukh hello` when no
	// daemon serves (docs/adr/0017-one-shot-core.md).
	build(b, filepath.Join(dir, "rukh-oneshot"), "../cmd/rukhd", "-tags", "rukh_oneshot")
	// The enforcement helper beside them, as make build and the .deb
	// install it: every call is started and supervised by it.
	if err := sandbox.Build(filepath.Join(dir, "rukh-sandbox")); err != nil {
		b.Fatal(err)
	}
	copyDir(b, "../examples/hello-go", hello, "main.go", "main_test.go", "rukh-extension.json")
	build(b, filepath.Join(hello, "bin", "hello"), "../examples/hello-go")

	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			runDirect(b, filepath.Join(hello, "bin", "hello"))
		}
	})
	// What any Go host of a call costs at least (tests/testdata/floor):
	// a Go program that starts the command and waits, as the thin client
	// does; that with the two durable records every call has (begin and
	// outcome, bbolt); and that with the command supervised by the helper.
	// Their ratios to direct bound what rukh can reach without trading a
	// protection.
	floor := filepath.Join(dir, "floor")
	build(b, floor, "./testdata/floor")
	floorDB := filepath.Join(dir, "floor.db")
	// The command every floor runs: PROG FRAME ENV..., as rukh would.
	floorCall := append([]string{filepath.Join(hello, "bin", "hello"), string(directFrame), extproto.EnvFD + "=3", extproto.EnvToken + "=" + strings.Repeat("0", 64)}, directEnv...)
	// completes is a floor's call: prog with args, whose output must be
	// the command's completion; loop is the row of one call.
	completes := func(prog string, args ...string) func(*testing.B) {
		return func(b *testing.B) {
			if out, err := exec.Command(prog, args...).Output(); err != nil || !strings.Contains(string(out), `"complete"`) {
				b.Fatalf("%s %q: %v: %q", filepath.Base(prog), args, err, out)
			}
		}
	}
	loop := func(call func(*testing.B)) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				call(b)
			}
		}
	}
	var fcall func(*testing.B)
	var fcallArgs []string
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"floor/go-host", nil},
		{"floor/go-host+records", []string{"-store", floorDB}},
		{"floor/go-host+records+helper", []string{"-store", floorDB, "-helper", filepath.Join(dir, "rukh-sandbox")}},
	} {
		args := append(slices.Clip(c.flags), floorCall...)
		run := completes(floor, args...)
		fcall, fcallArgs = run, args // the last: F-call
		b.Run(c.name, loop(run))
	}
	// F-call+signals: F-call catching Ctrl-C, SIGTERM and the hang-up
	// before the command starts, as every host of a CLI call must (the
	// first stops the command with a grace): in Go, signal.Notify, which
	// starts three runtime threads and hands each signal to one of them
	// (docs/benchmarks.md, "Thirteenth pass"). Not a row of issue 28's
	// table: what of its rows a correct host pays for its signals.
	fsig := completes(floor, append([]string{"-signals"}, fcallArgs...)...)
	b.Run("floor/go-host+records+helper+signals", loop(fsig))
	b.Run("F-call+signals÷F-call", func(b *testing.B) { testhome.PairRatio(b, fsig, fcall) })
	// F-call+slack: F-call run as Rukh runs its hosts, with a timer slack
	// of 1 ms and its command with the default (spawn.HostTimerSlack,
	// docs/adr/0021-host-timer-slack.md). Not a row of issue 28's table:
	// how much of a row's gain from that slack any Go host would have.
	fslack := func(b *testing.B) {
		cmd := exec.Command(floor, append([]string{"-host"}, fcallArgs...)...)
		var out strings.Builder
		cmd.Stdout = &out
		if err := spawn.WithHostTimerSlack(cmd.Start); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), `"complete"`) {
			b.Fatalf("floor -host: %v: %q", err, out.String())
		}
	}
	b.Run("floor/go-host+records+helper+slack", loop(fslack))
	b.Run("F-call+slack÷F-call", func(b *testing.B) { testhome.PairRatio(b, fslack, fcall) })
	// F-daemon: what a daemon-hosted call costs at least
	// (tests/testdata/floord): the same as F-call, split as rukh and
	// rukhd split it — a client process that starts the command, a
	// daemon that holds the store, commits the records and opens the
	// helper's gate — with the same exchanges between them and nothing
	// else. Its ratio to F-call is what the split itself costs.
	floord := filepath.Join(dir, "floord")
	build(b, floord, "./testdata/floord")
	fdaemonSocket := filepath.Join(dir, "floord.sock")
	startFloord(b, floord, append([]string{"serve", fdaemonSocket, filepath.Join(dir, "floord.db"), filepath.Join(dir, "rukh-sandbox")}, floorCall...))
	fdaemon := completes(floord, "call", fdaemonSocket)
	b.Run("floor/daemon-host+records+helper", loop(fdaemon))
	b.Run("F-daemon÷F-call", func(b *testing.B) { testhome.PairRatio(b, fdaemon, fcall) })
	// F-launch: what a call without a daemon costs at least in a CLI
	// split as rukh is (tests/testdata/launch): a Go program, as the thin
	// client is, that finds no daemon's socket and execs the program that
	// hosts the call, here F-call itself. Its ratio to F-call is what
	// that split costs by itself: one more Go program's start and an
	// exec, which `rukh CMD` without a daemon pays for the thin client
	// that a call through rukhd needs (docs/adr/0008-thin-client.md).
	launch := filepath.Join(dir, "launch")
	build(b, launch, "./testdata/launch")
	flaunch := completes(launch, append([]string{filepath.Join(dir, "no-daemon.sock"), floor}, fcallArgs...)...)
	b.Run("floor/launch+go-host+records+helper", loop(flaunch))
	b.Run("F-launch÷F-call", func(b *testing.B) { testhome.PairRatio(b, flaunch, fcall) })
	// The floors of `rukh version`: any Go program's start, and a Go
	// program that prints a version (fmt and os).
	runProgram := func(b *testing.B, path string) {
		if err := exec.Command(path).Run(); err != nil {
			b.Fatal(err)
		}
	}
	empty := filepath.Join(dir, "empty")
	for _, f := range []struct{ row, path, pkg string }{
		{"empty-go-program", empty, "./testdata/empty"},
		{"floor/print-version", filepath.Join(dir, "printversion"), "./testdata/printversion"},
	} {
		build(b, f.path, f.pkg)
		b.Run(f.row, func(b *testing.B) {
			for b.Loop() {
				runProgram(b, f.path)
			}
		})
	}
	versionHome := filepath.Join(dir, "home-version")
	versionEnv := append(os.Environ(), "RUKH_HOME="+versionHome)
	b.Run("version", func(b *testing.B) {
		for b.Loop() {
			rukhCmd(b, versionEnv, rukh, "version")
		}
	})
	b.Run("version-daemon", func(b *testing.B) {
		rukhCmd(b, versionEnv, rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, versionEnv, rukh, "daemon", "stop") })
		for b.Loop() {
			rukhCmd(b, versionEnv, rukh, "version")
		}
	})
	b.Run("version-daemon÷empty", func(b *testing.B) {
		rukhCmd(b, versionEnv, rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, versionEnv, rukh, "daemon", "stop") })
		testhome.PairRatio(b,
			func(b *testing.B) { rukhCmd(b, versionEnv, rukh, "version") },
			func(b *testing.B) { runProgram(b, empty) })
	})
	// What printing a version costs any Go program over doing nothing:
	// the floor of the row above.
	printVersion := filepath.Join(dir, "printversion")
	b.Run("print-version÷empty", func(b *testing.B) {
		testhome.PairRatio(b, func(b *testing.B) { runProgram(b, printVersion) }, func(b *testing.B) { runProgram(b, empty) })
	})
	envs := map[int][]string{}
	for _, n := range []int{1, 2001} {
		home := filepath.Join(dir, fmt.Sprintf("home-%d", n))
		installCatalog(b, home, hello, n)
		env := append(os.Environ(), "RUKH_HOME="+home)
		envs[n] = env
		b.Run(fmt.Sprintf("rukh/commands=%d", n), func(b *testing.B) {
			for b.Loop() {
				runHello(b, rukh, env)
			}
		})
		b.Run(fmt.Sprintf("rukh-daemon/commands=%d", n), func(b *testing.B) {
			rukhCmd(b, env, rukh, "daemon", "start")
			b.Cleanup(func() { rukhCmd(b, env, rukh, "daemon", "stop") })
			runHello(b, rukh, env) // the first call fills the daemon's caches: not the steady state
			for b.Loop() {
				runHello(b, rukh, env)
			}
			var st struct {
				RSSBytes int64 `json:"rssBytes"`
			}
			if err := json.Unmarshal(rukhCmd(b, env, rukh, "daemon", "status", "--json"), &st); err != nil || st.RSSBytes == 0 {
				b.Fatalf("daemon status: %v", err)
			}
			b.ReportMetric(float64(st.RSSBytes)/(1<<20), "MiB-rss")
		})
	}
	// The targets as ratios of alternating pairs, each in turn first: the
	// separate rows run a minute apart, and the machine drifts by more
	// than the difference between 2,001 commands and 1 in a minute.
	// ns/op is a pair's; the metric is the median pair's ratio.
	hello1 := func(b *testing.B) { runHello(b, rukh, envs[1]) }
	hello2001 := func(b *testing.B) { runHello(b, rukh, envs[2001]) }
	b.Run("rukh/commands=2001÷1", func(b *testing.B) {
		testhome.PairRatio(b, hello2001, hello1)
	})
	b.Run("rukh÷F-call", func(b *testing.B) { testhome.PairRatio(b, hello1, fcall) })
	b.Run("rukh÷F-launch", func(b *testing.B) { testhome.PairRatio(b, hello1, flaunch) })
	b.Run("rukh÷F-call+signals", func(b *testing.B) { testhome.PairRatio(b, hello1, fsig) })
	b.Run("rukh÷F-call+slack", func(b *testing.B) { testhome.PairRatio(b, hello1, fslack) })
	b.Run("rukh-daemon/commands=2001÷1", func(b *testing.B) {
		for _, env := range envs {
			rukhCmd(b, env, rukh, "daemon", "start")
			b.Cleanup(func() { rukhCmd(b, env, rukh, "daemon", "stop") })
			runHello(b, rukh, env) // warm, as above
		}
		testhome.PairRatio(b, hello2001, hello1)
	})
	b.Run("rukh-daemon÷F-call", func(b *testing.B) {
		rukhCmd(b, envs[1], rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, envs[1], rukh, "daemon", "stop") })
		hello1(b) // warm
		testhome.PairRatio(b, hello1, fcall)
	})
	b.Run("rukh-daemon÷F-call+signals", func(b *testing.B) {
		rukhCmd(b, envs[1], rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, envs[1], rukh, "daemon", "stop") })
		hello1(b) // warm
		testhome.PairRatio(b, hello1, fsig)
	})
	b.Run("rukh-daemon÷F-call+slack", func(b *testing.B) {
		rukhCmd(b, envs[1], rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, envs[1], rukh, "daemon", "stop") })
		hello1(b) // warm
		testhome.PairRatio(b, hello1, fslack)
	})
	b.Run("rukh-daemon÷F-daemon", func(b *testing.B) {
		rukhCmd(b, envs[1], rukh, "daemon", "start")
		b.Cleanup(func() { rukhCmd(b, envs[1], rukh, "daemon", "stop") })
		hello1(b) // warm
		testhome.PairRatio(b, hello1, fdaemon)
	})
}

// startFloord starts the daemon floor (floord serve) for the rest of the
// benchmark and returns once it listens.
func startFloord(b *testing.B, floord string, args []string) {
	b.Helper()
	cmd := exec.Command(floord, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("it said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			b.Fatalf("floord serve did not start: %v", err)
		}
	case <-time.After(30 * time.Second):
		b.Fatal("floord serve did not say it listens within 30s")
	}
}

// runHello runs `rukh hello bench` in env and checks its greeting.
func runHello(b *testing.B, rukh string, env []string) {
	cmd := exec.Command(rukh, "hello", "bench")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Hello, bench!") {
		b.Fatalf("rukh hello: %v: %s", err, out)
	}
}

func rukhCmd(b *testing.B, env []string, rukh string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(rukh, args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("rukh %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// build builds pkg into out, with the go build flags given.
func build(b *testing.B, out, pkg string, flags ...string) {
	b.Helper()
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build and the .deb build them
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
}

func copyDir(b *testing.B, from, to string, names ...string) {
	b.Helper()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// installCatalog installs the hello release and filler packages so that n
// commands are installed in all.
func installCatalog(b *testing.B, home, hello string, n int) {
	b.Helper()
	install := func(dir string) { testhome.InstallPinned(b, filepath.Join(home, "data"), dir) }
	install(hello)
	for pkg, left := 0, n-1; left > 0; pkg++ {
		k := min(left, 500)
		left -= k
		dir := filepath.Join(home, fmt.Sprintf("filler%d", pkg))
		var cmds []string
		for i := range k {
			cmds = append(cmds, fmt.Sprintf(`{"id":"c%d","path":["filler%d","c%d"],"summary":"filler","inputs":[{"id":"x","type":"integer","minimum":0}],"execute":{"mapping":"managed","program":"bin/t","result":{"kind":"text"}},"effects":{"class":"none"}}`, i, pkg, i))
		}
		desc := fmt.Sprintf(`{"schema":"rukh.extension/2","package":"bench.filler%d","version":"1.0.0","publisher":"bench","commands":[%s]}`, pkg, strings.Join(cmds, ","))
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "rukh-extension.json"), []byte(desc), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bin", "t"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			b.Fatal(err)
		}
		install(dir)
	}
}

// directFrame and directEnv are what a host gives the hello extension
// for `hello bench`: its invoke frame and its environment.
var (
	directFrame = (&extproto.Invoke{InvocationID: strings.Repeat("1", 32), Command: "acme.hello/hello", Transport: "cli", DeadlineMs: 30000,
		Inputs: []byte(`{"count":{"value":1,"explicit":false},"name":{"value":"bench","explicit":true}}`)}).AppendFrame(nil)
	directEnv = []string{extproto.EnvInvocationID + "=" + strings.Repeat("1", 32), extproto.EnvCommand + "=acme.hello/hello"}
)

// runDirect is the floor: the extension program started with a prepared
// channel, its invoke frame written and its completion read, by a minimal
// host with no store, no validation and no records.
func runDirect(b *testing.B, prog string) {
	if line := testhome.ForkExec(b, prog, directEnv, directFrame); !strings.Contains(line, `"complete"`) {
		b.Fatalf("direct: %q", line)
	}
}
