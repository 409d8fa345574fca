package extsdk

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Invocation is one call of the command: who called it and with which
// inputs. Its input getters read the typed values the host sent; the
// host has already checked them against the declared inputs (type,
// bounds, enum, required), so a command need not check them again.
//
// A getter panics when the input is absent (not given and no default)
// or has another type than the getter reads: both are mistakes in the
// command's code, like a typo in an input ID. Use Has for an optional
// input without a default. The getters cannot tell an integer from a
// number that happens to be whole, nor a decimal from a string: Int
// reads any JSON integer, Float any JSON number, Decimal and String any
// JSON string.
//
// The methods are safe for concurrent use.
type Invocation struct {
	ID          string    // the invocation ID, as in rukh invocations show
	Command     string    // the canonical identity, <package>/<command id>
	Transport   string    // "cli" or "mcp"
	Interactive bool      // whether a person is at a terminal
	Deadline    time.Time // when the host stops the command; the handler's context ends then

	inputs map[string]input

	mu      sync.Mutex
	ch      *os.File // nil once the report is sent
	effects []extproto.Effect
	sealed  bool // the report is being built; no more effects
}

type input struct {
	value    *strictjson.Value
	explicit bool
}

// ErrReported is returned by Progress and AddEffect after the completion
// report has been sent.
var ErrReported = errors.New("extsdk: the completion report has been sent")

func newInvocation(f *extproto.Invoke, received time.Time, ch *os.File) (*Invocation, error) {
	v, err := strictjson.Parse(f.Inputs, strictjson.Limits{MaxBytes: extproto.MaxFrame, MaxDepth: extproto.MaxDepth, MaxMembers: extproto.MaxMembers})
	if err != nil {
		return nil, err
	}
	inv := &Invocation{
		ID:          f.InvocationID,
		Command:     f.Command,
		Transport:   f.Transport,
		Interactive: f.Interactive,
		Deadline:    received.Add(time.Duration(f.DeadlineMs) * time.Millisecond),
		inputs:      make(map[string]input, len(v.Members)),
		ch:          ch,
	}
	for _, m := range v.Members {
		inv.inputs[m.Name] = input{value: m.Value.Get("value"), explicit: m.Value.Get("explicit").Bool}
	}
	return inv, nil
}

// Has reports whether the input id has a value: given by the caller, or
// its declared default.
func (inv *Invocation) Has(id string) bool {
	_, ok := inv.inputs[id]
	return ok
}

// Explicit reports whether the caller gave the input id, rather than its
// value coming from the declared default. It is false for an absent input.
func (inv *Invocation) Explicit(id string) bool { return inv.inputs[id].explicit }

// String returns the string input id.
func (inv *Invocation) String(id string) string {
	return inv.get(id, "String", "a string", strictjson.String).Text
}

// Decimal returns the decimal input id as written, for example "12.50".
func (inv *Invocation) Decimal(id string) string {
	return inv.get(id, "Decimal", "a decimal (a JSON string)", strictjson.String).Text
}

// Bool returns the boolean input id.
func (inv *Invocation) Bool(id string) bool {
	return inv.get(id, "Bool", "a boolean", strictjson.Bool).Bool
}

// Int returns the integer input id.
func (inv *Invocation) Int(id string) int64 {
	return integer(id, "Int", inv.get(id, "Int", "an integer", strictjson.Number))
}

// Float returns the number input id.
func (inv *Invocation) Float(id string) float64 {
	return float(id, "Float", inv.get(id, "Float", "a number", strictjson.Number))
}

// Strings returns the list input id whose items are strings (or
// decimals, as written).
func (inv *Invocation) Strings(id string) []string {
	items := inv.list(id, "Strings", "strings", strictjson.String)
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Text
	}
	return out
}

// Ints returns the list input id whose items are integers.
func (inv *Invocation) Ints(id string) []int64 {
	items := inv.list(id, "Ints", "integers", strictjson.Number)
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = integer(id, "Ints", it)
	}
	return out
}

// Floats returns the list input id whose items are numbers.
func (inv *Invocation) Floats(id string) []float64 {
	items := inv.list(id, "Floats", "numbers", strictjson.Number)
	out := make([]float64, len(items))
	for i, it := range items {
		out[i] = float(id, "Floats", it)
	}
	return out
}

func (inv *Invocation) get(id, getter, want string, kind strictjson.Kind) *strictjson.Value {
	in, ok := inv.inputs[id]
	if !ok {
		panic(fmt.Sprintf("extsdk: %s(%q): the command has no value for input %q (not given, no default); check Has(%q) first, or fix the ID", getter, id, id, id))
	}
	if in.value.Kind != kind {
		panic(fmt.Sprintf("extsdk: %s(%q): input %q is a JSON %s, not %s; read it with the getter for its declared type", getter, id, id, in.value.Kind, want))
	}
	return in.value
}

func (inv *Invocation) list(id, getter, want string, kind strictjson.Kind) []*strictjson.Value {
	v := inv.get(id, getter, "a list of "+want, strictjson.Array)
	for i, it := range v.Items {
		if it.Kind != kind {
			panic(fmt.Sprintf("extsdk: %s(%q): item %d of input %q is a JSON %s, not one of the %s %s reads", getter, id, i, id, it.Kind, want, getter))
		}
	}
	return v.Items
}

func integer(id, getter string, v *strictjson.Value) int64 {
	n, err := strconv.ParseInt(v.Text, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("extsdk: %s(%q): %s is not an integer of input %q; read it with Float", getter, id, v.Text, id))
	}
	return n
}

func float(id, getter string, v *strictjson.Value) float64 {
	f, err := strconv.ParseFloat(v.Text, 64)
	if err != nil {
		panic(fmt.Sprintf("extsdk: %s(%q): %s is not a binary64 number", getter, id, v.Text))
	}
	return f
}

// Progress tells the host how the command is getting on: message (cut
// to extproto.MaxMessage bytes) and, when not negative, done out of
// total. Under the CLI, rukh shows it on a terminal; under MCP it may
// become a progress notification. The error is ErrReported after the
// report, or the channel's.
func (inv *Invocation) Progress(message string, done, total int64) error {
	if !utf8.ValidString(message) {
		message = strings.ToValidUTF8(message, "\uFFFD")
	}
	p := extproto.Progress{Message: cut(message, extproto.MaxMessage)}
	if done >= 0 {
		p.Done = &done
	}
	if total >= 0 {
		p.Total = &total
	}
	return inv.send(extproto.AppendProgress(nil, p), false)
}

// AddEffect records an effect the command has had (kind and ref, each at
// most extproto.MaxEffectField bytes of valid UTF-8), sent with the
// completion report whether the command succeeds or fails; at most
// extproto.MaxEffects.
func (inv *Invocation) AddEffect(kind, ref string) error {
	for _, s := range []string{kind, ref} {
		if len(s) > extproto.MaxEffectField || !utf8.ValidString(s) {
			return fmt.Errorf("extsdk: effect %q %q: kind and ref are valid UTF-8 of at most %d bytes", cut(kind, 32), cut(ref, 32), extproto.MaxEffectField)
		}
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	switch {
	case inv.ch == nil || inv.sealed:
		return ErrReported
	case len(inv.effects) >= extproto.MaxEffects:
		return fmt.Errorf("extsdk: a report holds at most %d effects", extproto.MaxEffects)
	}
	inv.effects = append(inv.effects, extproto.Effect{Kind: kind, Ref: ref})
	return nil
}

// seal returns the effects for the report and refuses more.
func (inv *Invocation) seal() []extproto.Effect {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.sealed = true
	return inv.effects
}

// send writes one frame; last marks the completion report, after which
// nothing more is sent.
func (inv *Invocation) send(frame []byte, last bool) error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.ch == nil {
		return ErrReported
	}
	inv.ch.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := inv.ch.Write(frame)
	if last {
		inv.ch = nil
	}
	return err
}

// cut cuts s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
