package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/tailscale/hujson"
)

// mergeJSON adds (or, with force, replaces) the member name of the object
// key at the top of data, a JSON document (comments and trailing commas
// allowed where the client allows them: they are kept). Everything
// outside the inserted text stays byte for byte; the inserted text
// follows the indentation around it. Empty data is a new document.
func mergeJSON(data []byte, key, name string, entry any, force bool) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		out, err := indented(map[string]any{key: map[string]any{name: entry}}, "", "  ")
		return append(out, '\n'), err
	}
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("not valid JSON: %w", err)}
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, &InvalidError{Err: errors.New("the top level is not a JSON object")}
	}
	var out []byte
	switch servers := member(top, key); {
	case servers == nil:
		out, err = insertMember(data, &root, key, map[string]any{name: entry})
	case servers.Value.Kind() != '{':
		return nil, &InvalidError{Err: fmt.Errorf("%q is not an object", key)}
	default:
		obj := servers.Value.(*hujson.Object)
		if old := member(obj, name); old != nil {
			if sameJSON(*old, entry) {
				return data, nil // already configured: nothing to change
			}
			if !force {
				return nil, &ExistsError{Key: key, Name: name}
			}
			text, err := indented(entry, lineIndent(data, old.StartOffset), indentUnit(data))
			if err != nil {
				return nil, err
			}
			out = splice(data, old.StartOffset, old.EndOffset, text)
		} else {
			out, err = insertMember(data, servers, name, entry)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := holds(out, data, key, name, entry); err != nil {
		return nil, err
	}
	return out, nil
}

// sameJSON reports whether v (comments and all) holds exactly entry.
func sameJSON(v hujson.Value, entry any) bool {
	v = v.Clone()
	v.Standardize()
	var have, want any
	if json.Unmarshal(v.Pack(), &have) != nil {
		return false
	}
	b, err := json.Marshal(entry)
	if err != nil || json.Unmarshal(b, &want) != nil {
		return false
	}
	return reflect.DeepEqual(have, want)
}

// member is the value of obj's member name (the last, if repeated), or nil.
func member(obj *hujson.Object, name string) *hujson.Value {
	var v *hujson.Value
	for i := range obj.Members {
		var n string
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && json.Unmarshal(lit, &n) == nil && n == name {
			v = &obj.Members[i].Value
		}
	}
	return v
}

// insertMember adds "name": value as the last member of the object obj
// (a value of data), on a line of its own with the indentation of the
// members before it, or inside an empty object one step in.
func insertMember(data []byte, obj *hujson.Value, name string, value any) ([]byte, error) {
	o := obj.Value.(*hujson.Object)
	quoted, _ := json.Marshal(name)
	if n := len(o.Members); n > 0 {
		last := o.Members[n-1]
		indent := lineIndent(data, last.Name.StartOffset)
		sep := ",\n" + indent
		if !bytes.ContainsRune(data[obj.StartOffset:last.Name.StartOffset], '\n') {
			sep, indent = ", ", "" // an object on one line stays on one line
		}
		text, err := indented(value, indent, indentUnit(data))
		if indent == "" {
			text, err = json.Marshal(value)
		}
		if err != nil {
			return nil, err
		}
		return splice(data, last.Value.EndOffset, last.Value.EndOffset, append([]byte(sep+string(quoted)+": "), text...)), nil
	}
	outer := lineIndent(data, obj.StartOffset)
	inner := outer + indentUnit(data)
	text, err := indented(value, inner, indentUnit(data))
	if err != nil {
		return nil, err
	}
	body := "{\n" + inner + string(quoted) + ": " + string(text) + "\n" + outer + "}"
	if len(bytes.TrimSpace(o.AfterExtra)) > 0 {
		// A comment inside the empty object: keep it, after the member.
		body = "{\n" + inner + string(quoted) + ": " + string(text) + string(o.AfterExtra) + "}"
	}
	return splice(data, obj.StartOffset, obj.EndOffset, []byte(body)), nil
}

// indented is v as JSON indented by unit, whose lines after the first
// start with prefix (the first goes where the value goes).
func indented(v any, prefix, unit string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, unit)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// lineIndent is the whitespace that starts the line holding data[off].
func lineIndent(data []byte, off int) string {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	end := start
	for end < len(data) && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}

// indentUnit is one step of the document's indentation: a tab if its
// lines are indented with tabs, else two spaces.
func indentUnit(data []byte) string {
	if bytes.Contains(data, []byte("\n\t")) {
		return "\t"
	}
	return "  "
}

func splice(data []byte, from, to int, text []byte) []byte {
	out := make([]byte, 0, len(data)+len(text))
	out = append(out, data[:from]...)
	out = append(out, text...)
	return append(out, data[to:]...)
}

// holds checks what a merge wrote: it parses (as strict JSON when the
// file was), its key.name is entry, and nothing else changed.
func holds(out, before []byte, key, name string, entry any) error {
	if json.Valid(before) && !json.Valid(out) {
		return errors.New("the merged file is not valid JSON (a bug: nothing was written)")
	}
	std, err := hujson.Standardize(bytes.Clone(out))
	if err != nil {
		return fmt.Errorf("the merged file does not parse (a bug: nothing was written): %w", err)
	}
	var top map[string]json.RawMessage
	var servers map[string]any
	if err := json.Unmarshal(std, &top); err != nil {
		return fmt.Errorf("the merged file does not parse (a bug: nothing was written): %w", err)
	}
	if err := json.Unmarshal(top[key], &servers); err != nil {
		return fmt.Errorf("the merged file does not hold %s (a bug: nothing was written): %w", key, err)
	}
	want, _ := json.Marshal(entry)
	var w any
	json.Unmarshal(want, &w)
	if !reflect.DeepEqual(servers[name], w) {
		return fmt.Errorf("the merged file's %s.%s is not the entry (a bug: nothing was written)", key, name)
	}
	return nil
}
