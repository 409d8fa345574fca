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
	for _, n := range []string{"Acme", "ac%me", "a b", "a/b", "-acme", "9acme", "acmé", "a_b", "a.b"} {
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

func TestValid(t *testing.T) {
	for n, want := range map[string]bool{
		"rukh": true, "a": true, "acme-2": true, "my-cli": true,
		"": false, "A": false, "2a": false, "-a": false, "a b": false, "a%": false, "é": false, "a\n": false,
	} {
		if got := valid(n); got != want {
			t.Errorf("valid(%q) = %v, want %v", n, got, want)
		}
	}
}
