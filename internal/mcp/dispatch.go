package mcp

import (
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rukh-cli/rukh/internal/daemon/wire"
)

// The answer of a dispatch tool call (docs/adr/0006-dispatch-projection.md):
// the ops' results in input order, each with the closed envelope of a
// per-tool call, help, or why the call itself was refused.
type dispatchAnswer struct {
	OK      bool            `json:"ok"`
	Results []any           `json:"results,omitempty"` // opAnswer or detachedAnswer
	Help    json.RawMessage `json:"help,omitempty"`
	Error   *opError        `json:"error,omitempty"`
}

// opAnswer is one op's result: {ok, op} and, once the op reached
// admission, the envelope a per-tool call of the command would have
// returned, member for member.
type opAnswer struct {
	OK bool   `json:"ok"`
	Op string `json:"op"`
	*envelope
	Wait   json.RawMessage `json:"wait,omitempty"`
	Error  *opError        `json:"error,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// detachedAnswer is the result of an op started with "detach": true: its
// invocation id, at once; invocations.wait observes the run.
type detachedAnswer struct {
	OK           bool   `json:"ok"`
	Op           string `json:"op"`
	InvocationID string `json:"invocationId"`
	Detached     bool   `json:"detached"`
}

type opError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func toOpError(e *wire.OpError) *opError {
	if e == nil {
		return nil
	}
	return &opError{Code: e.Code, Message: e.Message}
}

// dispatchResult turns a dispatch call's answer into a tool result. A
// failed op never makes the call an error: the caller reads each op's ok.
// Only a refused call (nothing ran) is isError.
func dispatchResult(d *wire.DispatchResult, complete bool) *sdk.CallToolResult {
	ans := dispatchAnswer{OK: d.Error == nil, Help: d.Help, Error: toOpError(d.Error)}
	for _, r := range d.Ops {
		if r.Detached && r.Call != nil && r.Error == nil {
			ans.Results = append(ans.Results, detachedAnswer{OK: true, Op: r.Op, InvocationID: r.Call.InvocationID, Detached: true})
			continue
		}
		oa := opAnswer{Op: r.Op, Wait: r.Wait, Error: toOpError(r.Error), Schema: r.Schema}
		if r.Call != nil {
			// The per-tool mapping, so that an op and a tool call of the
			// same command answer with the same envelope.
			var env envelope
			if sc, ok := result(r.Call, false).StructuredContent.(json.RawMessage); ok && json.Unmarshal(sc, &env) == nil {
				oa.envelope = &env
			}
		}
		oa.OK = r.Error == nil
		ans.OK = ans.OK && oa.OK
		ans.Results = append(ans.Results, oa)
	}
	if ans.Results == nil && d.Error == nil && len(d.Help) == 0 {
		ans.Results = []any{}
	}
	data, err := json.Marshal(ans)
	if err != nil {
		data = []byte(`{"ok":false,"error":{"code":"internal","message":"the answer could not be encoded"}}`)
	}
	res := &sdk.CallToolResult{}
	if complete {
		res = completeResult()
	}
	res.StructuredContent = json.RawMessage(data)
	res.Content = []sdk.Content{&sdk.TextContent{Text: string(data)}}
	res.IsError = d.Error != nil
	return res
}

// AdvertisedBytes is what tool t costs an agent's context on every
// request: the size of its JSON as tools/list sends it (name, title,
// description, inputSchema, outputSchema and annotations).
func AdvertisedBytes(t *wire.Tool) int {
	data, err := json.Marshal(toSDK(t))
	if err != nil {
		return 0
	}
	return len(data)
}
