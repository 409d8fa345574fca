package guard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Names of the refusals the guard makes itself; the others are the codes of
// internal/strictjson.
const (
	codeNotObject = "jsonrpc_not_object"
	codeBatch     = "jsonrpc_batch"
	codeInvalidID = "jsonrpc_invalid_id"
	codeInvalid   = "jsonrpc_invalid"
)

// maxErrorText bounds the message of an error response and of a log entry:
// a strictjson error can quote a member name of any length.
const maxErrorText = 512

// maxLoggedRefusals is how many refusals a connection logs one by one;
// later ones are only counted, and the count is logged when it closes.
const maxLoggedRefusals = 64

// maxSafeInteger is 2^53−1, the largest integer a float64 holds exactly.
const maxSafeInteger = 1<<53 - 1

// refusal says why a line is not handed to the SDK and how to answer it.
type refusal struct {
	code   int64  // JSON-RPC error code
	name   string // refusal code name, in the error's data
	text   string // the error message
	id     []byte // the encoded id to answer with, or nil for null
	answer bool   // false for a message that is recognisably a response
}

// check returns the message in f, or nil when f is blank or refused.
func (c *conn) check(f frame) jsonrpc.Message {
	if f.size <= c.lim.MaxMessage && blank(f.data) {
		return nil
	}
	msg, ref := c.inspect(f)
	if ref != nil {
		c.refuse(f, ref)
		return nil
	}
	return msg
}

// inspect decides about one non-blank line.
func (c *conn) inspect(f frame) (jsonrpc.Message, *refusal) {
	if f.size > c.lim.MaxMessage {
		id, response := peek(f.data)
		return nil, &refusal{code: jsonrpc.CodeInvalidRequest, name: string(strictjson.CodeTooLarge),
			text: fmt.Sprintf("%s: message is %d bytes; the limit is %d", strictjson.CodeTooLarge, f.size, c.lim.MaxMessage),
			id:   id, answer: !response}
	}
	v, err := strictjson.Parse(f.data, strictjson.Limits{
		MaxBytes: c.lim.MaxMessage, MaxDepth: c.lim.MaxDepth, MaxMembers: c.lim.MaxMembers})
	if err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) {
			return nil, &refusal{code: jsonrpc.CodeParseError, name: string(strictjson.CodeSyntax), text: err.Error(), answer: true}
		}
		id, response := peek(f.data)
		code := int64(jsonrpc.CodeParseError)
		switch se.Code {
		case strictjson.CodeTooLarge, strictjson.CodeTooDeep, strictjson.CodeTooManyMembers:
			code = jsonrpc.CodeInvalidRequest
		}
		return nil, &refusal{code: code, name: string(se.Code), text: se.Error(), id: id, answer: !response}
	}
	switch v.Kind {
	case strictjson.Object:
	case strictjson.Array:
		return nil, &refusal{code: jsonrpc.CodeInvalidRequest, name: codeBatch,
			text: codeBatch + ": batches are not supported; send one message a line", answer: true}
	default:
		return nil, &refusal{code: jsonrpc.CodeInvalidRequest, name: codeNotObject,
			text: fmt.Sprintf("%s: a message must be a JSON object, not %s", codeNotObject, v.Kind), answer: true}
	}
	response := v.Get("method") == nil && (v.Get("result") != nil || v.Get("error") != nil)
	var id []byte
	if idv := v.Get("id"); idv != nil {
		if id = encodeID(idv); id == nil {
			return nil, &refusal{code: jsonrpc.CodeInvalidRequest, name: codeInvalidID,
				text:   codeInvalidID + ": id must be a string or an integer within ±(2^53−1)",
				answer: !response}
		}
	}
	msg, err := jsonrpc.DecodeMessage(f.data)
	if err != nil {
		return nil, &refusal{code: jsonrpc.CodeInvalidRequest, name: codeInvalid,
			text: codeInvalid + ": " + err.Error(), id: id, answer: !response}
	}
	return msg, nil
}

// Check applies the checks of a line on stdio to one message that came
// another way (the body of an HTTP request): it returns the message, or
// the JSON-RPC error response to send instead (nil when the message is
// recognisably a response, which is not answered).
func Check(data []byte, lim Limits) (jsonrpc.Message, []byte, error) {
	c := &conn{lim: lim.withDefaults()}
	msg, r := c.inspect(frame{data: data, size: len(data)})
	if r == nil {
		return msg, nil, nil
	}
	err := errors.New(truncate(strings.ToValidUTF8(r.text, "\uFFFD"), maxErrorText))
	if !r.answer {
		return nil, nil, err
	}
	return nil, errorResponse(r), err
}

// refuse logs r and answers it when it should be answered.
func (c *conn) refuse(f frame, r *refusal) {
	text := truncate(strings.ToValidUTF8(r.text, "\uFFFD"), maxErrorText)
	switch n := c.refused.Add(1); {
	case n <= maxLoggedRefusals:
		idText := "null"
		if r.id != nil {
			idText = truncate(string(r.id), 64)
		}
		c.log.Warn("mcp guard: refused an incoming message",
			"code", r.name, "bytes", f.size, "id", idText, "answered", r.answer, "error", text)
	case n == maxLoggedRefusals+1:
		c.log.Warn("mcp guard: refusing more messages; counting them without logging each")
	}
	if !r.answer {
		return
	}
	// A full queue closes the transport, which Read reports next.
	_ = c.enqueue(errorResponse(r))
}

// errorResponse is the JSON-RPC error response that answers r, one line.
func errorResponse(r *refusal) []byte {
	text := truncate(strings.ToValidUTF8(r.text, "\uFFFD"), maxErrorText)
	buf := make([]byte, 0, 96+len(r.id)+len(text))
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	if r.id == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, r.id...)
	}
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, r.code, 10)
	buf = append(buf, `,"message":`...)
	buf = strictjson.AppendString(buf, text)
	buf = append(buf, `,"data":{"code":`...)
	buf = strictjson.AppendString(buf, r.name)
	return append(buf, "}}}\n"...)
}

// encodeID returns the JSON of a valid id — a string, or an integer within
// ±(2^53−1) written without fraction or exponent — or nil.
func encodeID(v *strictjson.Value) []byte {
	switch v.Kind {
	case strictjson.String:
		return strictjson.AppendString(nil, v.Text)
	case strictjson.Number:
		n, err := strconv.ParseInt(v.Text, 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return nil
		}
		return []byte(v.Text)
	}
	return nil
}

func blank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r':
		default:
			return false
		}
	}
	return true
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// peek reads what it can of a line that is not valid JSON or was cut at
// the size limit: the encoded id when the readable part of the top-level
// object has exactly one "id" member and its value is a valid id, and
// whether the message looks like a response (a "result" or "error" member
// and no "method"). Nothing it finds is handed to the SDK.
func peek(data []byte) (id []byte, response bool) {
	s := scanner{b: data}
	s.space()
	if !s.eat('{') {
		return nil, false
	}
	var (
		ids                  int
		idTok                []byte
		hasMethod, hasResult bool
	)
	for {
		s.space()
		kstart := s.pos
		if !s.skipString() {
			break
		}
		key := tokenValue(data[kstart:s.pos])
		s.space()
		if !s.eat(':') {
			break
		}
		s.space()
		vstart := s.pos
		if !s.skipValue() {
			break
		}
		if key != nil && key.Kind == strictjson.String {
			switch key.Text {
			case "id":
				ids++
				idTok = data[vstart:s.pos]
			case "method":
				hasMethod = true
			case "result", "error":
				hasResult = true
			}
		}
		s.space()
		if !s.eat(',') {
			break
		}
	}
	if ids == 1 {
		if v := tokenValue(idTok); v != nil {
			id = encodeID(v)
		}
	}
	return id, !hasMethod && hasResult
}

// tokenValue parses one scalar token strictly, or returns nil.
func tokenValue(tok []byte) *strictjson.Value {
	if len(tok) == 0 {
		return nil
	}
	v, err := strictjson.Parse(tok, strictjson.Limits{MaxBytes: len(tok), MaxDepth: 1, MaxMembers: 1})
	if err != nil {
		return nil
	}
	return v
}

// scanner is the lenient tokenizer of peek: it skips values by counting
// brackets outside strings and never recurses, so no input can make it
// deep or slow.
type scanner struct {
	b   []byte
	pos int
}

func (s *scanner) space() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.b) && s.b[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// skipString moves past a string starting at pos, or reports false.
func (s *scanner) skipString() bool {
	if !s.eat('"') {
		return false
	}
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case '\\':
			s.pos += 2
			continue
		case '"':
			s.pos++
			return true
		}
		s.pos++
	}
	return false
}

// skipValue moves past one value: a string, a bracketed container, or a
// run of other bytes up to ',', a closing bracket or white space. It
// reports false when the input ends first, since the value may go on.
func (s *scanner) skipValue() bool {
	start, depth := s.pos, 0
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case '"':
			if !s.skipString() {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return s.pos > start
			}
			depth--
			if depth == 0 {
				s.pos++
				return true
			}
		case ',':
			if depth == 0 {
				return s.pos > start
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 && s.pos > start {
				return true
			}
		}
		s.pos++
	}
	return false
}
