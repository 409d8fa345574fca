package systemd

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/run/spawn"
)

// unit is a parsed unit file: section → key → values (a key may repeat),
// and the keys whose line has no comment directly above it.
type unit struct {
	keys       map[string]map[string][]string
	undocument map[string][]string // section → keys without a comment above
}

func (u unit) get(section, key string) []string { return u.keys[section][key] }

func parseUnit(t *testing.T, name string) unit {
	t.Helper()
	data, err := Units.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{keys: map[string]map[string][]string{}, undocument: map[string][]string{}}
	section, commented := "", false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			commented = false
		case strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			commented = true
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section, commented = line, false
			u.keys[section] = map[string][]string{}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, `\`) {
				t.Fatalf("%s:%d: not a plain key=value line in a section: %q", name, n, line)
			}
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			u.keys[section][key] = append(u.keys[section][key], value)
			if !commented {
				u.undocument[section] = append(u.undocument[section], key)
			}
			commented = false
		}
	}
	return u
}

// TestUnitsContract checks the units against the daemon's contract: the
// socket systemd creates is the one the CLI and rukhd use, with the same
// modes; rukhd is a notify service started only through its socket,
// stopped so that it can finalize and no child survives; and the service
// has none of the sandboxing that would make an extension program behave
// unlike the same program run from the user's shell. Every directive of
// [Socket] and [Service] says why it is there in a comment above it.
func TestUnitsContract(t *testing.T) {
	sock := parseUnit(t, "rukhd.socket")
	svc := parseUnit(t, "rukhd.service")

	want := func(u unit, file, section, key string, values ...string) {
		t.Helper()
		if got := u.get(section, key); strings.Join(got, "\n") != strings.Join(values, "\n") {
			t.Errorf("%s: %s %s=%q, want %q", file, section, key, got, values)
		}
	}
	want(sock, "rukhd.socket", "[Socket]", "ListenStream", "%t/rukh/rukhd.sock")
	want(sock, "rukhd.socket", "[Socket]", "SocketMode", "0600")
	want(sock, "rukhd.socket", "[Socket]", "DirectoryMode", "0700")
	want(sock, "rukhd.socket", "[Socket]", "Accept") // one rukhd takes the listening fd
	want(sock, "rukhd.socket", "[Socket]", "Service")
	want(sock, "rukhd.socket", "[Install]", "WantedBy", "sockets.target")

	want(svc, "rukhd.service", "[Unit]", "Requires", "rukhd.socket")
	want(svc, "rukhd.service", "[Unit]", "After", "rukhd.socket")
	want(svc, "rukhd.service", "[Service]", "Type", "notify")
	want(svc, "rukhd.service", "[Service]", "NotifyAccess", "main")
	want(svc, "rukhd.service", "[Service]", "ExecStart", "/usr/bin/rukhd --idle-timeout 15m")
	// always would restart an idle exit at once, defeating --idle-timeout.
	want(svc, "rukhd.service", "[Service]", "Restart", "on-failure")
	want(svc, "rukhd.service", "[Service]", "KillMode", "mixed")
	// The host's timer slack, spawn.HostTimerSlack, as `daemon start` gives it.
	want(svc, "rukhd.service", "[Service]", "TimerSlackNSec", spawn.HostTimerSlack.String())
	if len(svc.get("[Service]", "TimeoutStopSec")) != 1 {
		t.Errorf("rukhd.service: TimeoutStopSec= must bound the time rukhd has to finalize")
	}
	want(svc, "rukhd.service", "[Install]", "Also", "rukhd.socket")

	// Each of these would break some program an extension runs, or make it
	// behave unlike the same command run without the daemon.
	forbidden := map[string]string{
		"PrivateTmp":              "the CLI passes /tmp paths to the daemon",
		"ProtectHome":             "extensions work on the user's files",
		"ProtectSystem":           "setuid helpers and tools may write outside $HOME",
		"ReadOnlyPaths":           "hides or freezes paths extensions use",
		"InaccessiblePaths":       "hides paths extensions use",
		"TemporaryFileSystem":     "hides paths extensions use",
		"PrivateUsers":            "setuid programs fail in a user namespace",
		"PrivateDevices":          "needs PrivateUsers= in a user manager",
		"PrivateNetwork":          "extensions talk to the network",
		"ProtectKernelTunables":   "needs PrivateUsers= in a user manager",
		"ProtectKernelModules":    "needs PrivateUsers= in a user manager",
		"ProtectKernelLogs":       "needs PrivateUsers= in a user manager",
		"ProtectControlGroups":    "needs PrivateUsers= in a user manager",
		"ProtectClock":            "implies NoNewPrivileges= in a user manager",
		"ProtectHostname":         "needs PrivateUsers= in a user manager",
		"ProtectProc":             "needs PrivateUsers= in a user manager",
		"NoNewPrivileges":         "breaks setuid helpers users call",
		"MemoryDenyWriteExecute":  "breaks JITs (Java, Node, PyPy)",
		"SystemCallFilter":        "breaks common programs; implies NoNewPrivileges=",
		"SystemCallArchitectures": "implies NoNewPrivileges= in a user manager",
		"RestrictAddressFamilies": "implies NoNewPrivileges= in a user manager",
		"RestrictNamespaces":      "implies NoNewPrivileges=; breaks sandboxing tools",
		"RestrictSUIDSGID":        "implies NoNewPrivileges= in a user manager",
		"RestrictRealtime":        "implies NoNewPrivileges= in a user manager",
		"LockPersonality":         "implies NoNewPrivileges=; breaks setarch and gdb",
		"CapabilityBoundingSet":   "setuid programs lose the capabilities they need",
		"DynamicUser":             "extensions run as the user",
		"User":                    "extensions run as the user",
		"UMask":                   "files would get other modes than without rukhd",
		"MemoryMax":               "limits every extension together",
		"TasksMax":                "limits every extension together",
	}
	for key, why := range forbidden {
		if v := svc.get("[Service]", key); v != nil {
			t.Errorf("rukhd.service sets %s=%s: %s", key, strings.Join(v, " "), why)
		}
	}
	// The HTTP adapter's unit: rukh mcp --http on its instance's address,
	// stopped as rukhd is, and no more sandboxed than it.
	http := parseUnit(t, "rukh-mcp-http@.service")
	want(http, "rukh-mcp-http@.service", "[Service]", "ExecStart", "/usr/bin/rukh mcp --http %i")
	want(http, "rukh-mcp-http@.service", "[Service]", "KillMode", "mixed")
	want(http, "rukh-mcp-http@.service", "[Service]", "Restart", "on-failure")
	want(http, "rukh-mcp-http@.service", "[Install]", "WantedBy", "default.target")
	for key, why := range forbidden {
		if v := http.get("[Service]", key); v != nil {
			t.Errorf("rukh-mcp-http@.service sets %s=%s: %s", key, strings.Join(v, " "), why)
		}
	}
	for _, file := range []struct {
		name    string
		u       unit
		section string
	}{{"rukhd.socket", sock, "[Socket]"}, {"rukhd.service", svc, "[Service]"}, {"rukh-mcp-http@.service", http, "[Service]"}} {
		if keys := file.u.undocument[file.section]; len(keys) > 0 {
			t.Errorf("%s: %s directives without a comment saying why: %s", file.name, file.section, strings.Join(keys, ", "))
		}
	}
}

// systemdAnalyze returns the path of systemd-analyze, skipping the test
// when it is missing outside CI.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("systemd-analyze is missing (%v): .ci/run must install the systemd package before `make test`", err)
		}
		t.Skipf("systemd-analyze is missing (%v); `apt-get install systemd` enables this test", err)
	}
	return sa
}

// verify writes the units into a fresh directory with ExecStart pointing at
// rukhd and runs `systemd-analyze verify --user` on them. It needs no
// systemd as PID 1 and no user session: verify only loads the units into
// a test manager, whose runtime directory (%t) is a temporary one. It
// returns the lines of output and the exit error.
func verify(t *testing.T, sa, rukhd string, edit func(name, text string) string) ([]string, error) {
	t.Helper()
	dir := t.TempDir()
	units := filepath.Join(dir, "units")
	run := filepath.Join(dir, "run")
	for _, d := range []string{units, run, filepath.Join(dir, "home")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	for _, name := range UnitNames {
		data, err := Units.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if name == "rukhd.service" {
			const exec = "\nExecStart=/usr/bin/rukhd "
			if strings.Count(text, exec) != 1 {
				t.Fatalf("rukhd.service has no single %q line", exec[1:])
			}
			text = strings.Replace(text, exec, "\nExecStart="+rukhd+" ", 1)
		}
		if name == "rukh-mcp-http@.service" {
			// verify checks that the program exists: any built one will do.
			const exec = "\nExecStart=/usr/bin/rukh "
			if strings.Count(text, exec) != 1 {
				t.Fatalf("%s has no single %q line", name, exec[1:])
			}
			text = strings.Replace(text, exec, "\nExecStart="+rukhd+" ", 1)
		}
		if edit != nil {
			text = edit(name, text)
		}
		p := filepath.Join(units, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	// The man page (Documentation=man:rukhd(1)) is not installed here:
	// TestSourceInstall and the packaging test verify the installed units
	// with it.
	cmd := exec.Command(sa, append([]string{"verify", "--user", "--man=no"}, paths...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "HOME="+filepath.Join(dir, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "home", ".config"), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines, err
}

// buildRukhd returns a rukhd built from this tree, once for all tests:
// the real ExecStart command.
func buildRukhd(t *testing.T) string {
	t.Helper()
	rukhd, err := rukhdOnce()
	if err != nil {
		t.Fatal(err)
	}
	return rukhd
}

var buildDir string

var rukhdOnce = sync.OnceValues(func() (string, error) {
	rukhd := filepath.Join(buildDir, "rukhd")
	if out, err := exec.Command("go", "build", "-o", rukhd, "../../cmd/rukhd").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return rukhd, nil
})

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "rukh-systemd-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	os.Exit(code)
}

// TestVerify runs `systemd-analyze verify --user` on the units (ExecStart
// pointing at a freshly built rukhd) and fails on a non-zero exit or any
// line it prints about them. A mistyped directive, for one, is only a
// warning with exit status 0: the second subtest makes sure such a
// warning is caught, so a clean first run means something.
func TestVerify(t *testing.T) {
	sa := systemdAnalyze(t)
	rukhd := buildRukhd(t)

	t.Run("units", func(t *testing.T) {
		lines, err := verify(t, sa, rukhd, nil)
		if err != nil {
			t.Errorf("systemd-analyze verify: %v", err)
		}
		for _, l := range lines {
			if strings.Contains(l, "rukhd") || err != nil {
				t.Errorf("systemd-analyze verify: %s", l)
			} else {
				t.Logf("systemd-analyze verify (not about the units): %s", l)
			}
		}
	})

	t.Run("a warning is caught", func(t *testing.T) {
		lines, err := verify(t, sa, rukhd, func(name, text string) string {
			if name == "rukhd.service" {
				text = strings.Replace(text, "KillMode=mixed", "KillMode=mixed\nKilMode=mixed", 1)
			}
			return text
		})
		found := false
		for _, l := range lines {
			found = found || (strings.Contains(l, "rukhd.service") && strings.Contains(l, "KilMode"))
		}
		if !found {
			t.Errorf("systemd-analyze verify did not warn about a mistyped key (exit: %v):\n%s", err, strings.Join(lines, "\n"))
		}
	})
}

// TestActivation starts rukhd the way the units do, without systemd: the
// service's ExecStart with a listening socket passed as fd 3 (LISTEN_FDS,
// LISTEN_PID, LISTEN_FDNAMES) and a NOTIFY_SOCKET to read its sd_notify
// messages from. rukhd must serve on the passed socket (it creates none
// of its own), say READY=1, and on SIGTERM, or when idle for
// --idle-timeout, say STOPPING=1 and exit 0: a non-zero exit would be
// taken for a crash and restarted (Restart=on-failure).
func TestActivation(t *testing.T) {
	svc := parseUnit(t, "rukhd.service")
	execStart := strings.Fields(svc.get("[Service]", "ExecStart")[0])
	if execStart[0] != "/usr/bin/rukhd" {
		t.Fatalf("ExecStart runs %s, not /usr/bin/rukhd", execStart[0])
	}
	rukhd := buildRukhd(t)

	run := func(t *testing.T, args []string, stop func(*exec.Cmd)) {
		dir := t.TempDir()
		home := filepath.Join(dir, "home")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "rukhd.sock"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		lnf, err := ln.File()
		if err != nil {
			t.Fatal(err)
		}
		defer lnf.Close()
		notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "notify"), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer notify.Close()

		// systemd sets LISTEN_PID to the pid it execs; a shell that
		// execs rukhd has that pid.
		cmd := exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, rukhd}, args...)...)
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "LISTEN_") && k != "NOTIFY_SOCKET" && k != "RUKH_HOME" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "LISTEN_FDS=1", "LISTEN_FDNAMES=rukhd.socket",
			"NOTIFY_SOCKET="+filepath.Join(dir, "notify"), "RUKH_HOME="+home)
		cmd.ExtraFiles = []*os.File{lnf}
		var logs strings.Builder
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("rukhd's output:\n%s", logs.String())
			}
		}()

		expect := func(want string) {
			t.Helper()
			buf := make([]byte, 4096)
			notify.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, err := notify.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %s: %v", want, err)
			}
			if got := string(buf[:n]); !strings.Contains("\n"+got+"\n", "\n"+want+"\n") {
				t.Fatalf("sd_notify: %q, want %s", got, want)
			}
		}
		expect("READY=1")
		if _, err := os.Stat(filepath.Join(home, "run", "rukhd.sock")); err == nil {
			t.Errorf("a socket-activated rukhd created its own socket")
		}
		stop(cmd)
		expect("STOPPING=1")
		select {
		case err := <-exited:
			exited <- err // for the deferred wait
			if err != nil {
				t.Errorf("rukhd exited with %v, want status 0", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("rukhd did not exit after STOPPING=1")
		}
	}

	t.Run("SIGTERM", func(t *testing.T) {
		run(t, execStart[1:], func(cmd *exec.Cmd) { cmd.Process.Signal(syscall.SIGTERM) })
	})
	t.Run("idle-timeout", func(t *testing.T) {
		// ExecStart's arguments, with a timeout a test can wait for.
		var args []string
		for i := 1; i < len(execStart); i++ {
			if execStart[i] == "--idle-timeout" && i+1 < len(execStart) {
				args = append(args, "--idle-timeout", "1s")
				i++
				continue
			}
			args = append(args, execStart[i])
		}
		run(t, args, func(*exec.Cmd) {})
	})
}

// sourceInstall is the README's block that installs the units without
// the package ("Without the package, install the units …").
func sourceInstall(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\nWithout the package, install the units")
	if ok {
		_, rest, ok = strings.Cut(rest, "\n```sh\n")
	}
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed || !strings.Contains(block, "~/.config/systemd/user") {
		t.Fatalf("README.md has no sh block after \"Without the package, install the units\"")
	}
	return block
}

// TestSourceInstall runs the README's install of the units without the
// package, as pasted, into a fresh home, and checks that `man` then finds
// the page their Documentation= names and that `systemd-analyze verify
// --user` accepts the installed units, man page check included: both
// when ~/.local/bin is on PATH (man-db then reads ~/.local/share/man) and
// with the MANPATH the README gives otherwise.
func TestSourceInstall(t *testing.T) {
	sa := systemdAnalyze(t)
	if _, err := exec.LookPath("man"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("man is missing (%v): .ci/run installs lintian, which brings man-db", err)
		}
		t.Skipf("man is missing (%v); `apt-get install man-db` enables this test", err)
	}
	rukhd := buildRukhd(t)
	block := sourceInstall(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     func(home string) []string
		localOn bool // ~/.local/bin exists and is on PATH
	}{
		{"~/.local/bin on PATH", func(home string) []string {
			return []string{"PATH=" + filepath.Join(home, ".local", "bin") + ":" + os.Getenv("PATH")}
		}, true},
		{"MANPATH", func(home string) []string {
			return []string{"PATH=" + os.Getenv("PATH"), "MANPATH=" + filepath.Join(home, ".local", "share", "man") + ":"}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			home, run := filepath.Join(dir, "home"), filepath.Join(dir, "run")
			for _, d := range []string{home, run} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if tc.localOn {
				if err := os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var env []string
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); k != "MANPATH" && k != "PATH" && k != "HOME" && !strings.HasPrefix(k, "XDG_") {
					env = append(env, kv)
				}
			}
			env = append(append(env, "HOME="+home, "XDG_RUNTIME_DIR="+run, "SYSTEMD_LOG_COLOR=0"), tc.env(home)...)

			sh := exec.Command("bash", "-euc", block)
			sh.Dir, sh.Env = root, env
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("the README's install block: %v\n%s\n%s", err, block, out)
			}
			man := exec.Command("man", "-w", "rukhd")
			man.Env = env
			if out, err := man.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), home+"/") {
				t.Errorf("man -w rukhd after the install: %v %q, want a page under %s", err, out, home)
			}

			units := filepath.Join(home, ".config", "systemd", "user")
			entries, err := os.ReadDir(units)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "--user"}
			for _, e := range entries {
				p := filepath.Join(units, e.Name())
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				// ExecStart is the checkout's bin/rukhd, which make build
				// makes: a freshly built one stands in for it.
				text := strings.ReplaceAll(string(data), "ExecStart="+root+"/bin/rukhd ", "ExecStart="+rukhd+" ")
				if e.Name() == "rukhd.service" && text == string(data) {
					t.Fatalf("the installed rukhd.service does not run %s/bin/rukhd:\n%s", root, data)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, p)
			}
			if len(args) == 2 {
				t.Fatalf("the README's install block installs no unit in %s", units)
			}
			cmd := exec.Command(sa, args...)
			cmd.Env = append(env, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Contains(string(out), "rukhd") {
				t.Errorf("systemd-analyze verify of the installed units: %v\n%s", err, out)
			} else if len(out) > 0 {
				t.Logf("systemd-analyze verify (not about the units): %s", out)
			}
		})
	}
}
