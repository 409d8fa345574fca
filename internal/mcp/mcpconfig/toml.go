package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlTable is s as the table [KEY.NAME] of a TOML file (Codex).
func tomlTable(key string, s *Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s.%s]\ncommand = %s\nargs = %s\n", key, s.Name, tomlString(s.Command), tomlArray(s.Args))
	if len(s.Env) > 0 {
		fmt.Fprintf(&b, "env = %s\n", tomlEnv(s.Env))
	}
	return b.String()
}

// tomlInline is s as an inline table, the value of NAME in a servers
// table that is itself inline: { command = …, args = […], env = {…} }.
func tomlInline(s *Server) string {
	text := "{ command = " + tomlString(s.Command) + ", args = " + tomlArray(s.Args)
	if len(s.Env) > 0 {
		text += ", env = " + tomlEnv(s.Env)
	}
	return text + " }"
}

func tomlArray(a []string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, x := range a {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(x))
	}
	b.WriteString("]")
	return b.String()
}

func tomlEnv(env map[string]string) string {
	var b strings.Builder
	b.WriteString("{ ")
	for i, k := range slices.Sorted(maps.Keys(env)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = %s", tomlKey(k), tomlString(env[k]))
	}
	b.WriteString(" }")
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

// mergeTOML adds s to data, a TOML document: as a [KEY.NAME] table
// appended at the end, or, when the servers are an inline table
// (KEY = { … }), as one more member of it. With force it replaces the
// server of the same name where it is: a [KEY.NAME] table (its header line
// to the next header that is not one of its own sub-tables), or an inline
// table (NAME = { … }). Everything else stays byte for byte. A server
// spelled as dotted keys (KEY.NAME.command = …) is not rewritten: the
// error says which line to change. A server that is already there exactly
// as given leaves data as it is.
func mergeTOML(data []byte, key string, s *Server, force bool) ([]byte, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, &InvalidError{Err: tomlError(err)}
	}
	servers, _ := doc[key].(map[string]any)
	if doc[key] != nil && servers == nil {
		return nil, &InvalidError{Err: fmt.Errorf("%q is not a table", key)}
	}
	old, exists := servers[s.Name]
	switch {
	case exists && holdsServer(old, s):
		return data, nil // already configured: nothing to change
	case exists && !force:
		return nil, &ExistsError{Key: key, Name: s.Name}
	}
	at, err := locateTOML(data, key, s.Name)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch {
	case !exists && at.inline >= 0:
		text := ", " + tomlKey(s.Name) + " = " + tomlInline(s)
		if at.members && bytes.ContainsRune(data[at.open:at.last], '\n') {
			// A table over several lines (TOML 1.1) gets a line more.
			text = ",\n" + lineIndent(data, at.last) + tomlKey(s.Name) + " = " + tomlInline(s)
		}
		if !at.members {
			text = " " + tomlKey(s.Name) + " = " + tomlInline(s) + " "
		}
		out = splice(data, at.inline, at.inline, []byte(text))
	case !exists:
		out = append(bytes.Clone(data), tomlSeparator(data)...)
		out = append(out, tomlTable(key, s)...)
	case at.value >= 0:
		out = splice(data, at.value, at.end, []byte(tomlInline(s)))
	default:
		from, to, ok := tableSpan(data, key, s.Name)
		if !ok {
			line := 1 + bytes.Count(data[:max(at.dotted, 0)], []byte("\n"))
			return nil, &InvalidError{Err: fmt.Errorf("line %d: %s.%s is written as dotted keys (%s.%s.command = …), which this command does not rewrite; "+
				"replace its lines with a [%s.%s] table, or remove them, and run it again", line, key, s.Name, key, s.Name, key, s.Name)}
		}
		text := tomlTable(key, s)
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
	if !holdsServer(table[s.Name], s) {
		return nil, errors.New("the merged file does not hold the server as given (a bug: nothing was written)")
	}
	return out, nil
}

// holdsServer reports whether v, a server as decoded from TOML, is s:
// its command, args and env, and nothing else.
func holdsServer(v any, s *Server) bool {
	entry, _ := v.(map[string]any)
	for k := range entry {
		if k != "command" && k != "args" && k != "env" {
			return false
		}
	}
	return entry != nil && entry["command"] == s.Command && reflect.DeepEqual(asStrings(entry["args"]), nonNilArgs(s.Args)) && sameEnv(asEnv(entry["env"]), s.Env)
}

func nonNilArgs(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

// tomlError is a TOML syntax error with its line and column, as JSON's
// say them.
func tomlError(err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return fmt.Errorf("not valid TOML: line %d, column %d: %s", line, col, strings.TrimPrefix(de.Error(), "toml: "))
	}
	return fmt.Errorf("not valid TOML: %w", err)
}

// tomlPlace is where the servers and one server are in a TOML document,
// as byte offsets (-1: not there).
type tomlPlace struct {
	// inline is where a member is added to the servers' inline table
	// (KEY = { … }): after its last member, or after its "{" when it has
	// none (members is false).
	inline  int
	members bool
	// open is the offset of the inline table's "{", last that of its
	// last member.
	open, last int
	// value and end are the span of the server's value when it is an
	// inline table (NAME = { … } inside the servers' table, or
	// KEY.NAME = { … }).
	value, end int
	// dotted is the first key-value inside the server (KEY.NAME.x = …).
	dotted int
}

// locateTOML finds the servers key and the server name in data, a valid
// TOML document, with go-toml's parser, which keeps each expression's
// bytes.
func locateTOML(data []byte, key, name string) (tomlPlace, error) {
	at := tomlPlace{inline: -1, value: -1, end: -1, dotted: -1}
	var p unstable.Parser
	p.Reset(data)
	var table []string // the keys of the current [table]
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyOf(e.Key())
			continue
		case unstable.KeyValue:
		default:
			continue
		}
		full := append(slices.Clone(table), keyOf(e.Key())...)
		v := e.Value()
		switch {
		case slices.Equal(full, []string{key}) && v.Kind == unstable.InlineTable:
			at.open = int(v.Raw.Offset)
			at.inline = at.open + 1
			for it := v.Children(); it.Next(); {
				m := it.Node()
				if m.Kind != unstable.KeyValue {
					continue
				}
				at.members, at.last = true, int(m.Raw.Offset)
				at.inline = int(m.Raw.Offset + m.Raw.Length)
				if mv := m.Value(); slices.Equal(keyOf(m.Key()), []string{name}) && mv.Kind == unstable.InlineTable {
					at.value, at.end = int(mv.Raw.Offset), int(m.Raw.Offset+m.Raw.Length)
				}
			}
		case slices.Equal(full, []string{key, name}) && v.Kind == unstable.InlineTable:
			at.value, at.end = int(v.Raw.Offset), int(e.Raw.Offset+e.Raw.Length)
		case len(full) > 2 && slices.Equal(full[:2], []string{key, name}) && at.dotted < 0:
			at.dotted = int(e.Raw.Offset)
		}
	}
	if err := p.Error(); err != nil {
		return at, fmt.Errorf("the file does not parse again (a bug: nothing was written): %w", err)
	}
	return at, nil
}

// keyOf is the parts of a (dotted) key, unquoted.
func keyOf(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
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

// tableSpan finds the lines of the table [key.name] and its sub-tables,
// however their headers spell the keys (bare, quoted, with spaces): from
// its header line to the next header line outside them (or the end).
func tableSpan(data []byte, key, name string) (from, to int, ok bool) {
	var p unstable.Parser
	p.Reset(data)
	from = -1
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.Table && e.Kind != unstable.ArrayTable {
			continue
		}
		first := e.Key()
		if !first.Next() {
			continue
		}
		line := bytes.LastIndexByte(data[:first.Node().Raw.Offset], '\n') + 1
		k := keyOf(e.Key())
		own := len(k) >= 2 && k[0] == key && k[1] == name
		switch {
		case from < 0 && own && len(k) == 2:
			from = line
		case from >= 0 && !own:
			return from, line, true
		}
	}
	return from, len(data), from >= 0
}
