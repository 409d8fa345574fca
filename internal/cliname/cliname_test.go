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

func TestSetRefusesBadNames(t *testing.T) {
	for _, n := range []string{"Acme", "ac%me", "a b", "a/b", "-acme", "9acme"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Set(%q) did not panic", n)
				}
			}()
			Set(n)
		}()
		if Name() != Default {
			t.Errorf("after Set(%q): Name() = %q", n, Name())
		}
	}
}
