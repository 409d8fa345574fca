package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rukh-cli/rukh/internal/strictjson"
	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/projection"
	"github.com/rukh-cli/rukh/seam"
	"github.com/rukh-cli/rukh/wire"
)

// The codes of a refused dispatch call or op (docs/mcp.md, "The dispatch
// projection"): a closed set.
const (
	OpInvalidRequest      = "invalid_request"      // the call's arguments are not {ops, help}; nothing ran
	OpTooMany             = "too_many_ops"         // more than projection.MaxOps ops; nothing ran
	OpInvalid             = "invalid_op"           // an op that is not {op, args?, fingerprint?, detach?}
	OpUnknown             = "unknown_op"           // unknown, or not visible to the bound task
	OpFingerprintRequired = "fingerprint_required" // the command needs its schema fingerprint
	OpFingerprintStale    = "fingerprint_stale"    // the fingerprint is not the command's current one
	OpStale               = "stale"                // the profile changed during the call
	OpNotRun              = "not_run"              // the call was cancelled before the op started
	OpUnsupported         = "unsupported_op"       // a verb this host does not offer
)

// opMembers are the members an op may have: nothing in an op claims an
// identity or rights (the launch binding decides those).
var opMembers = []string{"op", "args", "fingerprint", "detach"}

// dispatchLimits bound the parse of a dispatch call's arguments; the
// outer guard bounds the message first.
var dispatchLimits = strictjson.Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxMembers: 1 << 16}

// op is one parsed op.
type op struct {
	name        string
	args        []byte // the args member's exact JSON, or nil
	fingerprint *string
	detach      bool
	err         *wire.OpError
}

// dispatch answers one call of the dispatch tool of p for call.Task, whose
// visible commands are tools: help from the projection, then each op, in
// order, as one invocation through callTool — the path of a per-tool call,
// with its own admission, authorization and record.
func (l *Local) dispatch(ctx context.Context, p *projection.Projection, tools []*projection.Tool, call *wire.CallTool, opts seam.CallOptions) (*wire.CallResult, error) {
	res := &wire.DispatchResult{Ops: []*wire.OpResult{}}
	out := &wire.CallResult{Dispatch: res}
	help, ops, rerr := parseDispatch(call.Arguments)
	if rerr != nil {
		res.Error = rerr
		return out, nil
	}
	visible := func(name string) *projection.Tool {
		for _, t := range tools {
			if t.Identity == name {
				return t
			}
		}
		return nil
	}
	switch h := help.(type) {
	case bool:
		if h {
			res.Help = catalog(tools)
		}
	case string:
		t := visible(h)
		if t == nil {
			res.Error = unknownOp(h)
			return out, nil
		}
		res.Help = schemaOf(t)
	}
	for i, o := range ops {
		r := &wire.OpResult{Op: o.name}
		res.Ops = append(res.Ops, r)
		if ctx.Err() != nil {
			r.Error = &wire.OpError{Code: OpNotRun, Message: "the call was cancelled before this op started; nothing ran"}
			continue
		}
		l.runOp(ctx, p, visible, call.Task, o, r, opts)
		if opts.OnProgress != nil {
			done, total := int64(i+1), int64(len(ops))
			opts.OnProgress(&wire.Progress{Message: fmt.Sprintf("op %d of %d (%s) done", done, total, o.name), Done: &done, Total: &total})
		}
	}
	return out, nil
}

// runOp runs one op into r.
func (l *Local) runOp(ctx context.Context, p *projection.Projection, visible func(string) *projection.Tool, task string, o *op, r *wire.OpResult, opts seam.CallOptions) {
	if o.err != nil {
		r.Error = o.err
		return
	}
	if o.name == projection.WaitVerb {
		r.Error = &wire.OpError{Code: OpUnsupported, Message: fmt.Sprintf("%s is not offered by this host yet", projection.WaitVerb)}
		return
	}
	t := visible(o.name)
	if t == nil {
		r.Error = unknownOp(o.name)
		return
	}
	switch {
	case o.fingerprint == nil && t.FingerprintRequired():
		r.Error = &wire.OpError{Code: OpFingerprintRequired, Message: fmt.Sprintf(
			"%s declares effects %q: its op needs \"fingerprint\", the schemaFingerprint of its schema (below, or from {\"help\":%q}); nothing ran",
			t.Identity, effectsName(t), t.Identity)}
		r.Schema = schemaOf(t)
		return
	case o.fingerprint != nil && *o.fingerprint != t.SchemaFingerprint():
		r.Error = &wire.OpError{Code: OpFingerprintStale, Message: fmt.Sprintf(
			"the fingerprint %q is not the current schemaFingerprint of %s: its schema is below; check the args against it and send its fingerprint; nothing ran",
			*o.fingerprint, t.Identity)}
		r.Schema = schemaOf(t)
		return
	}
	if o.detach {
		r.Error = &wire.OpError{Code: OpUnsupported, Message: "\"detach\" is not offered by this host yet; run the op without it"}
		return
	}
	cr, err := l.callTool(ctx, p, t, &wire.CallTool{Task: task, Name: t.Name, Arguments: o.args}, opts)
	if err != nil {
		if we, ok := err.(*wire.Error); ok && we.Code == wire.CodeUnknownTool {
			r.Error = &wire.OpError{Code: OpStale, Message: "the owner changed the profile during this call; list the tools again and repeat the op; nothing ran"}
			return
		}
		r.Error = &wire.OpError{Code: wire.CodeStoreUnavailable, Message: err.Error()}
		if we, ok := err.(*wire.Error); ok {
			r.Error.Code = we.Code
		}
		return
	}
	cr.InputSchema = nil // the op carries its schemas whole
	r.Call = cr
	if cr.Outcome != invoke.Succeeded {
		code := cr.Reason
		if code == "" {
			code = cr.Outcome
		}
		r.Error = &wire.OpError{Code: code, Message: cr.Message}
		r.Schema = schemaOf(t)
	}
}

func effectsName(t *projection.Tool) string {
	if t.Effects == "" {
		return "none declared"
	}
	return t.Effects
}

// unknownOp is the one answer for unknown and invisible ops alike, so it
// reveals nothing about hidden commands (as errUnknownTool).
func unknownOp(name string) *wire.OpError {
	return &wire.OpError{Code: OpUnknown, Message: fmt.Sprintf("unknown op %q; {\"help\":true} lists the commands this endpoint runs", name)}
}

// parseDispatch reads {ops?, help?} strictly: duplicate or unknown
// members, nulls and wrong types refuse the whole call, except that a
// malformed op refuses only that op.
func parseDispatch(args []byte) (help any, ops []*op, _ *wire.OpError) {
	bad := func(format string, a ...any) *wire.OpError {
		return &wire.OpError{Code: OpInvalidRequest, Message: fmt.Sprintf(format, a...) +
			`; call with {"help":true}, {"help":"pkg/cmd"} or {"ops":[{"op":"pkg/cmd","args":{...}}]}; nothing ran`}
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	root, err := strictjson.Parse(args, dispatchLimits)
	if err != nil {
		return nil, nil, bad("the arguments are not valid JSON: %v", err)
	}
	if root.Kind != strictjson.Object {
		return nil, nil, bad("the arguments are a JSON %s, not an object", root.Kind)
	}
	var opsv *strictjson.Value
	for _, m := range root.Members {
		switch m.Name {
		case "help":
			switch m.Value.Kind {
			case strictjson.Bool:
				help = m.Value.Bool
			case strictjson.String:
				help = m.Value.Text
			default:
				return nil, nil, bad("help is a JSON %s: give true or a command identity", m.Value.Kind)
			}
		case "ops":
			if m.Value.Kind != strictjson.Array {
				return nil, nil, bad("ops is a JSON %s, not an array", m.Value.Kind)
			}
			opsv = m.Value
		default:
			return nil, nil, bad("unknown member %q", m.Name)
		}
	}
	if opsv == nil && (help == nil || help == false) {
		return nil, nil, bad("there is nothing to do")
	}
	if opsv != nil && len(opsv.Items) > projection.MaxOps {
		return nil, nil, &wire.OpError{Code: OpTooMany, Message: fmt.Sprintf(
			"%d ops; a call takes at most %d: split the batch; nothing ran", len(opsv.Items), projection.MaxOps)}
	}
	if opsv != nil {
		for i, it := range opsv.Items {
			ops = append(ops, parseOp(args, i, it))
		}
	}
	return help, ops, nil
}

func parseOp(doc []byte, i int, v *strictjson.Value) *op {
	o := &op{}
	fail := func(format string, a ...any) *op {
		o.err = &wire.OpError{Code: OpInvalid, Message: fmt.Sprintf("op #%d: ", i) + fmt.Sprintf(format, a...) +
			"; an op is {\"op\": \"pkg/cmd\", \"args\": {...}, \"fingerprint\"?: \"sha256:…\", \"detach\"?: true}; nothing ran"}
		return o
	}
	if v.Kind != strictjson.Object {
		return fail("a JSON %s, not an object", v.Kind)
	}
	if n := v.Get("op"); n != nil && n.Kind == strictjson.String {
		o.name = n.Text
	}
	for _, m := range v.Members {
		switch m.Name {
		case "op":
			if m.Value.Kind != strictjson.String {
				return fail("op is a JSON %s, not a string", m.Value.Kind)
			}
		case "args":
			o.args = doc[m.Value.Start:m.Value.End]
		case "fingerprint":
			if m.Value.Kind != strictjson.String {
				return fail("fingerprint is a JSON %s, not a string", m.Value.Kind)
			}
			fp := m.Value.Text
			o.fingerprint = &fp
		case "detach":
			if m.Value.Kind != strictjson.Bool {
				return fail("detach is a JSON %s, not a boolean", m.Value.Kind)
			}
			o.detach = m.Value.Bool
		default:
			return fail("unknown member %q (an op has only %s: who runs it and with which rights is the server's launch binding)",
				m.Name, strings.Join(opMembers, ", "))
		}
	}
	if v.Get("op") == nil {
		return fail("no op: name a command identity, as help lists them")
	}
	return o
}

// catalog is help's answer to true: one signature a visible command, in
// identity order, the built-in verbs and the batch bound.
func catalog(tools []*projection.Tool) []byte {
	sigs := make([]string, len(tools))
	for i, t := range tools {
		sigs[i] = t.Signature()
	}
	slices.Sort(sigs)
	data, _ := json.Marshal(struct {
		Commands []string `json:"commands"`
		Verbs    []string `json:"verbs"`
		MaxOps   int      `json:"maxOps"`
	}{sigs, verbs(), projection.MaxOps})
	return data
}

// verbs are the built-in verbs this host offers.
func verbs() []string { return []string{} }

// opSchema is help's answer for one command, and what a failed op carries.
type opSchema struct {
	Op                  string          `json:"op"`
	Title               string          `json:"title"`
	Description         string          `json:"description"`
	Effects             string          `json:"effects,omitempty"`
	FingerprintRequired bool            `json:"fingerprintRequired"`
	InputSchema         json.RawMessage `json:"inputSchema"`
	ResultSchema        json.RawMessage `json:"resultSchema"`
	SchemaFingerprint   string          `json:"schemaFingerprint"`
}

func schemaOf(t *projection.Tool) []byte {
	data, _ := json.Marshal(opSchema{Op: t.Identity, Title: t.Title, Description: t.Description, Effects: t.Effects,
		FingerprintRequired: t.FingerprintRequired(), InputSchema: t.InputSchema, ResultSchema: t.OutputSchema,
		SchemaFingerprint: t.SchemaFingerprint()})
	return data
}
