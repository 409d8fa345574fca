package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/testhome"
)

// TestMCPProcess drives a real `rukh mcp` process over stdio with the
// go-sdk client: listing, a call, and a noisy extension that writes
// megabytes to stdout and stderr while the client keeps calling — the
// protocol stream on stdout must stay valid (I11).
func TestMCPProcess(t *testing.T) {
	dir := t.TempDir()
	rukh := filepath.Join(dir, "rukh")
	if out, err := exec.Command("go", "build", "-o", rukh, "../cmd/rukh").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rel := filepath.Join(dir, "src")
	report := `printf '{"type":"complete","token":"%s","status":"succeeded","commandResult":{"kind":"text","text":"ok"}}\n' "$RUKH_IPC_TOKEN" >&3`
	files := map[string]string{
		"bin/quiet": "#!/bin/sh\n" + report + "\n",
		"bin/noisy": "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' '{'\nhead -c 3000000 /dev/zero >&2\n" + report + "\n",
		"rukh-extension.json": `{"schema":"rukh.extension/2","package":"test.mcp","version":"1.0.0","publisher":"test","commands":[
			{"id":"quiet","path":["quiet"],"summary":"Quiet","execute":{"mapping":"managed","program":"bin/quiet","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]}},
			{"id":"noisy","path":["noisy"],"summary":"Noisy","execute":{"mapping":"managed","program":"bin/noisy","result":{"kind":"text"}},"machine":{"eligible":true,"requiredFeatures":["command-result/1"]}}]}`,
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(rel, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rel, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	a := testhome.InstallPinned(t, filepath.Join(home, "data"), rel)
	if _, _, err := a.ApplyProfile([]byte(`{"endpointNamespace":"t","cli":{"task":"owner"},"mcp":{"expose":["test.mcp/*"],"task":"agent"},
		"tasks":{"owner":{"commands":["*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"},
		         "agent":{"commands":["test.*/*"],"deadlineMs":20000,"maxConcurrent":8,"enforcement":"host"}}}`)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(rukh, "mcp", "--log-file", filepath.Join(dir, "mcp.log"))
	cmd.Env = append(os.Environ(), "RUKH_HOME="+home)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
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
			name := tools["Quiet"]
			if i%2 == 0 {
				name = tools["Noisy"]
			}
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name})
			if err != nil {
				errs <- err
				return
			}
			raw, _ := json.Marshal(r.StructuredContent)
			if r.IsError || !strings.Contains(string(raw), `"outcome":"succeeded"`) {
				errs <- fmt.Errorf("%s: %s", name, raw)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The drained output is counted in the invocation records, for the owner.
	list := exec.Command(rukh, "invocations", "list", "--json", "-n", "6")
	list.Env = cmd.Env
	out, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "stdout 3000000 bytes (2934464 dropped)") {
		t.Errorf("the records do not show the drained output:\n%s", out)
	}
}
