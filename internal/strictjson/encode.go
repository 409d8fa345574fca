package strictjson

import (
	"encoding/json"
	"strconv"
)

// AppendCompact appends the compact JSON encoding of v to buf. Member order
// and number literals are kept as parsed.
func (v *Value) AppendCompact(buf []byte) []byte {
	switch v.Kind {
	case Null:
		return append(buf, "null"...)
	case Bool:
		return strconv.AppendBool(buf, v.Bool)
	case Number:
		return append(buf, v.Text...)
	case String:
		return AppendString(buf, v.Text)
	case Array:
		buf = append(buf, '[')
		for i, it := range v.Items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = it.AppendCompact(buf)
		}
		return append(buf, ']')
	case Object:
		buf = append(buf, '{')
		for i, m := range v.Members {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendString(buf, m.Name)
			buf = append(buf, ':')
			buf = m.Value.AppendCompact(buf)
		}
		return append(buf, '}')
	}
	panic("strictjson: invalid kind")
}

// AppendString appends s as a JSON string. HTML characters are not escaped.
func AppendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}

// Any converts v to the value model of encoding/json with numbers as
// json.Number (the literal as written), so no precision is lost.
func (v *Value) Any() any {
	switch v.Kind {
	case Null:
		return nil
	case Bool:
		return v.Bool
	case Number:
		return json.Number(v.Text)
	case String:
		return v.Text
	case Array:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.Any()
		}
		return out
	case Object:
		out := make(map[string]any, len(v.Members))
		for _, m := range v.Members {
			out[m.Name] = m.Value.Any()
		}
		return out
	}
	panic("strictjson: invalid kind")
}
