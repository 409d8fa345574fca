package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// tomlTable is s as the table [KEY.NAME] of a TOML file (Codex).
func tomlTable(key string, s *Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s.%s]\ncommand = %s\nargs = [", key, s.Name, tomlString(s.Command))
	for i, a := range s.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(a))
	}
	b.WriteString("]\n")
	if len(s.Env) > 0 {
		names := make([]string, 0, len(s.Env))
		for k := range s.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		b.WriteString("env = { ")
		for i, k := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s = %s", tomlKey(k), tomlString(s.Env[k]))
		}
		b.WriteString(" }\n")
	}
	return b.String()
}

// tomlString is s as a TOML basic string: JSON's escapes are TOML's.
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

func tomlKey(k string) string {
	if bareKey().MatchString(k) {
		return k
	}
	return tomlString(k)
}

// mergeTOML appends s's table to data, a TOML document, or with force
// replaces the table of the same name (its header line to the next header
// that is not one of its own sub-tables). Everything else stays byte for
// byte. A server defined another way (an inline table, dotted keys) is
// not rewritten.
func mergeTOML(data []byte, key string, s *Server, force bool) ([]byte, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("not valid TOML: %w", err)}
	}
	servers, _ := doc[key].(map[string]any)
	if doc[key] != nil && servers == nil {
		return nil, &InvalidError{Err: fmt.Errorf("%q is not a table", key)}
	}
	text := tomlTable(key, s)
	var out []byte
	if _, exists := servers[s.Name]; !exists {
		out = append(bytes.Clone(data), tomlSeparator(data)...)
		out = append(out, text...)
	} else if !force {
		return nil, &ExistsError{Key: key, Name: s.Name}
	} else {
		from, to, ok := tableSpan(data, key, s.Name)
		if !ok {
			return nil, &InvalidError{Err: fmt.Errorf("%s.%s is not a [%s.%s] table of its own (an inline table or dotted keys), which this command does not rewrite; edit it by hand", key, s.Name, key, s.Name)}
		}
		if bytes.HasSuffix(data[from:to], []byte("\n\n")) {
			text += "\n" // the blank line before the next table stays
		}
		out = splice(data, from, to, []byte(text))
	}
	// What was written must parse, and hold the server as given.
	var all map[string]any
	if err := toml.Unmarshal(out, &all); err != nil {
		return nil, fmt.Errorf("the merged file is not valid TOML (a bug: nothing was written): %w", err)
	}
	table, _ := all[key].(map[string]any)
	entry, _ := table[s.Name].(map[string]any)
	if entry == nil || entry["command"] != s.Command || !reflect.DeepEqual(asStrings(entry["args"]), s.Args) || !sameEnv(asEnv(entry["env"]), s.Env) {
		return nil, errors.New("the merged file does not hold the server as given (a bug: nothing was written)")
	}
	return out, nil
}

func asStrings(v any) []string {
	a, _ := v.([]any)
	out := []string{}
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func sameEnv(a, b map[string]string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func asEnv(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := map[string]string{}
	for k, x := range m {
		out[k], _ = x.(string)
	}
	return out
}

// tomlSeparator is what goes between data and an appended table: a blank
// line after data's last line.
func tomlSeparator(data []byte) string {
	switch {
	case len(data) == 0:
		return ""
	case bytes.HasSuffix(data, []byte("\n\n")):
		return ""
	case bytes.HasSuffix(data, []byte("\n")):
		return "\n"
	}
	return "\n\n"
}

// header matches a table header line: [a.b] or [[a.b]], with an optional
// comment; its first group is the name inside the brackets.
var header = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$`)
})

// tableSpan finds the lines of the table [key.name] and its sub-tables:
// from its header line to the next header line outside them (or the end).
func tableSpan(data []byte, key, name string) (from, to int, ok bool) {
	names := map[string]bool{key + "." + name: true, key + `."` + name + `"`: true, `"` + key + `"."` + name + `"`: true}
	off := 0
	from = -1
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if m := header().FindSubmatch(bytes.TrimRight(line, "\r\n")); m != nil {
			h := strings.ReplaceAll(string(m[1]), " ", "")
			own := names[h]
			for n := range names {
				own = own || strings.HasPrefix(h, n+".")
			}
			switch {
			case from < 0 && names[h]:
				from = off
			case from >= 0 && !own:
				return from, off, true
			}
		}
		off += len(line)
	}
	return from, len(data), from >= 0
}
