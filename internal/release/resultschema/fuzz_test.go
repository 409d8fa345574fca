package resultschema

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// FuzzCheck parses and checks arbitrary schemas. Parse must not panic; an
// accepted schema's JSON must parse to the same JSON; a rejected one has
// well-formed errors, never one saying the reference compiler disagrees.
func FuzzCheck(f *testing.F) {
	for _, tc := range invalidSchemas {
		f.Add([]byte(tc.schema))
	}
	for _, s := range validSchemas {
		f.Add([]byte(s))
	}
	f.Add([]byte(statusSchema))
	f.Add([]byte(depthSchema))
	lim := DefaultLimits()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, errs := Parse(data, lim)
		if s == nil {
			if len(errs) == 0 {
				t.Fatal("no schema and no errors")
			}
			for _, e := range errs {
				checkError(t, e, "schema_")
			}
			return
		}
		if errs != nil {
			t.Fatalf("a schema and errors %v", errs)
		}
		if _, err := reference(s); err != nil {
			t.Fatalf("the subset accepted a schema the reference compiler refuses: %v\n%s", err, data)
		}
		again, errs := Parse(s.JSON(), lim)
		if errs != nil {
			t.Fatalf("JSON() %s does not parse again: %v", s.JSON(), errs)
		}
		if !bytes.Equal(again.JSON(), s.JSON()) {
			t.Fatalf("JSON() changed from %s to %s", s.JSON(), again.JSON())
		}
	})
}

// checkError fails t unless e is a well-formed error of its family.
func checkError(t *testing.T, e *Error, prefix string) {
	t.Helper()
	if !strings.HasPrefix(string(e.Code), prefix) || e.Message == "" {
		t.Fatalf("malformed error %#v", e)
	}
	if e.Path != "" && e.Path[0] != '/' {
		t.Fatalf("path %q is no JSON pointer", e.Path)
	}
	if strings.Contains(e.Error(), "%!") {
		t.Fatalf("bad format in %q", e.Error())
	}
}

// FuzzValidateResult validates arbitrary command results against
// statusSchema. Validate must not panic; what it accepts must validate
// again to the same data; and where both judge, it must agree with the
// compiled reference implementation.
func FuzzValidateResult(f *testing.F) {
	for _, tc := range structuredCases {
		f.Add([]byte(tc.raw))
	}
	for _, tc := range textCases {
		f.Add([]byte(tc.raw))
	}
	r := Result{Kind: Structured, Schema: mustParse(f, statusSchema)}
	lim := testLimits()
	f.Fuzz(func(t *testing.T, raw []byte) {
		if cr, err := (Result{Kind: Text}).Validate(raw, lim); (cr == nil) == (err == nil) || (err != nil && !strings.HasPrefix(string(err.Code), "result_")) {
			t.Fatalf("as text: %+v, %v", cr, err)
		}
		cr, err := r.Validate(raw, lim)
		if err != nil {
			if cr != nil {
				t.Fatalf("a result and an error %v", err)
			}
			checkError(t, err, "result_")
			if err.Code == CodeResultTimeout {
				t.Fatalf("the default step budget refused %d bytes within the other limits", len(raw))
			}
			if err.Code == CodeResultInvalid {
				compareWithReference(t, r, raw)
			}
			return
		}
		if cr.Kind != Structured || cr.Text != "" || !strictjsonValid(cr.Data) {
			t.Fatalf("bad result %+v", cr)
		}
		again, err := r.Validate([]byte(`{"kind":"structured","data":`+string(cr.Data)+`}`), lim)
		if err != nil {
			t.Fatalf("validated data %s does not validate again: %v", cr.Data, err)
		}
		if !bytes.Equal(again.Data, cr.Data) {
			t.Fatalf("data changed from %s to %s", cr.Data, again.Data)
		}
		compareWithReference(t, r, raw)
	})
}

func strictjsonValid(b []byte) bool {
	_, err := strictjson.Parse(b, strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 100, MaxMembers: 1 << 20})
	return err == nil
}
