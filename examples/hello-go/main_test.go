package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
	"github.com/rukh-cli/rukh/internal/release/values"
)

// The test binary is the extension when a test starts it with asExtension.
const asExtension = "HELLO_GO_AS_EXTENSION"

func TestMain(m *testing.M) {
	if os.Getenv(asExtension) == "1" {
		main()
	}
	os.Exit(m.Run())
}

const token = "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface"

// TestHello runs the example as rukh would: inputs typed from CLI words
// by values, the channel on descriptor 3, the result validated against
// the declared schema.
func TestHello(t *testing.T) {
	data, err := os.ReadFile("rukh-extension.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := descriptor.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.Commands[0]
	if !cmd.Eligibility.Eligible {
		t.Fatalf("eligibility %v", cmd.Eligibility)
	}
	for _, tc := range []struct {
		name  string
		words map[string][]string
		want  string
	}{
		{"defaults", nil, `{"count":1,"greeting":"Hello, world!"}`},
		{"given", map[string][]string{"name": {"Ada"}, "count": {"3"}}, `{"count":3,"greeting":"Hello, Ada! Hello, Ada! Hello, Ada!"}`},
		{"largest", map[string][]string{"name": {strings.Repeat("ü", 80)}, "count": {"10"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inputs, verr := values.FromCLI(cmd.Specs(), tc.words)
			if verr != nil {
				t.Fatal(verr)
			}
			raw := run(t, &extproto.Invoke{InvocationID: "0123456789abcdef0123456789abcdef", Command: cmd.Identity,
				Transport: extproto.TransportCLI, DeadlineMs: 10000, Inputs: inputs.AppendJSON(nil)})
			res, rerr := cmd.Execute.Result.Validate(raw, resultschema.DefaultLimits())
			if rerr != nil {
				t.Fatalf("%s: %v", raw, rerr)
			}
			if tc.want != "" {
				var got, want any
				json.Unmarshal(res.Data, &got)
				json.Unmarshal([]byte(tc.want), &want)
				if !jsonEqual(got, want) {
					t.Fatalf("data %s; want %s", res.Data, tc.want)
				}
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// run starts the test binary as the extension and returns the
// commandResult of its one succeeded report.
func run(t *testing.T, in *extproto.Invoke) []byte {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host, end := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "child")
	defer host.Close()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), raceQuickExit(), asExtension+"=1", extproto.EnvFD+"=3", extproto.EnvToken+"="+token,
		extproto.EnvInvocationID+"="+in.InvocationID, extproto.EnvCommand+"="+in.Command)
	c.ExtraFiles = []*os.File{end}
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	end.Close()
	defer c.Process.Kill()
	if _, err := host.Write(in.AppendFrame(nil)); err != nil {
		t.Fatal(err)
	}
	host.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := extproto.NewReader(host)
	f, err := r.Next()
	if err != nil || f.Complete == nil {
		t.Fatalf("frame %+v, %v; stderr %s", f, err, stderr.String())
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the report: %v", err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("exit: %v; stderr %s", err, stderr.String())
	}
	if f.Complete.Token != token || f.Complete.Status != extproto.StatusSucceeded {
		t.Fatalf("report %+v", f.Complete)
	}
	return f.Complete.CommandResult
}

// raceQuickExit keeps a race-enabled child from sleeping a second at exit.
func raceQuickExit() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
