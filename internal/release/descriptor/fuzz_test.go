package descriptor_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// FuzzDecode feeds arbitrary bytes to Decode. It must never panic, every
// error must carry a code and a pointer whose parent exists in the
// document, and every accepted descriptor must keep its own promises.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"deploy", "greet", "legacy"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", dir, descriptor.FileName))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		doc(cmd("c", `"inputs":[{"id":"a","type":"integer","minimum":1,"maximum":5,"default":3}]`)),
		doc(cmdx("c", `"path":["c"]`, exec(`,"result":{"kind":"structured","schema":{"type":"array","items":{"type":"string"},"maxItems":2}}`), eligible)),
		docv("rukh.extension/1", cmd("c", "")),
		in(`{"id":"a","positional":0,"type":"list","items":{"type":"decimal","minimum":"0.5"},"maxItems":3}`),
		`{"schema":"rukh.extension/2","package":"a","package":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := descriptor.Decode(data)
		if err != nil {
			var errs descriptor.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			root, perr := strictjson.Parse(data, strictjson.Limits{MaxBytes: descriptor.MaxBytes, MaxDepth: descriptor.MaxDepth, MaxMembers: descriptor.MaxMembers})
			for _, e := range errs {
				if e.Code == "" || e.Message == "" {
					t.Fatalf("problem without code or message: %+v", e)
				}
				if perr == nil && !parentExists(root, e.Path) {
					t.Fatalf("problem %s points at %q, whose parent is not in the document", e.Code, e.Path)
				}
			}
			return
		}
		for _, c := range d.Commands {
			if c.Identity != d.Package+"/"+c.ID {
				t.Fatalf("identity %q for package %q id %q", c.Identity, d.Package, c.ID)
			}
			if c.Eligibility.Eligible != (len(c.Eligibility.Reasons) == 0) {
				t.Fatalf("eligibility %v with reasons %v", c.Eligibility.Eligible, c.Eligibility.Reasons)
			}
			if c.Eligibility.Eligible && (d.Format() == 1 || c.Execute.Mapping != descriptor.Managed || c.Execute.Result == nil) {
				t.Fatalf("%s is eligible but breaks I2", c.Identity)
			}
			for _, in := range c.Inputs {
				if (in.Flag == "") == (in.Positional < 0) {
					t.Fatalf("%s input %s: flag %q positional %d", c.Identity, in.ID, in.Flag, in.Positional)
				}
				if in.Required && in.Default != nil {
					t.Fatalf("%s input %s is required and has a default", c.Identity, in.ID)
				}
			}
		}
	})
}

// parentExists reports whether the value holding ptr's last token exists
// in root (the token itself may be a missing member).
func parentExists(root *strictjson.Value, ptr string) bool {
	if ptr == "" {
		return true
	}
	tokens := strings.Split(ptr[1:], "/")
	v := root
	for _, tok := range tokens[:len(tokens)-1] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v.Kind {
		case strictjson.Object:
			v = v.Get(tok)
		case strictjson.Array:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v.Items) {
				return false
			}
			v = v.Items[i]
		default:
			return false
		}
		if v == nil {
			return false
		}
	}
	return true
}
