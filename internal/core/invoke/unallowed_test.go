package invoke_test

import (
	"testing"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
)

// Unallowed names an access request a task grants for no inputs (every
// call is denied), and nothing when some inputs could be allowed.
func TestUnallowed(t *testing.T) {
	rules := func(r ...string) []profile.Rule {
		var out []profile.Rule
		for i := 0; i < len(r); i += 2 {
			out = append(out, profile.Rule{Action: r[i], Resource: r[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		allow  []profile.Rule
		access []descriptor.Access
		want   string // the action denied, "" for none
	}{
		{"no access", nil, nil, ""},
		{"no rule", nil, []descriptor.Access{{Action: "deploy.read", Resource: "env:{env}"}}, "deploy.read"},
		{"another action", rules("deploy.write", "*"), []descriptor.Access{{Action: "deploy.read", Resource: "env:{env}"}}, "deploy.read"},
		{"action pattern, placeholder", rules("deploy.*", "env:prod"), []descriptor.Access{{Action: "deploy.read", Resource: "env:{env}"}}, ""},
		{"constant resource not covered", rules("net.connect", "host:a.example"), []descriptor.Access{{Action: "net.connect", Resource: "host:b.example"}}, "net.connect"},
		{"constant resource covered", rules("net.connect", "host:*.example"), []descriptor.Access{{Action: "net.connect", Resource: "host:b.example"}}, ""},
		{"second request", rules("a.read", "*"), []descriptor.Access{{Action: "a.read", Resource: "x"}, {Action: "b.read", Resource: "y"}}, "b.read"},
		{"path cleaned", rules("fs.read", "path:/srv/**"), []descriptor.Access{{Action: "fs.read", Resource: "path:/srv/a/../b"}}, ""},
		{"path outside", rules("fs.read", "path:/srv/**"), []descriptor.Access{{Action: "fs.read", Resource: "path:/srv/../etc/passwd"}}, "fs.read"},
		{"relative path", rules("fs.read", "*"), []descriptor.Access{{Action: "fs.read", Resource: "path:srv"}}, "fs.read"},
	} {
		a, ok := invoke.Unallowed(profile.Task{Allow: tc.allow}, &descriptor.Command{Access: tc.access})
		if got := map[bool]string{true: a.Action}[ok]; got != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.name, got, a, tc.want)
		}
	}
}
