// Package wrapper is the owner's wrapper of a version 1 command: a command
// of its own with typed inputs, whose argv template places each input as
// one argument of the wrapped program (no shell, no re-parsing) and whose
// result is the program's stdout as text (docs/owner.md, "Wrappers";
// ADR 0012).
//
// Package admin turns the profile's wrappers into a release of package
// "owner" that holds a copy of the wrapped release and the core binary;
// the core binary started as `NAMEd --wrapper ID` serves the call (Serve).
package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rukh-cli/rukh/extsdk"
)

// Flag is the core binary's first argument when it serves one wrapper.
const Flag = "--wrapper"

// Package is the package of every wrapper: `owner/ID`.
const Package = "owner"

// FileName is the wrappers' table inside the owner's release.
const FileName = "wrappers.json"

// MaxOutput bounds the wrapped program's stdout, the wrapper's text result.
const MaxOutput = 1 << 20

// Arg is one element of an argv template: a literal, or an input. An
// input becomes one argument (a list, one per item; an absent optional
// input, none); with IfTrue, a boolean input becomes that literal when
// true and nothing when false.
type Arg struct {
	Literal string `json:"-"`
	Input   string `json:"input,omitempty"`
	IfTrue  string `json:"ifTrue,omitempty"`
}

func (a *Arg) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &a.Literal)
	}
	type plain Arg
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf(`an argv element is a string or {"input": ID} (with "ifTrue" for a boolean): %w`, err)
	}
	if p.Input == "" {
		return errors.New(`an argv element that is an object names an input: {"input": ID}`)
	}
	*a = Arg(p)
	return nil
}

func (a Arg) MarshalJSON() ([]byte, error) {
	if a.Input == "" {
		return json.Marshal(a.Literal)
	}
	type plain Arg
	return json.Marshal(plain(a))
}

// Wraps names the version 1 command a wrapper runs.
type Wraps struct {
	Package string `json:"package"`
	Command string `json:"command"`
}

// Entry is one wrapper as its release keeps it: what to run and how.
type Entry struct {
	Wraps   Wraps             `json:"wraps"`
	Digest  string            `json:"digest"`  // the wrapped release
	Program string            `json:"program"` // inside the owner's release
	Args    []string          `json:"args"`    // the wrapped command's fixed arguments
	Argv    []Arg             `json:"argv"`
	Types   map[string]string `json:"types"` // input ID → type ("list:string" for a list)
}

// Check says whether argv names only inputs of types (input ID → type),
// with ifTrue only on a boolean.
func Check(argv []Arg, types map[string]string) error {
	for i, a := range argv {
		if a.Input == "" {
			continue
		}
		t, ok := types[a.Input]
		switch {
		case !ok:
			return fmt.Errorf("argv/%d names input %q, which the wrapper does not declare", i, a.Input)
		case a.IfTrue != "" && t != "boolean":
			return fmt.Errorf("argv/%d: ifTrue applies to a boolean input; %q is %s", i, a.Input, t)
		case t == "boolean" && a.IfTrue == "":
			return fmt.Errorf(`argv/%d: boolean input %q needs "ifTrue": the argument it stands for when true`, i, a.Input)
		case t == "list:boolean":
			return fmt.Errorf("argv/%d: a list of booleans cannot be placed as arguments", i)
		}
	}
	return nil
}

// Values reads an input's value for a template.
type Values interface {
	Has(id string) bool
	String(id string) string
	Decimal(id string) string
	Int(id string) int64
	Float(id string) float64
	Bool(id string) bool
	Strings(id string) []string
	Ints(id string) []int64
	Floats(id string) []float64
}

// BuildArgv builds the wrapped program's arguments: each element of argv
// becomes zero or more whole arguments, never split or re-read.
func BuildArgv(argv []Arg, types map[string]string, in Values) []string {
	var out []string
	for _, a := range argv {
		if a.Input == "" {
			out = append(out, a.Literal)
			continue
		}
		if !in.Has(a.Input) {
			continue
		}
		switch types[a.Input] {
		case "boolean":
			if in.Bool(a.Input) {
				out = append(out, a.IfTrue)
			}
		case "integer":
			out = append(out, strconv.FormatInt(in.Int(a.Input), 10))
		case "number":
			out = append(out, strconv.FormatFloat(in.Float(a.Input), 'g', -1, 64))
		case "decimal":
			out = append(out, in.Decimal(a.Input))
		case "list:string", "list:decimal":
			out = append(out, in.Strings(a.Input)...)
		case "list:integer":
			for _, v := range in.Ints(a.Input) {
				out = append(out, strconv.FormatInt(v, 10))
			}
		case "list:number":
			for _, v := range in.Floats(a.Input) {
				out = append(out, strconv.FormatFloat(v, 'g', -1, 64))
			}
		default:
			out = append(out, in.String(a.Input))
		}
	}
	return out
}

// Serve is the core binary started as `NAMEd --wrapper ID` inside the
// owner's release: it reads the release's table, runs the wrapped
// program with the arguments the template makes of the typed inputs, and
// reports its stdout as the text result. A program that exits non-zero
// fails the call, with its status.
func Serve(id string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrapper:", err)
		return 70
	}
	root := filepath.Dir(filepath.Dir(exe)) // RELEASE/bin/NAMEd
	data, err := os.ReadFile(filepath.Join(root, FileName))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrapper:", err)
		return 70
	}
	var table map[string]*Entry
	if err := json.Unmarshal(data, &table); err != nil {
		fmt.Fprintf(os.Stderr, "wrapper: %s: %v\n", FileName, err)
		return 70
	}
	e, ok := table[id]
	if !ok {
		fmt.Fprintf(os.Stderr, "wrapper: no wrapper %q in this release\n", id)
		return 64
	}
	return extsdk.RunMain(extsdk.Options{}, func(ctx context.Context, inv *extsdk.Invocation) (extsdk.Result, error) {
		return e.run(ctx, root, inv)
	})
}

func (e *Entry) run(ctx context.Context, root string, in Values) (extsdk.Result, error) {
	args := append(append([]string(nil), e.Args...), BuildArgv(e.Argv, e.Types, in)...)
	cmd := exec.CommandContext(ctx, filepath.Join(root, filepath.FromSlash(e.Program)), args...)
	out := &limitedBuffer{max: MaxOutput}
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	err := cmd.Run()
	if out.over {
		return extsdk.Result{}, fmt.Errorf("%s/%s wrote more than %d bytes to stdout, the most a wrapper's result holds", e.Wraps.Package, e.Wraps.Command, MaxOutput)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return extsdk.Result{}, extsdk.WithExitStatus(fmt.Errorf("%s/%s exited with status %d", e.Wraps.Package, e.Wraps.Command, exit.ExitCode()), 1)
	}
	if err != nil {
		return extsdk.Result{}, err
	}
	return extsdk.Text(strings.ToValidUTF8(out.String(), "\uFFFD")), nil
}

// limitedBuffer keeps at most max bytes and notes that more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	keep := p
	if b.Len()+len(p) > b.max {
		b.over = true
		keep = p[:max(0, b.max-b.Len())]
	}
	b.Buffer.Write(keep)
	return len(p), nil
}
