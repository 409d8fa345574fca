package cliname

import "testing"

func TestName(t *testing.T) {
	if got := Name(); got != Default {
		t.Fatalf("Name() before Set = %q, want %q", got, Default)
	}
	t.Cleanup(func() { Set(Default) })
	Set("acme")
	Set("") // keeps acme
	for _, c := range []struct{ got, want string }{
		{Name(), "acme"},
		{Cmd("daemon status"), "`acme daemon status`"},
		{Daemon(), "acmed"},
		{Helper(), "acme-sandbox"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
