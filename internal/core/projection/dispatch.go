package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rukh-cli/rukh/internal/jsoncanon"
)

// The dispatch projection (profile mcp.projection "dispatch",
// docs/adr/0006-dispatch-projection.md): the endpoint advertises one tool
// whose ops name the commands of this projection's tools, with their
// schemas fetched on demand.
const (
	// DispatchIdentity is what the dispatch tool's name is computed from,
	// by the naming rules of every tool (ToolName): so the name belongs
	// to one revision (invariant I7). Command identities always hold a
	// "/", so it is never a command's.
	DispatchIdentity = "request"
	// MaxOps is the most ops one dispatch call may carry; more is an
	// error, never a truncation.
	MaxOps = 16
	// WaitVerb is the built-in verb that waits on invocation ids. Built-in
	// verbs hold no "/", so they never name a command.
	WaitVerb = "invocations.wait"
	// SchemaDomain versions what a schema fingerprint covers.
	SchemaDomain = "rukh.op-schema/1"
)

// The dispatch tool's advertised text and schemas. They do not depend on
// the commands, so the advertised size is the same at 1 and at 100,000
// commands (TestDispatchBudget keeps it under 2 KiB).
const (
	dispatchTitle       = "Run commands"
	dispatchDescription = `Runs this endpoint's commands. {"help":true}: the catalog, one line a command. ` +
		`{"help":"pkg/cmd"}: its inputSchema, resultSchema and schemaFingerprint. ` +
		`{"ops":[{"op":"pkg/cmd","args":{}}]}: up to 16 ops in order, each one invocation with its own {ok, op, invocationId, outcome, ...}; ` +
		`a failed op carries its schema. Commands that write, act externally, destroy or declare no effects need "fingerprint" (from help). ` +
		`"detach":true returns the invocationId at once; op "invocations.wait" with args {"ids":[...],"timeoutMs":N} waits.`
	dispatchInput = `{"type":"object","properties":{` +
		`"ops":{"type":"array","maxItems":16,"items":{"type":"object","properties":{` +
		`"op":{"type":"string"},"args":{"type":"object"},"fingerprint":{"type":"string"},"detach":{"type":"boolean"}},` +
		`"required":["op"],"additionalProperties":false}},` +
		`"help":{"type":["boolean","string"]}},` +
		`"additionalProperties":false}`
	dispatchError  = `{"type":"object","properties":{"code":{"type":"string"},"message":{"type":"string"}},"required":["code","message"],"additionalProperties":false}`
	dispatchOutput = `{"type":"object","properties":{` +
		`"ok":{"type":"boolean"},` +
		`"results":{"type":"array","items":{"type":"object","properties":{` +
		`"ok":{"type":"boolean"},"op":{"type":"string"},` +
		`"invocationId":{"type":"string"},"outcome":{"type":"string"},"reason":{"type":"string"},"approvalId":{"type":"string"},` +
		`"commandResult":{"type":"object"},"effects":{"type":"array"},"detached":{"type":"boolean"},` +
		`"wait":{"type":"object"},"error":` + dispatchError + `,"schema":{"type":"object"}},` +
		`"required":["ok","op"],"additionalProperties":false}},` +
		`"help":{"type":"object"},"error":` + dispatchError + `},` +
		`"required":["ok"],"additionalProperties":false}`
)

// DispatchTool returns the one tool of the dispatch projection of p. It
// has no annotations: one tool reaches commands of every effects class,
// so MCP's cautious defaults apply.
func (p *Projection) DispatchTool() *Tool {
	return &Tool{
		Name:         ToolName(p.Namespace, p.Revision, DispatchIdentity, p.Naming),
		Identity:     DispatchIdentity,
		Title:        dispatchTitle,
		Description:  dispatchDescription,
		InputSchema:  json.RawMessage(dispatchInput),
		OutputSchema: json.RawMessage(dispatchOutput),
	}
}

// ToolByIdentity returns the tool of a command identity, or nil.
func (p *Projection) ToolByIdentity(identity string) *Tool {
	for i := range p.Tools {
		if p.Tools[i].Identity == identity {
			return &p.Tools[i]
		}
	}
	return nil
}

// FingerprintRequired reports whether a dispatch op of t must carry its
// schema fingerprint: for every effects class but none and read, and
// when no effects are declared (the cautious reading, as the annotations
// take it).
func (t *Tool) FingerprintRequired() bool {
	return t.Effects != "none" && t.Effects != "read"
}

// SchemaFingerprint returns "sha256:" and the lowercase SHA-256 hex of the
// RFC 8785 canonical JSON of
//
//	["rukh.op-schema/1", identity, effects, inputSchema, resultSchema]
//
// with the schemas as JSON values: it changes exactly when what an agent
// agreed to by reading help changes, and not with the revision, so a
// fingerprint stays good across owner changes that leave the command
// alone.
func (t *Tool) SchemaFingerprint() string {
	b := make([]byte, 0, 256+len(t.InputSchema)+len(t.OutputSchema))
	b = append(b, '[')
	for _, s := range []string{SchemaDomain, t.Identity, t.Effects} {
		b = jsoncanon.AppendString(b, s)
		b = append(b, ',')
	}
	var c jsoncanon.Canonicalizer
	b, err := c.Append(b, t.InputSchema)
	if err == nil {
		b = append(b, ',')
		b, err = appendOutputSchema(&c, b, t.OutputSchema)
	}
	if err != nil {
		// Build canonicalized both schemas for the catalog hash already.
		panic(fmt.Sprintf("projection: the schemas of %s do not canonicalize: %v", t.Identity, err))
	}
	b = append(b, ']')
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Signature is the one-line catalog entry of t:
//
//	identity(required:type, …) effects — summary
//
// with the required inputs in the input schema's order, an enum of a few
// strings spelled out ("env:stage|prod"), "…" when there are optional
// inputs, and "needs fingerprint" after the effects class when an op
// must carry the schema fingerprint.
func (t *Tool) Signature() string {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	json.Unmarshal(t.InputSchema, &s)
	props := orderedKeys(s.Properties)
	var byName map[string]struct {
		Type json.RawMessage   `json:"type"`
		Enum []json.RawMessage `json:"enum"`
	}
	json.Unmarshal(s.Properties, &byName)
	var parts []string
	for _, name := range props {
		if !slices.Contains(s.Required, name) {
			continue
		}
		p := byName[name]
		typ := strings.Trim(string(p.Type), `"`)
		if n := len(p.Enum); n > 0 && n <= 4 {
			vals := make([]string, n)
			for i, v := range p.Enum {
				vals[i] = strings.Trim(string(v), `"`)
			}
			typ = strings.Join(vals, "|")
		}
		parts = append(parts, name+":"+typ)
	}
	if len(parts) < len(props) {
		parts = append(parts, "…")
	}
	effects := t.Effects
	if effects == "" {
		effects = "effects undeclared"
	}
	if t.FingerprintRequired() {
		effects += ", needs fingerprint"
	}
	return t.Identity + "(" + strings.Join(parts, ", ") + ") " + effects + " — " + t.Title
}

// orderedKeys returns the member names of a JSON object in document order.
func orderedKeys(obj json.RawMessage) []string {
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}
