package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// confineRelease is a release of the probe extension (testdata/confine):
// `probe WHAT ARG` tries something and reports it; `read PATH` declares
// files.read on path:PATH, and `read PATH --what readother --other P`
// reads P instead: a command that lies about its access.
const confineRelease = `{"schema":"rukh.extension/2","package":"t.confine","version":"1.0.0","publisher":"t","commands":[
 {"id":"probe","path":["probe"],"summary":"Probe",
  "inputs":[{"id":"what","positional":0,"type":"string","required":true},{"id":"arg","positional":1,"type":"string","default":""}],
  "execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},
  "machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"read"}},
 {"id":"read","path":["read"],"summary":"Read a file",
  "inputs":[{"id":"arg","positional":0,"type":"string","required":true},{"id":"what","type":"string","enum":["read","readother"],"default":"read"},
            {"id":"other","type":"string","default":""}],
  "execute":{"mapping":"managed","program":"bin/probe","result":{"kind":"text"}},
  "machine":{"eligible":true,"requiredFeatures":["command-result/1"]},
  "access":[{"action":"files.read","resource":"path:{arg}"}],"effects":{"class":"read"}}]}`

// probeRelease builds the probe (testdata/confine/probe) into DIR/rel
// with the descriptor desc, and returns the release's directory.
func probeRelease(t *testing.T, dir, desc string) string {
	t.Helper()
	rel := filepath.Join(dir, "rel")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(rel, "bin", "probe"), "./testdata/confine/probe").CombinedOutput(); err != nil {
		t.Fatalf("go build probe: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(rel, "rukh-extension.json"), []byte(desc), 0o644); err != nil {
		t.Fatal(err)
	}
	return rel
}

type confined struct {
	dir, rukh, home, srv string
	env                  []string
}

// newConfined puts rukh and rukh-sandbox side by side, installs the
// probe, and applies a profile whose CLI and MCP task have enforcement
// enf and may read path:SRV/public/**.
func newConfined(t *testing.T, enf string) *confined {
	t.Helper()
	c := &confined{dir: testhome.TempDir(t)}
	bin := filepath.Join(c.dir, "bin")
	c.rukh = cliInto(t, bin)
	rel := probeRelease(t, c.dir, confineRelease)
	c.home = filepath.Join(c.dir, "rukh-home")
	a := testhome.InstallPinned(t, filepath.Join(c.home, "data"), rel)
	c.srv = filepath.Join(c.dir, "srv")
	for name, content := range map[string]string{"public/a.txt": "public a", "public/b.txt": "public b", "private/a.txt": "private a", "user/.ssh/id_ed25519": "KEY"} {
		p := filepath.Join(c.srv, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(c.srv, "private/a.txt"), filepath.Join(c.srv, "public/link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(c.srv, "private"), filepath.Join(c.srv, "public/linkdir")); err != nil {
		t.Fatal(err)
	}
	// A relative link into private/sub, whose `..` the kernel takes from
	// private/sub, and a link to a file that does not exist.
	if err := os.MkdirAll(filepath.Join(c.srv, "private/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.srv, "private/secret"), []byte("private secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../private/sub", filepath.Join(c.srv, "public/lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../private/nothing.txt", filepath.Join(c.srv, "public/dangling")); err != nil {
		t.Fatal(err)
	}
	limits := ""
	if enf != "host" {
		limits = `,"openFiles":64`
	}
	prof := fmt.Sprintf(`{"endpointNamespace":"t","cli":{"task":"confined"},"mcp":{"expose":["t.confine/*"],"task":"confined"},
		"tasks":{"confined":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":%q%s,
		                     "allow":[{"action":"files.read","resource":"path:%s/public/**"}]}}}`, enf, limits, c.srv)
	if _, _, err := a.ApplyProfile([]byte(prof)); err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), "RUKH_HOME="+c.home, "HOME="+filepath.Join(c.srv, "user"))
	return c
}

// run runs rukh ARGS with extra descriptors 7, 8 and 9 left open by the
// caller, and returns stdout, stderr and the exit status.
func (c *confined) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(c.rukh, args...)
	cmd.Env = c.env
	var extra []*os.File
	for i := range 3 {
		f, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("inherited-%d", 7+i)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		extra = append(extra, f)
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	cmd.ExtraFiles = append([]*os.File{devnull, devnull, devnull, devnull}, extra...) // fds 3–6, then 7–9
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), status
}

// TestConfinement runs the probe under each enforcement profile through
// the CLI and checks what it could do: each row is the probe's own report
// (or the CLI's refusal) under host, restricted and strict.
func TestConfinement(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A Unix socket in a directory no task grants (the session bus,
	// docker.sock or an agent's socket, say): Landlock does not control
	// connecting to one by its path, the seccomp filter keeps a strict
	// command from creating any.
	udir, err := os.MkdirTemp("", "rukh-unix-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(udir)
	usock := filepath.Join(udir, "s.sock")
	ul, err := net.Listen("unix", usock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// host and restricted read what the owner may: /etc/shadow when the
	// tests run as root, not otherwise.
	shadow := "ok: "
	if f, err := os.Open("/etc/shadow"); err != nil {
		shadow = "error: open /etc/shadow: permission denied"
	} else {
		f.Close()
	}
	// Each profile on both hosts: through rukhd the client starts the
	// command (the helper included) with the spawn the daemon sends.
	for _, run := range []struct{ enf, mode string }{
		{"host", "in-process"}, {"restricted", "in-process"}, {"strict", "in-process"},
		{"host", "daemon"}, {"restricted", "daemon"}, {"strict", "daemon"},
	} {
		enf := run.enf
		name := enf
		if run.mode == "daemon" {
			name += "/daemon"
		}
		t.Run(name, func(t *testing.T) {
			c := newConfined(t, enf)
			if run.mode == "daemon" {
				h := &testHost{Mode: "daemon", Daemon: true, Rukh: c.rukh, Rukhd: filepath.Join(filepath.Dir(c.rukh), "rukhd")}
				h.serve(t, c.home)
			}
			strict := enf == "strict"
			outside := filepath.Join(c.dir, "outside.txt")
			for _, tc := range []struct {
				name   string
				args   []string
				want   string // a prefix of stdout: "ok: …" or "error: …"
				status int
			}{
				{"shadow", []string{"probe", "read", "/etc/shadow"}, pick(strict, "error: open /etc/shadow: permission denied", shadow), 0},
				{"ssh key", []string{"probe", "read", filepath.Join(c.srv, "user/.ssh/id_ed25519")}, pick(strict, "error: open "+filepath.Join(c.srv, "user/.ssh/id_ed25519")+": permission denied", "ok: KEY"), 0},
				{"tcp to 127.0.0.1", []string{"probe", "tcp", ln.Addr().String()}, pick(strict, "error: dial tcp "+ln.Addr().String()+": socket: permission denied", "ok: "), 0},
				{"udp to 127.0.0.1", []string{"probe", "udp", ln.Addr().String()}, pick(strict, "error: listen udp 127.0.0.1:0: socket: permission denied", "ok: "), 0},
				{"unix socket", []string{"probe", "unix", usock}, pick(strict, "error: dial unix "+usock+": socket: permission denied", "ok: "), 0},
				{"write outside", []string{"probe", "write", outside}, pick(strict, "error: open "+outside+": permission denied", "ok: "), 0},
				{"private tmpdir", []string{"probe", "tmpdir"}, pick(enf == "host", "ok: ", "ok: "+os.TempDir()+"/rukh-"), 0},
				{"granted path", []string{"read", filepath.Join(c.srv, "public/a.txt")}, "ok: public a", 0},
				{"not granted", []string{"read", filepath.Join(c.srv, "private/a.txt")}, "", 77},
				{"traversal", []string{"read", filepath.Join(c.srv, "public/../private/a.txt")}, "", 77},
				{"symlink out", []string{"read", filepath.Join(c.srv, "public/link.txt")}, "", 77},
				{"symlinked dir, missing file", []string{"read", filepath.Join(c.srv, "public/linkdir/new.txt")}, "", 77},
				// The kernel applies `..` after following lnk: the text
				// says public/secret, the file opened is private/secret.
				{"link then ..", []string{"read", c.srv + "/public/lnk/../secret"}, "", 77},
				{"dangling link out", []string{"read", filepath.Join(c.srv, "public/dangling")}, "", 77},
				{"lying command", []string{"read", filepath.Join(c.srv, "public/a.txt"), "--what", "readother", "--other", filepath.Join(c.srv, "public/b.txt")},
					pick(strict, "error: open "+filepath.Join(c.srv, "public/b.txt")+": permission denied", "ok: public b"), 0},
				{"no_new_privs", []string{"probe", "nnp"}, pick(enf == "host", "ok: NoNewPrivs: 0", "ok: NoNewPrivs: 1"), 0},
				{"open files limit", []string{"probe", "limit", "Max open files"}, pick(enf == "host", "ok: Max open files", "ok: Max open files 64 64 files"), 0},
			} {
				out, stderr, status := c.run(t, tc.args...)
				if status != tc.status || !strings.HasPrefix(out, tc.want) {
					t.Errorf("%s: exit %d, stdout %q (stderr %q); want exit %d and stdout starting %q", tc.name, status, out, stderr, tc.status, tc.want)
				}
				if tc.status == 77 && !strings.Contains(stderr, "does not allow files.read") {
					t.Errorf("%s: stderr %q", tc.name, stderr)
				}
			}
			if _, err := os.Stat(outside); strict && err == nil {
				t.Error("a strict command wrote outside its grants")
			}
			// The private TMPDIR is gone after the call.
			if enf != "host" {
				out, _, _ := c.run(t, "probe", "tmpdir")
				dir := strings.TrimPrefix(strings.TrimSpace(out), "ok: ")
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("the private TMPDIR %s is still there", dir)
				}
			}
			// Descriptors 7–9 the caller left open never reach the command.
			out, _, _ := c.run(t, "probe", "fds")
			if !strings.HasPrefix(out, "ok: ") || strings.Contains(out, "inherited-") {
				t.Errorf("descriptors of the command: %s", out)
			}
		})
	}
}

// mcp starts `rukh mcp` with a go-sdk client and returns the session and
// the tool names by title.
func (c *confined) mcp(t *testing.T) (*sdk.ClientSession, map[string]string) {
	t.Helper()
	cmd := exec.Command(c.rukh, "mcp")
	cmd.Env = c.env
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	_, names := toolsByTitle(t, cs)
	return cs, names
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// A profile the machine cannot apply is refused, never run weaker: with no
// rukh-sandbox helper, a strict call is rejected/enforcement_unavailable
// (exit 69 at the CLI, an isError result over MCP) and nothing runs.
func TestEnforcementUnavailable(t *testing.T) {
	c := newConfined(t, "strict")
	os.Remove(filepath.Join(c.dir, "bin", "rukh-sandbox"))
	c.env = append(c.env, "PATH=/usr/bin:/bin")
	_, stderr, status := c.run(t, "probe", "tmpdir")
	if status != 69 || !strings.Contains(stderr, `enforcement is "strict", but rukh-sandbox is not installed`) {
		t.Errorf("exit %d, stderr %q; want 69 and the missing helper named", status, stderr)
	}
	ctx := context.Background()
	cs, names := c.mcp(t)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names["Probe"], Arguments: map[string]any{"what": "tmpdir"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || !strings.Contains(string(raw), `"outcome":"rejected","reason":"enforcement_unavailable"`) {
		t.Errorf("MCP: %s", raw)
	}
	out, _, _ := c.run(t, "invocations", "list")
	if strings.Count(out, "enforcement_unavailable") != 2 {
		t.Errorf("records:\n%s", out)
	}
}

// Under strict, the same holds through MCP: the granted path is read, a
// path outside the grant is a denied result, and the probe cannot reach
// what was not granted.
func TestConfinementMCP(t *testing.T) {
	c := newConfined(t, "strict")
	ctx := context.Background()
	cs, names := c.mcp(t)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"Read a file", map[string]any{"arg": filepath.Join(c.srv, "public/a.txt")}, `"text":"ok: public a"`},
		{"Read a file", map[string]any{"arg": filepath.Join(c.srv, "private/a.txt")}, `"reason":"denied"`},
		{"Read a file", map[string]any{"arg": filepath.Join(c.srv, "public/../private/a.txt")}, `"reason":"denied"`},
		{"Probe", map[string]any{"what": "read", "arg": "/etc/shadow"}, `"text":"error: open /etc/shadow: permission denied"`},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: names[tc.tool], Arguments: tc.args})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s %v: %s, want %s", tc.tool, tc.args, raw, tc.want)
		}
	}
}

// A command dies with its host: after kill -9 of `rukh CMD`, the command
// (which ignores SIGTERM) is gone at once; what it started in the
// background is killed, and the record resolved host_lost, when the next
// call is admitted. Nothing is re-run.
func TestChildDiesWithHost(t *testing.T) {
	dir := testhome.TempDir(t)
	rukh := cliInto(t, filepath.Join(dir, "bin"))
	rel := filepath.Join(dir, "rel")
	runs := filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> " + runs + "\nsleep 300 &\necho $! > " + dir + "/grandchild\ntrap '' TERM\necho $$ > " + dir + "/child\nwait\n"
	if err := os.MkdirAll(filepath.Join(rel, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(rel, "bin", "stubborn"), []byte(script), 0o755)
	os.WriteFile(filepath.Join(rel, "bin", "ok"), []byte("#!/bin/sh\nprintf '{\"type\":\"complete\",\"token\":\"%s\",\"status\":\"succeeded\",\"commandResult\":{\"kind\":\"text\",\"text\":\"ok\"}}\\n' \"$RUKH_IPC_TOKEN\" >&3\n"), 0o755)
	os.WriteFile(filepath.Join(rel, "rukh-extension.json"), []byte(`{"schema":"rukh.extension/2","package":"t.host","version":"1.0.0","publisher":"t","commands":[
		{"id":"stubborn","path":["stubborn"],"summary":"Ignores SIGTERM","execute":{"mapping":"managed","program":"bin/stubborn","result":{"kind":"text"}},"effects":{"class":"none"}},
		{"id":"ok","path":["ok"],"summary":"Ok","execute":{"mapping":"managed","program":"bin/ok","result":{"kind":"text"}},"effects":{"class":"none"}}]}`), 0o644)
	home := filepath.Join(dir, "home")
	testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	env := append(os.Environ(), "RUKH_HOME="+home)

	host := exec.Command(rukh, "stubborn")
	host.Env = env
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	readPID := func(name string) int {
		for range 1500 { // a hang guard: 15 s
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && strings.HasSuffix(string(b), "\n") {
				var pid int
				fmt.Sscan(string(b), &pid)
				return pid
			}
			sleep10ms()
		}
		t.Fatalf("%s never started", name)
		return 0
	}
	child, grandchild := readPID("child"), readPID("grandchild")
	host.Process.Kill() // kill -9
	host.Wait()
	waitGone(t, child, "the command")
	// The next admission reaps the rest and resolves the record.
	ok := exec.Command(rukh, "ok")
	ok.Env = env
	if out, err := ok.CombinedOutput(); err != nil {
		t.Fatalf("rukh ok: %v: %s", err, out)
	}
	waitGone(t, grandchild, "the command's background process")
	list := exec.Command(rukh, "invocations", "list")
	list.Env = env
	out, _ := list.Output()
	if !strings.Contains(string(out), "t.host/stubborn  cli  execution_failed  host_lost") {
		t.Errorf("records:\n%s", out)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 1 {
		t.Errorf("the command ran %d times", strings.Count(string(b), "run"))
	}
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	if err := testhome.ExitOf(pid, 15*time.Second); err != nil { // a hang guard
		t.Errorf("%s (pid %d) outlived its host: %v", what, pid, err)
	}
}

func sleep10ms() { time.Sleep(10 * time.Millisecond) }

// A data dir that another user could change is refused (exit 75) with
// what to do, before anything is read from it.
func TestInsecureDataDir(t *testing.T) {
	dir := testhome.TempDir(t)
	rukh := cliInto(t, filepath.Join(dir, "bin"))
	home := filepath.Join(dir, "home")
	data := filepath.Join(home, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(data, 0o777)
	cmd := exec.Command(rukh, "ext", "list")
	cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 75 || !strings.Contains(string(out), data+" may be written by others (mode 0777); run `chmod 700 "+data+"`") {
		t.Errorf("%v: %s", err, out)
	}
	if os.Getuid() == 0 {
		os.Chmod(data, 0o700)
		os.Chown(data, 65534, 65534)
		cmd := exec.Command(rukh, "ext", "list")
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 75 || !strings.Contains(string(out), "belongs to uid 65534") {
			t.Errorf("another user's data dir: %v: %s", err, out)
		}
	}
}

// A strict command cannot use rukhd to get out: it cannot create a
// socket to reach the daemon's (the helper's seccomp filter). The daemon
// also refuses a peer in another user namespace, whose uid may look like
// the owner's (a container's, another sandbox's). (A host command may
// talk to it: it has the user's rights anyway.)
func TestStrictCannotReachDaemon(t *testing.T) {
	c := newConfined(t, "strict")
	rukhd := filepath.Join(c.dir, "bin", "rukhd")
	if out, err := exec.Command("go", "build", "-o", rukhd, "../cmd/rukhd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	d := exec.Command(rukhd)
	d.Env = c.env
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { d.Process.Signal(syscall.SIGTERM); d.Wait() }()
	sock := filepath.Join(c.home, "run", "rukhd.sock")
	up := false
	for range 1500 { // a hang guard: 15 s
		if _, _, status := c.run(t, "daemon", "status"); status == 0 {
			up = true
			break
		}
		sleep10ms()
	}
	if !up {
		t.Fatal("rukhd never answered `rukh daemon status`")
	}
	out, stderr, status := c.run(t, "probe", "daemon", sock)
	if status != 0 || out != "error: dial unix "+sock+": socket: permission denied" || strings.Contains(out, "answered") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the daemon out of reach", status, out, stderr)
	}
	// The daemon's own check, should a peer in another user namespace
	// reach its socket: a client in one of its own is refused.
	cl := exec.Command(c.rukh, "daemon", "status")
	cl.Env = c.env
	cl.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}}
	b, err := cl.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Skipf("no user namespace for the client: %v", err)
	}
	if err == nil || !strings.Contains(string(b), "this daemon serves its own user namespace only") {
		t.Errorf("a client in another user namespace: %v %q; want the daemon's refusal", err, b)
	}
}
