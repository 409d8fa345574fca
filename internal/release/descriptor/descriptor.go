// Package descriptor decodes and validates rukh-extension.json, the
// declaration an extension release makes of its commands, strictly: a
// descriptor either satisfies every rule of its format version or is
// rejected with every problem named by code and JSON pointer.
package descriptor

import (
	"slices"
	"strings"

	"github.com/rukh-cli/rukh/internal/release/descriptor/format"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
	"github.com/rukh-cli/rukh/internal/release/values"
)

// FileName is the descriptor's name at the root of a release.
const FileName = "rukh-extension.json"

// The descriptor formats this build reads (package format). Any other
// "schema" value is rejected as unsupported, never read leniently.
const (
	FormatV1 = format.V1
	FormatV2 = format.V2
)

// FeatureCommandResult is the machine feature a command needs to return a
// bounded, validated commandResult (and so to become an MCP tool).
const FeatureCommandResult = format.CommandResult

// KnownFeatures is the registry of machine features this build supports.
var KnownFeatures = format.Features()

// ReservedWords are the built-in command names; no extension route may
// start with one.
var ReservedWords = format.ReservedWords()

// ReservedFlags are flag names every extension command gets from the CLI;
// no input may declare them. "h" is reserved as a short flag.
var ReservedFlags = []string{"help", "json"}

// Descriptor is a validated rukh-extension.json.
type Descriptor struct {
	Schema      string // FormatV1 or FormatV2
	Package     string
	Version     string
	Publisher   string
	Description string
	Commands    []*Command
}

// Format returns the descriptor format version, 1 or 2.
func (d *Descriptor) Format() int {
	if d.Schema == FormatV1 {
		return 1
	}
	return 2
}

// Command is one declared command.
type Command struct {
	ID          string
	Identity    string // canonical identity: <package>/<id>
	Path        []string
	Aliases     [][]string
	Summary     string
	Description string
	Inputs      []Input
	Execute     Execute
	Machine     Machine
	Access      []Access
	Effects     Effects
	// Eligibility is computed by Decode from the rules of invariant I2
	// (docs/invariants.md).
	Eligibility Eligibility
}

// Route returns the command's path as the words a person types.
func (c *Command) Route() string { return strings.Join(c.Path, " ") }

// Specs returns the typed contracts of the command's inputs, in
// declaration order.
func (c *Command) Specs() []values.Spec {
	specs := make([]values.Spec, len(c.Inputs))
	for i, in := range c.Inputs {
		specs[i] = in.Spec
	}
	return specs
}

// Input is one declared input: its typed contract plus how the CLI
// presents it. Exactly one of Flag and Positional is set.
type Input struct {
	values.Spec
	Flag       string // long flag name without dashes; "" for a positional
	Short      string // one ASCII letter, or ""
	Positional int    // index among positionals, or -1
}

// Mapping says how the host runs a command's program.
type Mapping string

// The mappings.
const (
	Managed     Mapping = "managed"     // typed inputs over rukh.ipc/1, completion report
	Passthrough Mapping = "passthrough" // raw argv and the terminal, CLI only
)

// Lifetime says whether the program is expected to finish in the call.
type Lifetime string

// The lifetimes.
const (
	Foreground Lifetime = "foreground"
	Background Lifetime = "background"
)

// Execute is how a command runs.
type Execute struct {
	Mapping  Mapping
	Program  string   // slash-separated path inside the release
	Args     []string // fixed leading arguments
	Lifetime Lifetime
	Result   *resultschema.Result // nil when none is declared
}

// Interaction says whether a command needs a person to answer it.
type Interaction string

// The interaction levels.
const (
	InteractionNone     Interaction = "none"
	InteractionOptional Interaction = "optional"
	InteractionRequired Interaction = "required"
)

// Machine is the machine contract a command requests.
type Machine struct {
	Eligible         bool // requested, not granted; see Command.Eligibility
	Interaction      Interaction
	RequiredFeatures []string
}

// Access is one action/resource request. Resource may hold {inputId}
// placeholders naming declared inputs.
type Access struct {
	Action   string
	Resource string
}

// EffectClass is the declared effect of a command.
type EffectClass string

// The effect classes. An empty class means the publisher said nothing.
const (
	EffectNone        EffectClass = "none"
	EffectRead        EffectClass = "read"
	EffectWrite       EffectClass = "write"
	EffectExternal    EffectClass = "external" // acts on the world outside this machine
	EffectDestructive EffectClass = "destructive"
)

// Effects is what a command declares about its effects. It is publisher
// information, never a grant.
type Effects struct {
	Class      EffectClass
	Idempotent *bool // nil when not declared
	OpenWorld  *bool // nil when not declared (MCP then assumes an open world)
}

// Counted is the effect class admission counts a command as: its own,
// or destructive when it declares none (a rukh.extension/1 command).
func (e Effects) Counted() EffectClass {
	if e.Class == "" {
		return EffectDestructive
	}
	return e.Class
}

// Eligibility is whether a command can become an MCP tool (invariant I2,
// docs/invariants.md), and if not, every reason why.
type Eligibility struct {
	Eligible bool
	Reasons  []Reason
}

// Reason is one cause of ineligibility: a stable code and an explanation.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The ineligibility reasons.
var (
	ReasonFormatV1       = Reason{"format_v1", "rukh.extension/1 commands are CLI-only; publish a rukh.extension/2 release"}
	ReasonNotRequested   = Reason{"not_requested", "machine.eligible is not true"}
	ReasonPassthrough    = Reason{"passthrough", "passthrough programs are never exported as tools"}
	ReasonBackground     = Reason{"background", "background commands cannot return a finalized result"}
	ReasonNoResult       = Reason{"no_result", "execute.result is not declared"}
	ReasonMissingFeature = Reason{"missing_feature", "machine.requiredFeatures does not include " + FeatureCommandResult}
)

// String explains e in one line.
func (e Eligibility) String() string {
	if e.Eligible {
		return "eligible"
	}
	msgs := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		msgs[i] = r.Message
	}
	return "not eligible: " + strings.Join(msgs, "; ")
}

func eligibility(format int, c *Command) Eligibility {
	if format == 1 {
		return Eligibility{Reasons: []Reason{ReasonFormatV1}}
	}
	var rs []Reason
	if !c.Machine.Eligible {
		rs = append(rs, ReasonNotRequested)
	}
	rs = append(rs, obstacles(c)...)
	return Eligibility{Eligible: len(rs) == 0, Reasons: rs}
}

// obstacles are the reasons a command could not be a tool even if its
// publisher asked.
func obstacles(c *Command) []Reason {
	var rs []Reason
	if c.Execute.Mapping == Passthrough {
		rs = append(rs, ReasonPassthrough)
	}
	if c.Execute.Lifetime == Background {
		rs = append(rs, ReasonBackground)
	}
	if c.Execute.Result == nil {
		rs = append(rs, ReasonNoResult)
	}
	if !slices.Contains(c.Machine.RequiredFeatures, FeatureCommandResult) {
		rs = append(rs, ReasonMissingFeature)
	}
	return rs
}
