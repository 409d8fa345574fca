package values

import (
	"strconv"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// InputSchema projects specs to a closed JSON Schema 2020-12 object, the
// MCP inputSchema:
//
//	{"type":"object","properties":{…},"required":[…],"additionalProperties":false}
//
// Properties appear in declaration order, and the keywords of each in a
// fixed order: type, description, enum, minimum, maximum, minLength,
// maxLength, pattern, items, minItems, maxItems, default. "required" is
// left out when no input is required. A decimal is
// {"type":"string","pattern":DecimalPattern}; its bounds and its 64-digit
// limit cannot be said in JSON Schema and are enforced by the core only,
// as are the hard limits (16,384 code points, 1,024 items) and the ban on
// NUL. A list is an array with items, minItems and maxItems. specs should
// have passed Check.
func InputSchema(specs []Spec) []byte {
	b := append([]byte(nil), `{"type":"object","properties":{`...)
	for i := range specs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strictjson.AppendString(b, specs[i].ID)
		b = append(b, ':')
		b = appendSchema(b, &specs[i])
	}
	b = append(b, '}')
	n := 0
	for i := range specs {
		if specs[i].Required {
			if n == 0 {
				b = append(b, `,"required":[`...)
			} else {
				b = append(b, ',')
			}
			b = strictjson.AppendString(b, specs[i].ID)
			n++
		}
	}
	if n > 0 {
		b = append(b, ']')
	}
	return append(b, `,"additionalProperties":false}`...)
}

func appendSchema(b []byte, s *Spec) []byte {
	b = append(b, `{"type":`...)
	switch s.Type {
	case Integer:
		b = append(b, `"integer"`...)
	case Number:
		b = append(b, `"number"`...)
	case Boolean:
		b = append(b, `"boolean"`...)
	case List:
		b = append(b, `"array"`...)
	default: // String, Decimal
		b = append(b, `"string"`...)
	}
	if s.Description != "" {
		b = append(b, `,"description":`...)
		b = strictjson.AppendString(b, s.Description)
	}
	if len(s.Enum) > 0 {
		b = append(b, `,"enum":[`...)
		for i, v := range s.Enum {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.AppendJSON(b)
		}
		b = append(b, ']')
	}
	if s.Type == Integer || s.Type == Number {
		b = appendValue(b, "minimum", s.Minimum)
		b = appendValue(b, "maximum", s.Maximum)
	}
	if s.Type == String {
		b = appendInt(b, "minLength", s.MinLength)
		b = appendInt(b, "maxLength", s.MaxLength)
	}
	if s.Type == Decimal {
		b = append(b, `,"pattern":`...)
		b = strictjson.AppendString(b, DecimalPattern)
	}
	if s.Type == List {
		if s.Item != nil {
			b = append(b, `,"items":`...)
			b = appendSchema(b, s.Item)
		}
		b = appendInt(b, "minItems", s.MinItems)
		b = appendInt(b, "maxItems", s.MaxItems)
	}
	b = appendValue(b, "default", s.Default)
	return append(b, '}')
}

func appendValue(b []byte, key string, v *Value) []byte {
	if v == nil {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return v.AppendJSON(b)
}

func appendInt(b []byte, key string, n *int) []byte {
	if n == nil {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(*n), 10)
}
