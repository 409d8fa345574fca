package invoke

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rukh-cli/rukh/internal/cliname"
	"github.com/rukh-cli/rukh/internal/core/profile"
	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/values"
)

// admission is what admit decided for an invocation that may run.
type admission struct {
	taskName string
	task     profile.Task
	inputs   values.Map
	deadline time.Duration
	grants   []grant // the paths the call was granted (path: resources)
}

// grant is one path a call may use: its access named it, the task allowed
// it, and strict enforcement opens exactly these to the command.
type grant struct {
	path   string
	write  bool
	action string // the access's action, for the record of a refusal
}

// pathResource normalizes a "path:" resource and returns the resources to
// authorize: the cleaned path, as the caller wrote it (so
// /srv/public/../private is /srv/private), and the path the kernel will
// open for it (resolvePath): not the same when a symlink is on the way,
// whose target a `..` after it climbs from, or a link that leads nowhere
// yet but will be created through.
func pathResource(resource string) (clean, real string, err error) {
	p := strings.TrimPrefix(resource, "path:")
	if !filepath.IsAbs(p) {
		return "", "", fmt.Errorf("%q is not an absolute path", p)
	}
	real, err = resolvePath(p)
	return filepath.Clean(p), real, err
}

// maxLinks bounds the symbolic links one path may lead through, as the
// kernel's own (ELOOP) does.
const maxLinks = 40

// resolvePath resolves p as the kernel does when it opens p: component by
// component from the root, following every symbolic link, and applying
// `..` to what was resolved so far — so `lnk/..` is the parent of lnk's
// target, not the directory holding lnk. A link whose target does not
// exist is followed all the same (a write through it creates the
// target). A component that does not exist is taken as written; a `..`
// after it comes back to what exists, whose links are followed again (a
// command may create the missing directory before it opens the path).
func resolvePath(p string) (string, error) {
	resolved := "/"
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		switch {
		case err != nil:
			resolved = next
		case fi.Mode()&os.ModeSymlink != 0:
			if links++; links > maxLinks {
				return "", fmt.Errorf("%s leads through more than %d symbolic links", p, maxLinks)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				resolved = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
		default:
			resolved = next
		}
	}
	return resolved, nil
}

// Invoke runs one call of a pinned target through every phase and returns
// its committed outcome. It never returns a nil Outcome; err is set only
// when the outcome could not be committed to the store.
func (c *Core) Invoke(ctx context.Context, t *Target, req *Request) (out *Outcome, err error) {
	defer func() { req.Diagnostics.end(out, err) }()
	ad, out := c.admit(t, req)
	if out != nil {
		out.InvocationID = newInvocationID()
		return out, c.recordRejected(t, req, ad, out)
	}
	// The outcome of a call that runs must be kept even if the disk fills
	// while it runs: the reserve it would then be saved aside in is made
	// before anything is committed, one for each call (callreserve.go),
	// and held until its outcome is committed. A disk with no room for it
	// could not keep the outcome: nothing runs.
	id := newInvocationID()
	res, err := c.takeReserve(id)
	if err == nil {
		err = c.keepReserve()
	}
	if err != nil {
		res.release()
		return &Outcome{Outcome: Rejected, Reason: ReasonStoreUnavailable,
			Message: fmt.Sprintf("there is no room on the disk to keep this call's outcome (%v); nothing ran", err)}, err
	}
	defer res.release()
	inv := &store.Invocation{
		ID: id, Identity: t.Command.Identity, Digest: t.Release.Digest, Revision: t.Revision,
		Transport: req.Transport, Task: ad.taskName, Enforcement: ad.task.Enforcement,
		PID: os.Getpid(), PIDStart: selfStart(), StartedAt: c.Now().UTC(), Subject: req.Subject, Issuer: req.Issuer,
	}
	// A call whose effects the task keeps for the owner runs only by
	// using an approval for exactly this call, in the transaction that
	// admits it; otherwise the same transaction asks for one.
	want := ad.approvalFor(t, req)
	b := &beginning{commit: func() (*Outcome, error) {
		if c.Begun != nil {
			defer c.Begun()
		}
		return c.begin(t, req, ad, inv, want)
	}}
	b.announce = func() {
		req.Diagnostics.start(inv.ID, t, req, ad.taskName)
		if req.OnStart != nil {
			req.OnStart(inv.ID)
		}
	}
	// The begin record (b) commits before the command can run: before
	// its start, or, when the helper can hold the command at its gate,
	// while the helper starts and before the gate opens: the client that
	// forwarded the call (Spawner) starts it while this goroutine
	// commits, and a helper this process starts, run starts in a
	// goroutine of its own (startWhileCommitting). An outcome run decides
	// before any of that (a missing program, say) is still recorded after
	// its begin.
	out = c.run(ctx, t, req, inv.ID, ad, b)
	if refused, err := b.wait(); refused != nil {
		return refused, err
	}
	b.started()
	out.InvocationID = inv.ID
	out.Attempt.ApprovalID = inv.Attempt.ApprovalID
	return out, c.finish(inv.ID, out, res)
}

// beginning is the commit of an admitted call's begin record, made once
// (wait) before its command may run, and the announcement that the call
// started, made once the record is durable (started).
type beginning struct {
	commit   func() (refused *Outcome, err error)
	announce func()

	once, announced sync.Once
	refused         *Outcome
	err             error
}

// wait commits the begin record, or waits for the commit another
// goroutine makes, and returns a refusal (recorded) if it was refused.
func (b *beginning) wait() (*Outcome, error) {
	b.once.Do(func() { b.refused, b.err = b.commit() })
	return b.refused, b.err
}

// started announces the call (its diagnostics, Request.OnStart) once.
func (b *beginning) started() { b.announced.Do(b.announce) }

// begin commits inv, the begin record of an admitted call, durably, using
// the approval want if the task needs one (or asking for it). A non-nil
// Outcome is a refusal, recorded.
func (c *Core) begin(t *Target, req *Request, ad *admission, inv *store.Invocation, want *store.Approval) (*Outcome, error) {
	var asked *store.Approval
	err := store.ErrNotJournaled
	if j, ok := c.Store.(store.Journaler); ok && want == nil {
		// rukhd's store: one fdatasync of the journal, no commit.
		if err = j.JournalBegin(inv, ad.task.MaxConcurrent, c.hostAlive); !errors.Is(err, store.ErrNotJournaled) {
			c.health.noteWrite(err, c.Now())
		}
	}
	if errors.Is(err, store.ErrNotJournaled) {
		err = c.updateSettled(func(tx *store.Tx) error {
			now := c.Now().UTC()
			asked, inv.Attempt = nil, store.Attempt{} // a retried transaction starts afresh
			if want != nil {
				used, err := tx.UseApproval(want, inv.ID, now)
				if err != nil {
					return err
				}
				if used == nil {
					want.RequestedBy, want.CreatedAt, want.ExpiresAt = inv.ID, now, now.Add(ad.task.ApprovalTTL())
					asked, err = tx.RequestApproval(want, now)
					return err
				}
				inv.Attempt.ApprovalID = used.ID
			}
			return tx.BeginInvocation(inv, ad.task.MaxConcurrent, c.hostAlive, now)
		})
	}
	if err != nil {
		var busy *store.BusyError
		var many *store.ApprovalLimitError
		switch {
		case errors.As(err, &busy):
			out := rejected(ReasonBusy, "%v", busy)
			out.InvocationID = inv.ID
			return out, c.recordRejected(t, req, ad, out)
		case errors.As(err, &many):
			out := rejected(ReasonApprovalRequired, "%s needs the owner's approval under task %q, and no more can be asked for: %v", t.Command.Identity, ad.taskName, many)
			out.InvocationID = inv.ID
			return out, c.recordRejected(t, req, ad, out)
		}
		// Nothing ran and nothing could be recorded; the message says why
		// (and err is the same, not another thing to report).
		return &Outcome{Outcome: Rejected, Reason: ReasonStoreUnavailable, Message: err.Error()}, err
	}
	if asked != nil {
		out := rejected(ReasonApprovalRequired, "%s is %s and task %q runs such calls only with the owner's approval: the owner runs "+cliname.Cmd("approve %s")+" at a terminal, then this same call, made again before %s, runs once",
			t.Command.Identity, asked.EffectClass, ad.taskName, asked.ID, asked.ExpiresAt.Format(time.RFC3339))
		out.Attempt.ApprovalID = asked.ID
		out.InvocationID = inv.ID
		return out, c.recordRejected(t, req, ad, out)
	}
	return nil, nil
}

// detail is what the record keeps besides the outcome: the message, and
// how much drained output there was and how much of it was dropped.
func detail(out *Outcome) string {
	d := out.Diagnostics
	if d.StdoutBytes+d.StderrBytes == 0 {
		return out.Message
	}
	s := fmt.Sprintf("drained output: stdout %d bytes (%d dropped), stderr %d bytes (%d dropped)",
		d.StdoutBytes, d.StdoutDropped, d.StderrBytes, d.StderrDropped)
	if out.Message != "" {
		s = out.Message + "; " + s
	}
	return s
}

// admit checks support, inputs and authorization, and picks the task
// preset. A non-nil Outcome is a refusal.
func (c *Core) admit(t *Target, req *Request) (*admission, *Outcome) {
	cmd := t.Command
	ad := &admission{taskName: t.Profile.CLI.Task}
	if req.Transport == TransportMCP {
		ad.taskName = t.Profile.MCP.Task
	}
	if req.Task != "" {
		ad.taskName = req.Task
	}
	task, ok := t.Profile.Tasks[ad.taskName]
	if !ok {
		return ad, denied("run", cmd.Identity, "task %q is not defined in the active profile", ad.taskName)
	}
	ad.task = task

	// Support.
	switch {
	case req.Transport == TransportMCP && !cmd.Eligibility.Eligible:
		return ad, rejected(ReasonUnsupported, "%s is not machine-eligible: %s", cmd.Identity, cmd.Eligibility)
	case cmd.Execute.Lifetime == descriptor.Background:
		return ad, rejected(ReasonUnsupported, "%s runs in the background, which this build does not support", cmd.Identity)
	case cmd.Machine.Interaction == descriptor.InteractionRequired && (req.Transport == TransportMCP || !req.Interactive):
		return ad, rejected(ReasonInteractionRequired, "%s needs a person to answer it; run it from a terminal", cmd.Identity)
	}

	// Inputs, through the one typed model.
	if cmd.Execute.Mapping == descriptor.Managed {
		var m values.Map
		var verr *values.Error
		if req.Transport == TransportMCP {
			m, verr = values.FromArguments(cmd.Specs(), req.Arguments)
		} else {
			m, verr = values.FromCLI(cmd.Specs(), req.CLIInputs)
		}
		if verr != nil {
			if req.Transport == TransportMCP {
				// An agent names properties, not flags.
				return ad, rejected(ReasonInvalidInput, "property %q: %s", verr.Input, verr.Message)
			}
			return ad, rejected(ReasonInvalidInput, "%s", describeInputError(cmd, verr))
		}
		ad.inputs = m
	}

	// Authorization: the task preset must cover the command and every
	// access request it makes with these inputs.
	if !matchesAny(ad.task.Commands, cmd.Identity) {
		return ad, denied("run", cmd.Identity, "task %q may not run %s; the owner can add it to tasks.%s.commands", ad.taskName, cmd.Identity, ad.taskName)
	}
	for _, a := range cmd.Access {
		resource := expand(a.Resource, ad.inputs)
		if !strings.HasPrefix(resource, "path:") {
			if !allowed(ad.task.Allow, a.Action, resource) {
				return ad, denied(a.Action, resource, "task %q does not allow %s on %q; the owner can add an allow rule to tasks.%s", ad.taskName, a.Action, resource, ad.taskName)
			}
			continue
		}
		clean, real, err := pathResource(resource)
		switch {
		case err != nil:
			return ad, denied(a.Action, resource, "%s on %q: %v", a.Action, resource, err)
		case !allowed(ad.task.Allow, a.Action, "path:"+clean):
			return ad, denied(a.Action, "path:"+clean, "task %q does not allow %s on %q; the owner can add an allow rule to tasks.%s", ad.taskName, a.Action, "path:"+clean, ad.taskName)
		case !allowed(ad.task.Allow, a.Action, "path:"+real):
			return ad, denied(a.Action, "path:"+real, "task %q does not allow %s on %q: %s resolves to %s, which it does not allow", ad.taskName, a.Action, "path:"+clean, clean, real)
		}
		ad.grants = append(ad.grants, grant{path: real, write: !strings.HasSuffix(a.Action, ".read"), action: a.Action})
		// The command is handed the path that was authorized, when the
		// resource is one input: what it opens is what was checked, not
		// what the kernel would make of the text it was given.
		if id, ok := wholeInput(a.Resource, "path:"); ok {
			if e, ok := ad.inputs[id]; ok && e.Value.Type() == values.String {
				e.Value = values.StringValue(real)
				ad.inputs[id] = e
			}
		}
	}
	ad.deadline = time.Duration(ad.task.DeadlineMs) * time.Millisecond
	// An approval a host command could give itself is none: a profile
	// published before such tasks were refused (profile.Profile.CheckApply)
	// still runs, but not the calls it keeps for approval.
	if ad.task.Enforcement == profile.EnforceHost && ad.approvalFor(t, req) != nil {
		return ad, rejected(ReasonEnforcementUnavailable, "%s needs the owner's approval under task %q, which runs its commands under %q, where a command acts as the owner and could approve its own call; nothing was run: "+
			"make the task %q or %q (%s)", t.Command.Identity, ad.taskName, profile.EnforceHost, profile.EnforceRestricted, profile.EnforceStrict, cliname.Cmd("profile apply"))
	}
	return ad, nil
}

// denied refuses a call for an action on a resource the task does not
// allow, and keeps both for the record.
func denied(action, resource, format string, args ...any) *Outcome {
	out := rejected(ReasonDenied, format, args...)
	out.Attempt = store.Attempt{Action: action, Resource: resource}
	return out
}

func describeInputError(cmd *descriptor.Command, e *values.Error) string {
	for _, in := range cmd.Inputs {
		if in.ID != e.Input {
			continue
		}
		switch {
		case in.Flag != "":
			return fmt.Sprintf("--%s: %s", in.Flag, e.Message)
		default:
			return fmt.Sprintf("argument %d (%s): %s", in.Positional+1, in.ID, e.Message)
		}
	}
	return e.Message
}

func matchesAny(patterns []string, identity string) bool {
	for _, p := range patterns {
		if profile.Matches(p, identity) {
			return true
		}
	}
	return false
}

// wholeInput reports whether template is prefix followed by exactly one
// placeholder, and which input it names.
func wholeInput(template, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(template, prefix)
	if !ok || !strings.HasPrefix(rest, "{") || !strings.HasSuffix(rest, "}") || strings.Count(rest, "{") != 1 {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

// expand fills {id} placeholders of a resource template with input values.
func expand(template string, inputs values.Map) string {
	if !strings.Contains(template, "{") {
		return template
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(template, '{')
		j := strings.IndexByte(template, '}')
		if i < 0 || j < i {
			b.WriteString(template)
			return b.String()
		}
		b.WriteString(template[:i])
		if e, ok := inputs[template[i+1:j]]; ok {
			b.WriteString(e.Value.Text())
		}
		template = template[j+1:]
	}
}

// Unallowed is the first access request of cmd that task grants for no
// inputs at all, so that admit denies every call of cmd under task: an
// action no allow rule names, or a resource without placeholders that no
// rule covers (a path one as admit cleans it). ok is false when some call
// could be admitted; a resource that depends on the inputs, or on the
// links a path leads through, is then the call's to decide.
func Unallowed(task profile.Task, cmd *descriptor.Command) (a descriptor.Access, ok bool) {
	for _, a := range cmd.Access {
		named := false
		for _, r := range task.Allow {
			if m, _ := path.Match(r.Action, a.Action); m {
				named = true
				break
			}
		}
		if !named {
			return a, true
		}
		resource := a.Resource
		if strings.Contains(resource, "{") {
			continue
		}
		if p, isPath := strings.CutPrefix(resource, "path:"); isPath {
			if !filepath.IsAbs(p) {
				return a, true // admit refuses a relative path
			}
			resource = "path:" + filepath.Clean(p)
		}
		if !allowed(task.Allow, a.Action, resource) {
			return a, true
		}
	}
	return descriptor.Access{}, false
}

func allowed(rules []profile.Rule, action, resource string) bool {
	for _, r := range rules {
		a, _ := path.Match(r.Action, action)
		if a && matchResource(r.Resource, resource) {
			return true
		}
	}
	return false
}

// matchResource matches a resource against an allow pattern: path.Match
// wildcards, and a final "**" that matches the rest whatever it holds
// ("path:/srv/public/**" covers every path under /srv/public).
func matchResource(pattern, resource string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "**"); ok && !strings.ContainsAny(prefix, "*?[\\") {
		return strings.HasPrefix(resource, prefix)
	}
	m, _ := path.Match(pattern, resource)
	return m
}

// update runs fn in a write transaction that concurrent calls of this
// host may share (store.Provider.Batch: one commit, and its fsyncs, for
// all of them; nothing is acknowledged before it is durable). Every fn
// given to it sets what it reports afresh on each run, as Batch needs.
func (c *Core) update(fn func(tx *store.Tx) error) error {
	err := c.Store.Batch(fn)
	c.health.noteWrite(err, c.Now())
	return err
}

// recordRejected commits a refusal as an invocation that began and ended
// at once, so it has an id and exactly one outcome like any other. When
// the store refuses it, the error is a *RecordError (nothing ran).
func (c *Core) recordRejected(t *Target, req *Request, ad *admission, out *Outcome) error {
	now := c.Now().UTC()
	inv := &store.Invocation{
		ID: out.InvocationID, Identity: t.Command.Identity, Digest: t.Release.Digest, Revision: t.Revision,
		Transport: req.Transport, Task: ad.taskName, Enforcement: ad.task.Enforcement,
		PID: os.Getpid(), PIDStart: selfStart(), StartedAt: now, Subject: req.Subject, Issuer: req.Issuer,
	}
	err := c.updateSettled(func(tx *store.Tx) error {
		// A refusal occupies no slot: admit it against an unbounded limit.
		if err := tx.BeginInvocation(inv, int(^uint(0)>>1), c.hostAlive, now); err != nil {
			return err
		}
		_, err := tx.Finish(inv.ID, &store.Finish{Outcome: out.Outcome, Reason: out.Reason, Detail: out.Message, Attempt: out.Attempt}, now)
		return err
	})
	if err != nil {
		return &RecordError{ID: inv.ID, Outcome: outcomeName(out), Err: err}
	}
	return nil
}

// argvDigest is the SHA-256 of argv's exact bytes, each argument
// length-prefixed, so that no two argument lists share it.
func argvDigest(argv []string) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte("rukh.argv/1\x00"))
	var n [binary.MaxVarintLen64]byte
	for _, a := range argv {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(a)))])
		h.Write([]byte(a))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// approvalFor returns the approval this call needs — bound to its
// command, release, task and exact inputs — or nil when its task does not
// keep its command's effects for the owner. A command that declares no
// effects (a version 1 descriptor) counts as destructive.
func (ad *admission) approvalFor(t *Target, req *Request) *store.Approval {
	class := t.Command.Effects.Counted()
	if !ad.task.NeedsApproval(class) {
		return nil
	}
	inputs := ad.inputs.AppendJSON(nil)
	sum := sha256.Sum256(inputs)
	if t.Command.Execute.Mapping == descriptor.Passthrough {
		// A passthrough command's inputs are its argv: the approval is of
		// these exact bytes (JSON would make arguments that differ only
		// in invalid UTF-8 one call), and shows them as JSON.
		inputs, _ = json.Marshal(struct {
			Argv []string `json:"argv"`
		}{append([]string{}, req.Argv...)})
		sum = argvDigest(req.Argv)
	}
	shown := string(inputs)
	if len(shown) > store.MaxApprovalInputs {
		shown = strings.ToValidUTF8(shown[:store.MaxApprovalInputs-16], "") + "… (cut)"
	}
	return &store.Approval{
		ID: newInvocationID(), Identity: t.Command.Identity, Digest: t.Release.Digest, Task: ad.taskName,
		InputsDigest: hex.EncodeToString(sum[:]), Inputs: shown, EffectClass: string(class), Transport: req.Transport,
	}
}
