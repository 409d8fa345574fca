// Package invoke is Rukh's one invocation core: every command, whichever
// presentation called it, is resolved, admitted, recorded, executed and
// finalized here, with exactly one committed outcome.
package invoke

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/extproto"
	"github.com/rukh-cli/rukh/internal/release/resultschema"
)

// The outcomes of an invocation (invariant I10, docs/invariants.md).
const (
	Succeeded       = "succeeded"
	CommandFailed   = "command_failed"
	ExecutionFailed = "execution_failed"
	Rejected        = "rejected"
	Cancelled       = "cancelled"
)

// The closed vocabulary of reasons (docs/reference.md §1).
const (
	ReasonInvalidInput        = "invalid_input"
	ReasonDenied              = "denied"
	ReasonUnsupported         = "unsupported"
	ReasonInteractionRequired = "interaction_required"
	ReasonBusy                = "busy"
	ReasonResultInvalid       = "result_invalid"
	ReasonResultTooLarge      = "result_too_large"
	ReasonSpawnFailed         = "spawn_failed"
	ReasonProtocolError       = "protocol_error"
	ReasonDeadline            = "deadline"
	ReasonClientCancelled     = "client_cancelled"
	ReasonInterrupted         = "interrupted"
	ReasonHostLost            = "host_lost"
	ReasonStoreUnavailable    = "store_unavailable"
	// The task's enforcement profile cannot be applied on this machine
	// (no helper, no Landlock ABI 4, no seccomp): refused, never run
	// weaker.
	ReasonEnforcementUnavailable = "enforcement_unavailable"
	// The task keeps calls with this command's effects for the owner:
	// the refusal names an approval (`rukh approve ID`), and the same
	// call made again once it is approved runs once.
	ReasonApprovalRequired = "approval_required"
)

// Transports.
const (
	TransportCLI = "cli"
	TransportMCP = "mcp"
)

// Core runs invocations against one data directory. Its store Provider
// serves short transactions; no transaction spans a command's run.
type Core struct {
	DataDir string
	Store   store.Provider
	// Grace is how long a command has between SIGTERM and SIGKILL when it
	// is stopped; it comes out of a budget that never renews.
	Grace time.Duration
	// FinishRetry is how long the host keeps trying to commit a decided
	// outcome after the store first refused it (0: DefaultFinishRetry).
	FinishRetry time.Duration
	// Hidden are the home's directories — data (the store, releases),
	// config and runtime (the daemon's socket) — which a restricted
	// command must not see (hiddenDirs adds the user's own runtime
	// directory); empty: DataDir alone.
	Hidden []string
	// Sandbox is the enforcement helper (rukh-sandbox); empty: look for it
	// beside the executable, then on $PATH.
	Sandbox string
	Now     func() time.Time
	// Elsewhere, when set, reaches a daemon that may hold the store while
	// this in-process core runs a call (one that started before the
	// daemon did): the call's outcome is then saved aside and committed
	// by that daemon at once, instead of waiting for a lock it will never
	// release.
	Elsewhere Settler
	// Begun, when set, is called once each call's begin record is
	// committed (or the call refused), on the goroutine that committed
	// it and before its command may run: a one-shot command line lets go
	// there of the store it held for the call's start
	// (local.Host.HoldStore), so that the command never runs holding it.
	Begun func()
	// KeepReserves is how many call reserves (callreserve.go) this core
	// keeps for its next calls once their outcomes are committed, instead
	// of giving them back to PendingDir: a host that serves call after
	// call (rukhd) then takes one with no file system work. 0 for a core
	// that exits after its call, whose kept reserves would be left behind
	// as a dead host's. A host that keeps some gives them back when it
	// stops serving (ReleaseReserves).
	KeepReserves int

	health   writeHealth
	reserves keptReserves
}

// Settler is a daemon that holds the store: Holds reports whether one
// answers now, and Settle has it commit the outcomes saved aside
// (PendingDir) before it returns.
type Settler interface {
	Holds() bool
	Settle() error
}

// New returns a Core for dataDir with default settings.
func New(dataDir string) *Core {
	// The store is locked only for short transactions; calls and owner
	// commands queue for it alike, for at most store.FilesTimeout.
	return &Core{DataDir: dataDir, Store: store.Files{Path: filepath.Join(dataDir, "store.db")},
		Grace: 2 * time.Second, Now: time.Now}
}

// Target is a resolved command, pinned for the whole invocation: the
// revision, the release and the declaration it was resolved in.
type Target struct {
	Revision uint64
	Profile  *profile.Profile
	Release  *store.Release
	Package  *descriptor.Descriptor
	Command  *descriptor.Command
	Words    []string // the route words that named it (CLI)
}

// Request is one call of a resolved command.
type Request struct {
	Transport string // TransportCLI or TransportMCP
	// Task is the task preset of a launch binding (`rukh mcp --task`);
	// empty means the profile's cli.task or mcp.task for the transport.
	Task string
	// Subject and Issuer are the verified caller of an HTTP call, recorded
	// with the invocation; empty for a local caller.
	Subject, Issuer string
	// Exactly one way of giving inputs applies: CLI strings per input id,
	// MCP JSON arguments, or raw argv for a passthrough command.
	CLIInputs map[string][]string
	Arguments []byte
	Argv      []string

	// The child's standard streams. An *os.File (a terminal) is handed to
	// the child as it is, and so is the file of a writer that has a
	// File() *os.File method (fileWriter); another writer gets a copy of
	// everything; a nil Stdin is /dev/null and a nil Stdout or Stderr is
	// drained into bounded diagnostics (Diagnostics).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Dir            string   // the caller's working directory
	Env            []string // the caller's environment; filtered by EnvAllowlist
	Interactive    bool
	OnStart        func(invocationID string) // called once an admitted invocation is recorded, before it runs
	OnProgress     func(extproto.Progress)
	CancelReason   func() string   // why ctx was cancelled: ReasonInterrupted (default) or ReasonClientCancelled
	Diagnostics    *DiagnosticsLog // where drained output and outcomes are logged; nil logs nothing
	// Spawner, when set, starts the command instead of this process
	// (rukhd: the client that forwarded the command line does).
	Spawner Spawner
}

// Outcome is the committed result of an invocation.
type Outcome struct {
	InvocationID string
	Outcome      string
	Reason       string
	Message      string // for a person: what happened and what to do
	Result       *resultschema.CommandResult
	Effects      []extproto.Effect
	ExitStatus   int // the command's own exit status, when it ran
	// Attempt is what a refusal refused (action and resource of a
	// denial, the approval an approval refusal asks for); a call that ran
	// under an approval names it too. It is recorded with the outcome.
	Attempt     store.Attempt
	Diagnostics Diagnostics
}

// Diagnostics counts child output that was drained rather than shown.
type Diagnostics struct {
	StdoutBytes, StderrBytes     int64
	StdoutDropped, StderrDropped int64
}

func (o *Outcome) Error() string {
	if o.Message != "" {
		return o.Message
	}
	return fmt.Sprintf("%s (%s)", o.Outcome, o.Reason)
}

func rejected(reason, format string, args ...any) *Outcome {
	return &Outcome{Outcome: Rejected, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func newInvocationID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("invoke: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}
