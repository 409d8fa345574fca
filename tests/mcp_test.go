package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// TestMCPProcess drives a real `rukh mcp` process over stdio with the
// go-sdk client, in process and through rukhd (forEachHost): listing,
// calls, and a noisy extension that writes megabytes to stdout and
// stderr while the client keeps calling — the protocol stream on stdout
// must stay valid (I11). The quiet command answers its parent's pid: the
// host that ran it, `rukh mcp` in process and the daemon otherwise.
func TestMCPProcess(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		dir := testhome.TempDir(t)
		rel := filepath.Join(dir, "src")
		report := func(text string) string {
			return `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"%s"}}\n' "$RUKH_IPC_TOKEN" "` + text + `" >&3`
		}
		files := map[string]string{
			"bin/quiet": "#!/bin/sh\n" + report(hostPID) + "\n",
			"bin/noisy": "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' '{'\nhead -c 3000000 /dev/zero >&2\n" + report("ok") + "\n",
			"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.mcp","version":"1.0.0","publisher":"test","commands":[
			{"id":"quiet","path":["quiet"],"summary":"Quiet","execute":{"mapping":"managed","program":"bin/quiet","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
			{"id":"noisy","path":["noisy"],"summary":"Noisy","execute":{"mapping":"managed","program":"bin/noisy","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
		}
		testhome.WriteFiles(t, rel, files)
		home := filepath.Join(dir, "home")
		a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
		if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.mcp/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
			t.Fatal(err)
		}
		srv := h.serve(t, home)

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.Command(h.Rukh, "mcp", "--log-file", filepath.Join(dir, "mcp.log"))
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		host := strconv.Itoa(srv.parentOf(cmd.Process.Pid))
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools := map[string]string{}
		for _, tool := range res.Tools {
			tools[tool.Title] = tool.Name
		}
		if len(tools) != 2 {
			t.Fatalf("tools: %v", tools)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name, text := tools["Quiet"], host
				if i%2 == 0 {
					name, text = tools["Noisy"], "ok"
				}
				r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name})
				if err != nil {
					errs <- err
					return
				}
				raw, _ := json.Marshal(r.StructuredContent)
				if want := `"commandResult":{"kind":"text","text":"` + text + `"}`; r.IsError || !strings.Contains(string(raw), `"outcome":"succeeded"`) || !strings.Contains(string(raw), want) {
					errs <- fmt.Errorf("%s: %s; want succeeded with %s (the %s host's pid %s)", name, raw, want, h.Mode, host)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// The drained output is counted in the invocation records, for the owner.
		list := exec.Command(h.Rukh, "invocations", "list", "--json", "-n", "6")
		list.Env = cmd.Env
		out, err := list.Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "stdout 3000000 bytes (2934464 dropped)") {
			t.Errorf("the records do not show the drained output:\n%s", out)
		}
	})
}

// TestMCPSignalAndDiagnostics drives a real `rukh mcp` process, in
// process and through rukhd (forEachHost): the diagnostics log names the
// invocation on every line, marks a cut and logs each outcome — through
// rukhd, the daemon sends each drained line back as a Diag event and
// `rukh mcp` writes it to the same --log-file; SIGTERM with a call
// running stops that call at once (through rukhd, a Cancel frame), records
// it cancelled/interrupted, kills its process group, answers the call and
// exits 130. The slow command reports its parent: the host that ran it.
func TestMCPSignalAndDiagnostics(t *testing.T) {
	forEachHost(t, func(t *testing.T, h *testHost) {
		dir := testhome.TempDir(t)
		rel := filepath.Join(dir, "src")
		pidFile := filepath.Join(dir, "slow.pid")
		report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok"}}\n' "$RUKH_IPC_TOKEN" >&3`
		files := map[string]string{
			// 70,000 bytes of stdout in lines of 99 + newline, then a last
			// line without a newline; two lines on stderr.
			"bin/noisy": "#!/bin/sh\ni=0\nwhile [ $i -lt 700 ]; do printf '%099d\\n' $i; i=$((i+1)); done\nprintf 'tail'\necho warn1 >&2\necho warn2 >&2\n" + report + "\n",
			"bin/slow":  "#!/bin/sh\necho $$ " + hostPID + " > " + pidFile + "\nsleep 120\n" + report + "\n",
			"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.sig","version":"1.0.0","publisher":"test","commands":[
			{"id":"noisy","path":["noisy"],"summary":"Noisy","execute":{"mapping":"managed","program":"bin/noisy","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}},
			{"id":"slow","path":["slow"],"summary":"Slow","execute":{"mapping":"managed","program":"bin/slow","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]},"effects":{"class":"none"}}]}`,
		}
		testhome.WriteFiles(t, rel, files)
		home := filepath.Join(dir, "home")
		a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
		if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.sig/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":300000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
			t.Fatal(err)
		}
		srv := h.serve(t, home)

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		logFile := filepath.Join(dir, "mcp.log")
		cmd := exec.Command(h.Rukh, "mcp", "--log-file", logFile)
		cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
		var stderr testhome.Buffer
		cmd.Stderr = &stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools := map[string]string{}
		for _, tool := range res.Tools {
			tools[tool.Title] = tool.Name
		}
		if r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tools["Noisy"]}); err != nil || r.IsError {
			t.Fatalf("noisy: %v %+v", err, r)
		}
		slow := make(chan string, 1)
		go func() {
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tools["Slow"]})
			if err != nil {
				slow <- err.Error()
				return
			}
			raw, _ := json.Marshal(r.StructuredContent)
			slow <- string(raw)
		}()
		var pid, ppid int
		for pid == 0 {
			if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
				fmt.Sscan(string(data), &pid, &ppid)
			}
			if ctx.Err() != nil {
				t.Fatal("the slow command never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if want := srv.parentOf(cmd.Process.Pid); ppid != want {
			t.Errorf("the slow command runs under pid %d, want the %s host's %d (rukh mcp is %d)", ppid, h.Mode, want, cmd.Process.Pid)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("rukh mcp exited %d (%v) after SIGTERM, want 130", code, err)
		}
		if strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("rukh mcp printed an error for being stopped: %q", stderr.String())
		}
		if got := <-slow; !strings.Contains(got, `"outcome":"cancelled","reason":"interrupted"`) {
			t.Errorf("the interrupted call was answered with %s, want its cancelled/interrupted result", got)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the slow command (pid %d) outlived rukh mcp", pid)
		}
		list := exec.Command(h.Rukh, "invocations", "list", "--json", "-n", "1")
		list.Env = cmd.Env
		out, err := list.Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"outcome": "cancelled"`) || !strings.Contains(string(out), `"reason": "interrupted"`) {
			t.Errorf("the interrupted call was recorded as\n%s", out)
		}

		// The log: every line of an invocation names it; the cut and both
		// outcomes are there.
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z [0-9a-f]{32}  (start |end |stdout\| |stderr\| |stdout: )`)
		var ids = map[string]bool{}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if strings.HasPrefix(l, "rukh mcp: ") || strings.HasPrefix(l, "time=") {
				continue // the banner and the server's own log
			}
			if !line.MatchString(l) {
				t.Errorf("log line without its invocation: %q", l)
				continue
			}
			ids[strings.Fields(l)[1]] = true
		}
		if len(ids) != 2 {
			t.Errorf("lines of %d invocations, want 2", len(ids))
		}
		log := string(data)
		for _, want := range []string{
			"start test.sig/noisy (mcp, task agent)",
			"stdout| " + fmt.Sprintf("%099d", 0) + "\n",
			"stdout: cut after 65536 bytes; 4468 more bytes dropped",
			"stderr| warn1\n",
			"end succeeded (exit 0; stdout 70004 bytes, 4468 dropped; stderr 12 bytes, 0 dropped)",
			"start test.sig/slow (mcp, task agent)",
			"end cancelled/interrupted",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
	})
}
