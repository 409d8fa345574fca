package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rukh-cli/rukh/internal/exitcode"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// newExtNewCmd is `ext new PUBLISHER.NAME [--lang sh|python|go]`: a new
// release directory with one typed command, a text result a person reads
// as it is, and a test its author can run — valid and packable as
// written, as `gh extension create` gives a first extension.
func newExtNewCmd(f *Factory) *cobra.Command {
	var lang string
	cmd := &cobra.Command{
		Use:   "new PUBLISHER.NAME [--lang sh|python|go]",
		Short: "Create a new extension release directory to start from",
		Long: `Create the directory NAME (the last part of PUBLISHER.NAME) holding a release
of package PUBLISHER.NAME: a descriptor with one command, NAME, that takes
typed inputs and returns its greeting as text over rukh.ipc/1; its program
in sh (with python3 for the JSON), python or Go (with the extsdk), which
ends quietly on Ctrl-C and on SIGTERM; and a test of the program that its
author runs (printed at the end). The release is valid as written:
validate it, pin it, run it.`,
		Args: exactArgs(1, "ext new takes the package name, e.g. acme.hello"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pkg := args[0]
			publisher, name, ok := strings.Cut(pkg, ".")
			if i := strings.LastIndexByte(pkg, '.'); ok {
				name = pkg[i+1:]
			}
			if !ok || !descriptor.ValidPackage(pkg) || !descriptor.ValidPublisher(publisher) || !descriptor.ValidCommandID(name) {
				return &UsageError{fmt.Errorf("%q is not a package name like \"acme.hello\": lowercase words joined by dots, the first the publisher, the last the command", pkg)}
			}
			if slices.Contains(descriptor.ReservedWords, name) {
				return &UsageError{fmt.Errorf("%q is a built-in command of %s; name the package's last part otherwise", name, f.Name)}
			}
			files, test, ok := scaffolds(lang, publisher, pkg, name)
			if !ok {
				return &UsageError{fmt.Errorf("--lang %q is not sh, python or go", lang)}
			}
			dir := f.Abs(name)
			if _, err := os.Lstat(dir); err == nil {
				return &ExitError{Status: exitcode.Failed, Err: fmt.Errorf("%s already exists; choose another name or remove it", name)}
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if err := writeScaffold(filepath.Dir(dir), name, files); err != nil {
				return &ExitError{Status: exitcode.Failed, Err: err}
			}
			pin := ""
			if lang != "go" { // a Go release holds its program once it is built
				m, err := trust.BuildManifest(dir)
				if err != nil {
					return err
				}
				pin = m.Digest()
			}
			fmt.Fprintf(f.IO.Out, "created %s: package %s, command %q (%s)\n\nnext:\n", name, pkg, name, lang)
			if lang == "go" {
				// The workspace names the author's checkout; go.work is
				// never part of a release (trust.DefaultIgnore), and
				// -trimpath keeps the machine's paths out of the binary.
				fmt.Fprintf(f.IO.Out, "  cd %s && go work init . PATH/TO/rukh   # extsdk is not on a module proxy yet; go.work stays out of the release (docs/extensions.md)\n", name)
				fmt.Fprintf(f.IO.Out, "  go build -trimpath -o bin/%s . && go test ./...\n  cd .. && %s ext validate %s\n", name, f.Name, name)
				fmt.Fprintf(f.IO.Out, "  %s ext install %s --pin DIGEST     # the refusal without --pin prints the digest\n", f.Name, name)
			} else {
				fmt.Fprintf(f.IO.Out, "  %s                           # the test of the program\n", test)
				fmt.Fprintf(f.IO.Out, "  %s ext validate %s\n  %s ext install %s --pin %s\n", f.Name, name, f.Name, name, pin)
			}
			fmt.Fprintf(f.IO.Out, "  %s %s Ada --shout\n  %s ext pack %s --key KEY -o %s.tar.gz   # to publish it, signed\n", f.Name, name, f.Name, name, name)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "sh", "the program's language: sh (with python3), python or go")
	return cmd
}

// descriptorTemplate is the scaffold's rukh-extension.json.
const descriptorTemplate = `{
  "schema": "rukh.extension/2",
  "package": "%[1]s",
  "version": "0.1.0",
  "publisher": "%[2]s",
  "commands": [
    {
      "id": "%[3]s",
      "path": ["%[3]s"],
      "summary": "Greet someone",
      "inputs": [
        {"id": "name", "positional": 0, "type": "string", "minLength": 1, "maxLength": 80, "default": "world",
         "description": "Who to greet"},
        {"id": "shout", "type": "boolean", "default": false, "description": "Greet in capitals"}
      ],
      "execute": {"mapping": "managed", "program": "bin/%[3]s", "result": {"kind": "text"}},
      "machine": {"eligible": true, "interaction": "none", "requiredFeatures": ["command-result/1"]},
      "effects": {"class": "none"}
    }
  ]
}
`

// pythonProgram speaks rukh.ipc/1 on its descriptor: one invoke frame in,
// one complete frame out (docs/extensions.md). It ends quietly on SIGINT
// (Ctrl-C at a terminal reaches the program itself) and on SIGTERM (rukh
// stopping the call), never with a KeyboardInterrupt traceback.
const pythonProgram = `import json, os, signal, sys

def stop(signum, frame):
    # Ctrl-C at a terminal sends SIGINT to the program as well as to rukh,
    # and rukh stops the call with SIGTERM: end at once, quietly, with the
    # status a shell gives a program that signal ends (130, 143). The
    # other signal, which comes while it ends, is ignored: raised during
    # the interpreter's shutdown, it would print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signum)

def greet(inputs):
    greeting = "Hello, %%s!" %% inputs["name"]
    if inputs["shout"]:
        greeting = greeting.upper()
    return greeting

def main():
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    ch = os.fdopen(int(os.environ["RUKH_IPC_FD"]), "r+b", buffering=0)
    frame = json.loads(ch.readline())
    inputs = {k: v["value"] for k, v in frame["inputs"].items()}
    report = {"type": "complete", "token": os.environ["RUKH_IPC_TOKEN"], "status": "succeeded",
              "commandResult": {"kind": "text", "text": greet(inputs) + "\n"}}
    ch.write(json.dumps(report, separators=(",", ":")).encode() + b"\n")

main()
`

// pythonTest runs the program as rukh would, on a socket pair.
const pythonTest = `# The test of bin/%[1]s: run it as rukh does, with the channel on a
# socket pair, and check its report. Run: python3 test_%[1]s.py
import json, os, socket, subprocess, unittest

HERE = os.path.dirname(os.path.abspath(__file__))

def call(inputs):
    host, child = socket.socketpair()
    # rukh passes the channel as descriptor 3; the program reads the number
    # from RUKH_IPC_FD, so the test passes it where it is.
    env = dict(os.environ, RUKH_IPC_FD=str(child.fileno()), RUKH_IPC_TOKEN="t" * 64)
    p = subprocess.Popen([os.path.join(HERE, "bin", "%[1]s")], env=env, pass_fds=[child.fileno()])
    child.close()
    frame = {"type": "invoke", "protocol": "rukh.ipc/1", "invocationId": "0" * 32, "command": "%[2]s/%[1]s",
             "transport": "cli", "interactive": False, "deadlineMs": 10000,
             "inputs": {k: {"value": v, "explicit": True} for k, v in inputs.items()}}
    host.sendall(json.dumps(frame).encode() + b"\n")
    report = json.loads(host.makefile("rb").readline())
    host.close()
    p.wait(timeout=10)
    return report

class Test(unittest.TestCase):
    def test_greets(self):
        r = call({"name": "Ada", "shout": False})
        self.assertEqual(r["status"], "succeeded")
        self.assertEqual(r["commandResult"], {"kind": "text", "text": "Hello, Ada!\n"})

    def test_shouts(self):
        r = call({"name": "Ada", "shout": True})
        self.assertEqual(r["commandResult"], {"kind": "text", "text": "HELLO, ADA!\n"})

if __name__ == "__main__":
    unittest.main()
`

const goProgram = `// Command %[1]s is the %[2]s extension: it greets someone, as text.
// extsdk.Run ends ctx on Ctrl-C (SIGINT, which reaches the program
// itself at a terminal) and on SIGTERM (rukh stopping the call); a
// second signal ends the program at once.
package main

import (
	"context"
	"strings"

	"github.com/rukh-cli/rukh/extsdk"
)

func greet(ctx context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
	greeting := "Hello, " + inv.String("name") + "!"
	if inv.Bool("shout") {
		greeting = strings.ToUpper(greeting)
	}
	return extsdk.Text(greeting + "\n"), nil
}

func main() { extsdk.Run(greet) }
`

// goTest speaks the channel's JSON itself: extproto is internal to the
// rukh module, so an extension cannot import it.
const goTest = `package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/extsdk"
)

// TestGreet runs greet as rukh would: an invoke frame in on a socket
// pair, one complete frame out.
func TestGreet(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(fds[0]), "host")
	defer host.Close()
	env := map[string]string{"RUKH_IPC_FD": strconv.Itoa(fds[1]), "RUKH_IPC_TOKEN": "feedface00000000000000000000000000000000000000000000000000000000"}
	done := make(chan int, 1)
	go func() { done <- extsdk.RunMain(extsdk.Options{Getenv: func(k string) string { return env[k] }}, greet) }()
	frame := ` + "`" + `{"type":"invoke","protocol":"rukh.ipc/1","invocationId":"0123456789abcdef0123456789abcdef","command":"%[2]s/%[1]s",` + "`" + ` +
		` + "`" + `"transport":"cli","interactive":false,"deadlineMs":10000,"inputs":{"name":{"value":"Ada","explicit":true},"shout":{"value":true,"explicit":true}}}` + "`" + `
	if _, err := host.Write([]byte(frame + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(host).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no report: %%v", err)
	}
	var report struct {
		Status        string
		CommandResult struct{ Kind, Text string }
	}
	if err := json.Unmarshal(line, &report); err != nil {
		t.Fatalf("report %%s: %%v", line, err)
	}
	if report.Status != "succeeded" || report.CommandResult.Kind != "text" || report.CommandResult.Text != "HELLO, ADA!\n" {
		t.Errorf("report %%s, want HELLO, ADA! as text", line)
	}
	select {
	case status := <-done:
		if status != 0 {
			t.Errorf("exit status %%d", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunMain did not return")
	}
}
`

// scaffolds are the files of a new release in lang, and the command that
// runs its test.
func scaffolds(lang, publisher, pkg, name string) (map[string]string, string, bool) {
	files := map[string]string{"rukh-extension.json": fmt.Sprintf(descriptorTemplate, pkg, publisher, name)}
	switch lang {
	case "sh":
		files["bin/"+name] = "#!/bin/sh\n# The " + pkg + " extension: POSIX sh for the entry point, python3 for the\n# JSON frames of rukh.ipc/1 (docs/extensions.md).\nexec python3 -c '\n" +
			strings.ReplaceAll(fmt.Sprintf(pythonProgram), "'", `'"'"'`) + "'\n"
		files["test_"+name+".py"] = fmt.Sprintf(pythonTest, name, pkg)
		return files, "python3 " + name + "/test_" + name + ".py", true
	case "python":
		files["bin/"+name] = "#!/usr/bin/env python3\n# The " + pkg + " extension: rukh.ipc/1 on the descriptor in RUKH_IPC_FD\n# (docs/extensions.md).\n" + fmt.Sprintf(pythonProgram)
		files["test_"+name+".py"] = fmt.Sprintf(pythonTest, name, pkg)
		return files, "python3 " + name + "/test_" + name + ".py", true
	case "go":
		files["main.go"] = fmt.Sprintf(goProgram, name, pkg)
		files["main_test.go"] = fmt.Sprintf(goTest, name, pkg)
		files["go.mod"] = "module example.com/" + name + "\n\ngo 1.26\n\nrequire github.com/rukh-cli/rukh v0.0.0\n"
		files["bin/.gitignore"] = name + "\n"
		return files, "go test ./...", true
	}
	return nil, "", false
}
