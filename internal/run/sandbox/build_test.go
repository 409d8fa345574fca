package sandbox_test

import (
	"debug/elf"
	"strings"
	"testing"
)

// TestBuildStripped checks that the helper Build gives (make build's, the
// .deb's, an embedder's) is stripped: no symbol table and no debugging
// sections, which lintian reports as unstripped-binary-or-object.
func TestBuildStripped(t *testing.T) {
	f, err := elf.Open(helper)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB || strings.HasPrefix(s.Name, ".debug") {
			t.Errorf("%s has section %s (%v): it is not stripped", helper, s.Name, s.Type)
		}
	}
}
