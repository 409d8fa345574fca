//go:build !rukh_oneshot

package cli

import (
	"io"
	"testing"
)

func TestValidateFlags(t *testing.T) {
	tests := []struct {
		args     []string
		wantDir  string
		wantJSON bool
	}{
		{[]string{"rel"}, "rel", false},
		{[]string{"--json", "/abs/dir"}, "/abs/dir", true},
		{[]string{"d", "--json=false"}, "d", false},
	}
	for _, tt := range tests {
		var got *ValidateOptions
		f := &Factory{Name: "rukh", IO: IOStreams{Out: io.Discard, ErrOut: io.Discard}}
		cmd := newExtValidateCmd(f, func(o *ValidateOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got == nil || got.Dir != tt.wantDir || got.JSON != tt.wantJSON {
			t.Errorf("%v: options %+v, want dir %q json %v", tt.args, got, tt.wantDir, tt.wantJSON)
		}
	}
}
