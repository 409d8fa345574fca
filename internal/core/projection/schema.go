package projection

import (
	"encoding/json"

	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
)

// Outcomes are the committed outcomes of an invocation (invariant I10,
// docs/invariants.md), in the order the output schema lists them.
var Outcomes = []string{"succeeded", "command_failed", "execution_failed", "rejected", "cancelled"}

const (
	envelopeHead = `{"type":"object","properties":{` +
		`"invocationId":{"type":"string"},` +
		`"outcome":{"type":"string","enum":["succeeded","command_failed","execution_failed","rejected","cancelled"]},` +
		`"reason":{"type":"string"},` +
		`"approvalId":{"type":"string"},`
	envelopeTail = `"effects":{"type":"array","items":{"type":"object","properties":{` +
		`"kind":{"type":"string"},"ref":{"type":"string"}},` +
		`"required":["kind","ref"],"additionalProperties":false}}},` +
		`"required":["invocationId","outcome"],"additionalProperties":false}`
	structuredHead = `"commandResult":{"type":"object","properties":{` +
		`"kind":{"type":"string","const":"structured"},"data":`
	structuredTail = `},"required":["kind","data"],"additionalProperties":false},`
	textWrapper    = `"commandResult":{"type":"object","properties":{` +
		`"kind":{"type":"string","const":"text"},"text":{"type":"string"}},` +
		`"required":["kind","text"],"additionalProperties":false},`
)

// OutputSchema returns the MCP outputSchema of a command with the declared
// result r: the closed core envelope of docs/reference.md §3, as
// compact JSON Schema 2020-12 (keys in the order shown):
//
//	{"type":"object","properties":{
//	  "invocationId":{"type":"string"},
//	  "outcome":{"type":"string","enum":["succeeded","command_failed","execution_failed","rejected","cancelled"]},
//	  "reason":{"type":"string"},
//	  "approvalId":{"type":"string"},
//	  "commandResult":WRAPPER,
//	  "effects":{"type":"array","items":{"type":"object",
//	    "properties":{"kind":{"type":"string"},"ref":{"type":"string"}},
//	    "required":["kind","ref"],"additionalProperties":false}}},
//	 "required":["invocationId","outcome"],"additionalProperties":false}
//
// WRAPPER is, for a structured result,
//
//	{"type":"object","properties":{"kind":{"type":"string","const":"structured"},"data":SCHEMA},
//	 "required":["kind","data"],"additionalProperties":false}
//
// with SCHEMA the publisher's checked schema as declared, and for a text
// result the same with "kind" "text" and "text":{"type":"string"}. A nil r
// (no declared result; never a tool) leaves commandResult out, so the
// closed envelope then forbids it.
func OutputSchema(r *resultschema.Result) json.RawMessage {
	switch {
	case r != nil && r.Kind == resultschema.Structured && r.Schema != nil:
		data := r.Schema.JSON()
		b := make([]byte, 0, len(envelopeHead)+len(structuredHead)+len(data)+len(structuredTail)+len(envelopeTail))
		b = append(b, envelopeHead...)
		b = append(b, structuredHead...)
		b = append(b, data...)
		b = append(b, structuredTail...)
		return append(b, envelopeTail...)
	case r != nil && r.Kind == resultschema.Text:
		return json.RawMessage(envelopeHead + textWrapper + envelopeTail)
	}
	return json.RawMessage(envelopeHead + envelopeTail)
}

// Annotations are the MCP tool annotations, derived from a command's
// declared effects. They are publisher information and grant nothing. A
// nil hint is left out, so the MCP default applies (not read-only,
// possibly destructive, not idempotent, open world): the cautious reading.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// annotations maps declared effects to hints:
//
//	class        readOnly  destructive  idempotent   openWorld
//	(none given) -         -            -            -
//	none, read   true      false        idempotent   openWorld
//	write        false     false        idempotent   openWorld
//	external     false     false        idempotent   true unless declared
//	destructive  false     true         idempotent   openWorld
//
// where idempotent and openWorld are the declared booleans, left out (so
// MCP's own defaults apply) when the effects object does not declare them.
func annotations(e descriptor.Effects) Annotations {
	var readOnly, destructive bool
	switch e.Class {
	case descriptor.EffectNone, descriptor.EffectRead:
		readOnly = true
	case descriptor.EffectWrite:
	case descriptor.EffectExternal:
		if e.OpenWorld == nil {
			open := true
			e.OpenWorld = &open
		}
	case descriptor.EffectDestructive:
		destructive = true
	default:
		return Annotations{}
	}
	return Annotations{
		ReadOnlyHint:    &readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  e.Idempotent,
		OpenWorldHint:   e.OpenWorld,
	}
}
