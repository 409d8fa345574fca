package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// linked is one module whose code is in the package's static binaries:
// the main module (the CLI's own code), a dependency, or Go's standard
// library and runtime (Path "std").
type linked struct {
	Path, Version string
	Dir           string // its source: the module cache, a replace target or GOROOT
	Main          bool
}

// linkedModules lists the modules the packages of cmd/NAME and cmd/NAMEd
// come from, as go build links them for GOOS=linux with CGO_ENABLED=0:
// the main module first, then the standard library, then the others by
// path.
func linkedModules(module, name string, env []string) ([]linked, error) {
	const format = `{{if .Standard}}std{{else}}{{with .Module}}{{.Path}}	{{.Version}}	{{.Main}}	{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}{{end}}{{end}}`
	cmd := exec.Command("go", "list", "-deps", "-f", format, "./cmd/"+name, "./cmd/"+name+"d")
	cmd.Dir, cmd.Env = module, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps: %v\n%s", err, stderr.Bytes())
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %v", err)
	}
	goversion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOVERSION: %v", err)
	}
	seen := map[string]bool{}
	var mods []linked
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		if line == "std" {
			mods = append(mods, linked{Path: "std", Version: strings.TrimSpace(string(goversion)), Dir: strings.TrimSpace(string(goroot))})
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[3] == "" {
			return nil, fmt.Errorf("go list -deps: cannot tell where module %q is", line)
		}
		mods = append(mods, linked{Path: f[0], Version: f[1], Main: f[2] == "true", Dir: f[3]})
	}
	slices.SortFunc(mods, func(a, b linked) int {
		rank := func(m linked) int {
			switch {
			case m.Main:
				return 0
			case m.Path == "std":
				return 1
			}
			return 2
		}
		if r := rank(a) - rank(b); r != 0 {
			return r
		}
		return strings.Compare(a.Path, b.Path)
	})
	if len(mods) == 0 || !mods[0].Main {
		return nil, fmt.Errorf("go list -deps: no main module in %s", module)
	}
	return mods, nil
}

// licenseFile is the license text of the module in dir: the first of its
// LICENSE, LICENCE or COPYING files (with or without .txt or .md), or ""
// when it has none.
func licenseFile(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	re := regexp.MustCompile(`(?i)^(licen[cs]e|copying)(\.(txt|md))?$`)
	for _, e := range entries {
		if !e.IsDir() && re.MatchString(e.Name()) {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return "", err
			}
			return string(data), nil
		}
	}
	return "", nil
}

// licenseMarkers tell the licenses a text grants by a phrase each of them
// has, in the SPDX short names DEP-5 uses. A text may grant several (the
// MCP Go SDK is under Apache-2.0 and MIT).
var licenseMarkers = []struct{ name, marker string }{
	{"Apache-2.0", "Apache License"},
	{"MIT", "Permission is hereby granted, free of charge"},
	{"BSD-3-Clause", "Neither the name"},
	{"BSD-2-Clause", "Redistribution and use in source and binary forms"},
	{"ISC", "Permission to use, copy, modify, and/or distribute"},
	{"MPL-2.0", "Mozilla Public License"},
}

// licenseName is the DEP-5 License short name of a license text, or ""
// when it is none mkdeb knows.
func licenseName(text string) string {
	flat := strings.Join(strings.Fields(text), " ")
	var names []string
	for _, l := range licenseMarkers {
		if strings.Contains(flat, l.marker) {
			if l.name == "BSD-2-Clause" && slices.Contains(names, "BSD-3-Clause") {
				continue
			}
			names = append(names, l.name)
		}
	}
	return strings.Join(names, " and ")
}

var copyrightRE = regexp.MustCompile(`^\s*Copyright\s+(\(c\)|\(C\)|©|[0-9])`)

// copyrightLines are the copyright notices of a license text, e.g.
// "Copyright (c) 2013 Ben Johnson".
func copyrightLines(text string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); copyrightRE.MatchString(l) && !strings.Contains(l, "[yyyy]") {
			l = strings.TrimSpace(strings.TrimPrefix(l, "Copyright"))
			lines = append(lines, strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(l, "All rights reserved.")), "."))
		}
	}
	return lines
}

// copyright is the package's /usr/share/doc/NAME/copyright, in the
// machine-readable format (DEP-5): the CLI's own code under the license
// its module's LICENSE (or COPYING) file grants, and, because the
// binaries are static, every module linked into them, each with its
// license text as the module ships it. A module with no license file,
// as this repository is today, is said to grant none.
func copyright(name, version string, mods []linked) (string, error) {
	var b strings.Builder
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	fmt.Fprintf(&b, "Upstream-Name: %s\n", name)
	fmt.Fprintf(&b, "Source: https://%s\n", mods[0].Path)
	field(&b, "Comment", wrap(fmt.Sprintf("The binaries of %s %s are statically linked: they contain the Go "+
		"modules below, named by module path and version, and Go's standard library and runtime (std).", name, version)))
	for _, m := range mods {
		text, err := licenseFile(m.Dir)
		if err != nil {
			return "", fmt.Errorf("the license of %s: %w", m.Path, err)
		}
		b.WriteString("\n")
		switch {
		case m.Main:
			b.WriteString("Files: *\n")
		case m.Path == "std":
			fmt.Fprintf(&b, "Files: std@%s/*\n", m.Version)
		default:
			fmt.Fprintf(&b, "Files: %s@%s/*\n", m.Path, m.Version)
		}
		holders := copyrightLines(text)
		if len(holders) == 0 {
			who := "the " + m.Path + " authors"
			if m.Main {
				who = "the " + renamed("Rukh", name) + " authors"
			}
			holders = []string{who}
		}
		field(&b, "Copyright", strings.Join(holders, "\n"))
		if text == "" {
			what := "The module " + m.Path + " " + m.Version
			if m.Main {
				what = "The source of " + name + " " + version + " (the module " + m.Path + ")"
			}
			field(&b, "License", "none\n"+wrap(what+" has no LICENSE or COPYING file, and its "+
				"documentation names no license: it grants none. Its authors keep every right copyright law gives them."))
			continue
		}
		short := licenseName(text)
		if short == "" {
			return "", fmt.Errorf("mkdeb cannot tell the license of %s (%s): add a phrase of it to licenseMarkers", m.Path, m.Dir)
		}
		if strings.Contains(short, "Apache-2.0") {
			text = commonApache(text)
		}
		if notice, err := os.ReadFile(filepath.Join(m.Dir, "NOTICE")); err == nil {
			// The Apache License asks that a NOTICE file go with the work.
			field(&b, "Comment", "Its NOTICE file:\n"+string(notice))
		}
		field(&b, "License", short+"\n"+text)
	}
	return b.String(), nil
}

// commonApache is a license text with the Apache License 2.0's own text,
// from its title through END OF TERMS AND CONDITIONS and the APPENDIX
// after it, replaced by where Debian keeps it (policy 12.5: common
// licenses are referred to, not copied). What else the text says (a
// relicensing note, another license beside it) stays.
func commonApache(text string) string {
	lines := strings.Split(text, "\n")
	find := func(from int, match func(string) bool) int {
		for i := from; i < len(lines); i++ {
			if match(strings.TrimSpace(lines[i])) {
				return i
			}
		}
		return -1
	}
	start := find(0, func(l string) bool { return l == "Apache License" })
	end := -1
	if start >= 0 {
		end = find(start, func(l string) bool { return l == "END OF TERMS AND CONDITIONS" })
		if end < 0 && find(start, func(l string) bool { return strings.HasPrefix(l, "TERMS AND CONDITIONS FOR USE") }) >= 0 {
			end = len(lines) - 1 // a copy cut short after its terms (cobra's): the rest is the license
		}
	}
	if end < 0 {
		return text + "\n\nOn Debian systems, the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0."
	}
	// The appendix (how to apply the license) follows in most copies.
	if next := find(end+1, func(l string) bool { return l != "" }); next >= 0 && strings.HasPrefix(strings.TrimSpace(lines[next]), "APPENDIX") {
		if last := find(next, func(l string) bool { return strings.HasSuffix(l, "limitations under the License.") }); last >= 0 {
			end = last
		}
	}
	ref := "The Apache License, Version 2.0: on Debian systems, its text is in\n/usr/share/common-licenses/Apache-2.0."
	return strings.Join(append(append(append([]string{}, lines[:start]...), ref), lines[end+1:]...), "\n")
}

// field writes a DEP-5 field: value's first line beside the name, the
// others indented by a space, an empty line as " .".
func field(b *strings.Builder, name, value string) {
	lines := strings.Split(strings.TrimRight(value, "\n"), "\n")
	fmt.Fprintf(b, "%s: %s\n", name, strings.TrimSpace(lines[0]))
	for _, l := range lines[1:] {
		l = strings.TrimRight(l, " \t\r\f")
		if l == "" {
			l = "."
		}
		b.WriteString(" " + l + "\n")
	}
}

// wrap breaks text into lines of at most 72 characters at spaces.
func wrap(text string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		switch {
		case n == 0:
		case n+1+len(w) > 72:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
