package main

import (
	"strings"
	"testing"
)

func TestLicenseName(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"MIT License\n\nPermission is hereby granted, free of charge, to any person", "MIT"},
		{"Redistribution and use in source and binary forms, with or without\nmodification ... * Neither the name of Google", "BSD-3-Clause"},
		{"Redistribution and use in source and binary forms, with or without modification", "BSD-2-Clause"},
		{"   Apache License\n   Version 2.0, January 2004", "Apache-2.0"},
		{"transition\n---\n Apache License\n...\n---\nMIT License\nPermission is hereby granted, free of charge,", "Apache-2.0 and MIT"},
		{"All rights reserved.", ""},
	} {
		if got := licenseName(tc.text); got != tc.want {
			t.Errorf("licenseName(%.40q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// The Apache License's own text becomes a reference to Debian's copy;
// what surrounds it stays.
func TestCommonApache(t *testing.T) {
	text := "A note before.\n---\n   Apache License\n   Version 2.0\n   TERMS AND CONDITIONS FOR USE\n   1. Definitions.\n   END OF TERMS AND CONDITIONS\n\n   APPENDIX: How to apply\n   limitations under the License.\n---\nMIT License\n"
	got := commonApache(text)
	for _, want := range []string{"A note before.\n---\n", "/usr/share/common-licenses/Apache-2.0.\n---\nMIT License\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("commonApache: no %q in\n%s", want, got)
		}
	}
	for _, gone := range []string{"Definitions", "APPENDIX", "END OF TERMS"} {
		if strings.Contains(got, gone) {
			t.Errorf("commonApache kept %q:\n%s", gone, got)
		}
	}
	// A copy cut short after its terms (cobra's) is the license to its end.
	if got := commonApache("Apache License\nTERMS AND CONDITIONS FOR USE\n9. Accepting Warranty."); strings.Contains(got, "Warranty") {
		t.Errorf("commonApache of a cut copy kept its terms:\n%s", got)
	}
}

func TestChangelogName(t *testing.T) {
	for v, want := range map[string]string{"1.2.3": "changelog.gz", "0.0.0~dev+abc1234.dirty": "changelog.gz", "1.2.3-1": "changelog.Debian.gz"} {
		if got := changelogName(v); got != want {
			t.Errorf("changelogName(%q) = %q, want %q", v, got, want)
		}
	}
}
