package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/internal/core/invoke"
	"github.com/rukh-cli/rukh/internal/core/projection"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
	"github.com/rukh-cli/rukh/internal/mcp/seam"
	"github.com/rukh-cli/rukh/internal/strictjson"
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
func (l *Host) dispatch(ctx context.Context, p *projection.Projection, tools []*projection.Tool, call *wire.CallTool, opts seam.CallOptions) (*wire.CallResult, error) {
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
		if h == projection.WaitVerb {
			res.Help = waitSchema()
			break
		}
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
		opOpts := opts
		if opts.OnProgress != nil {
			opOpts.OnProgress = opProgress(opts.OnProgress, i, len(ops), o.name)
		}
		l.runOp(ctx, p, visible, call, o, r, opOpts)
		if opts.OnProgress != nil {
			done, total := float64(i+1), float64(len(ops))
			opts.OnProgress(&wire.Progress{Message: fmt.Sprintf("op %d of %d (%s) done", i+1, len(ops), o.name), Done: &done, Total: &total})
		}
	}
	return out, nil
}

// opProgress places the progress of op i (of n) in the batch's one
// sequence, ops done over ops: the command's own done of total is a
// fraction of its op, after the i ops before it; without a total, each
// report brings it nearer the op's end without reaching it.
func opProgress(report func(*wire.Progress), i, n int, name string) func(*wire.Progress) {
	return func(pr *wire.Progress) {
		var frac float64
		switch {
		case pr.Done != nil && pr.Total != nil && *pr.Total > 0:
			frac = min(max(*pr.Done / *pr.Total, 0), 1)
		case pr.Done != nil && *pr.Done > 0:
			frac = *pr.Done / (*pr.Done + 1)
		}
		done, total := float64(i)+frac, float64(n)
		report(&wire.Progress{Message: fmt.Sprintf("op %d of %d (%s): %s", i+1, n, name, pr.Message), Done: &done, Total: &total})
	}
}

// runOp runs one op into r.
// call is the dispatch tool's call: its task and caller are the op's.
func (l *Host) runOp(ctx context.Context, p *projection.Projection, visible func(string) *projection.Tool, call *wire.CallTool, o *op, r *wire.OpResult, opts seam.CallOptions) {
	task := call.Task
	if o.err != nil {
		r.Error = o.err
		return
	}
	if o.name == projection.WaitVerb {
		l.waitOp(ctx, task, o, r)
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
	cr, err := l.callTool(ctx, p, t, &wire.CallTool{Task: task, Name: t.Name, Arguments: o.args, Detach: o.detach, Subject: call.Subject, Issuer: call.Issuer}, opts)
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
	if cr.Detached {
		r.Detached = true
		return
	}
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

// verbs are the signatures of the built-in verbs.
func verbs() []string {
	return []string{projection.WaitVerb + "(ids:array, …) read — Wait until invocations end, at most timeoutMs (0 looks once); expiry is no error"}
}

// The schemas of invocations.wait: its args and what it answers (the JSON
// of wire.WaitResult, as `rukh invocations wait --json` prints it).
const (
	waitInput = `{"type":"object","properties":{` +
		`"ids":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":64},` +
		`"timeoutMs":{"type":"integer","minimum":0,"maximum":600000}},` +
		`"required":["ids"],"additionalProperties":false}`
	waitResult = `{"type":"object","properties":{` +
		`"entries":{"type":"array","items":{"type":"object","properties":{` +
		`"id":{"type":"string"},"invocationId":{"type":"string"},"command":{"type":"string"},` +
		`"status":{"type":"string","enum":["terminal","pending","stopped","unknown"]},"terminal":{"type":"boolean"},` +
		`"outcome":{"type":"string"},"reason":{"type":"string"},"error":{"type":"string"}}}},` +
		`"allTerminal":{"type":"boolean"},"timedOut":{"type":"boolean"},` +
		`"terminal":{"type":"array","items":{"type":"string"}},"pending":{"type":"array","items":{"type":"string"}},` +
		`"stopped":{"type":"array","items":{"type":"string"}},"unknown":{"type":"array","items":{"type":"string"}},` +
		`"timeoutMs":{"type":"integer"}}}`
)

// waitSchema is help's answer for invocations.wait.
func waitSchema() []byte {
	data, _ := json.Marshal(opSchema{Op: projection.WaitVerb, Title: "Wait until invocations end",
		Description: "Observes the invocations ids (full ids, or unique prefixes of 8 hex digits or more) of this endpoint's task " +
			"for at most timeoutMs until each is terminal or cannot change by waiting. One entry per id in the order given; " +
			"every id is in exactly one of terminal, pending, stopped and unknown. An expired window is not an error, " +
			"an id that does not exist is unknown, and observing never touches a run.",
		Effects: "read", InputSchema: json.RawMessage(waitInput), ResultSchema: json.RawMessage(waitResult)})
	return data
}

// waitOp runs invocations.wait: {"ids": [...], "timeoutMs": N}.
func (l *Host) waitOp(ctx context.Context, task string, o *op, r *wire.OpResult) {
	bad := func(format string, a ...any) {
		r.Error = &wire.OpError{Code: wire.CodeInvalidArgument, Message: fmt.Sprintf(format, a...) + "; nothing was observed"}
		r.Schema = waitSchema()
	}
	if o.detach || o.fingerprint != nil {
		bad("%s takes neither detach nor fingerprint", projection.WaitVerb)
		return
	}
	if o.args == nil {
		bad("args needs ids")
		return
	}
	v, err := strictjson.Parse(o.args, dispatchLimits)
	if err != nil || v.Kind != strictjson.Object {
		bad("args is not a JSON object")
		return
	}
	var ids []string
	var timeout int64
	for _, m := range v.Members {
		switch m.Name {
		case "ids":
			if m.Value.Kind != strictjson.Array {
				bad("property \"ids\": a JSON %s, not an array of invocation ids", m.Value.Kind)
				return
			}
			for _, it := range m.Value.Items {
				if it.Kind != strictjson.String {
					bad("property \"ids\": an item is a JSON %s, not a string", it.Kind)
					return
				}
				ids = append(ids, it.Text)
			}
		case "timeoutMs":
			if err := json.Unmarshal([]byte(m.Value.Text), &timeout); m.Value.Kind != strictjson.Number || err != nil || timeout < 0 || timeout > wire.MaxWaitTimeoutMs {
				bad("property \"timeoutMs\": give an integer from 0 to %d", wire.MaxWaitTimeoutMs)
				return
			}
		default:
			bad("property %q: there is no such argument; the arguments are ids and timeoutMs", m.Name)
			return
		}
	}
	res, err := l.WaitInvocations(ctx, task, ids, time.Duration(timeout)*time.Millisecond)
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.CodeInvalidArgument {
			bad("%s", strings.TrimSuffix(we.Message, "; nothing was observed"))
			return
		}
		r.Error = &wire.OpError{Code: wire.CodeStoreUnavailable, Message: err.Error()}
		return
	}
	r.Wait, _ = json.Marshal(res)
}

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
