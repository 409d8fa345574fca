package invoke

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rukh-cli/rukh/descriptor"
	"github.com/rukh-cli/rukh/profile"
	"github.com/rukh-cli/rukh/store"
	"github.com/rukh-cli/rukh/values"
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
	path  string
	write bool
}

// pathResource normalizes a "path:" resource and returns the resources to
// authorize: the cleaned path (so /srv/public/../private is
// /srv/private), and, when a symlink leads elsewhere, the path it resolves
// to (so a link inside an allowed tree cannot reach outside it).
func pathResource(resource string) (clean, real string, err error) {
	p := strings.TrimPrefix(resource, "path:")
	if !filepath.IsAbs(p) {
		return "", "", fmt.Errorf("%q is not an absolute path", p)
	}
	clean = filepath.Clean(p)
	// Resolve the longest part that exists, and keep the rest: a path
	// that does not exist yet may still lead through a symlink.
	existing, rest := clean, ""
	for {
		if r, err := filepath.EvalSymlinks(existing); err == nil {
			return clean, filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return clean, clean, nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
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
	inv := &store.Invocation{
		ID: newInvocationID(), Identity: t.Command.Identity, Digest: t.Release.Digest, Revision: t.Revision,
		Transport: req.Transport, Task: ad.taskName, PID: os.Getpid(), PIDStart: selfStart(), StartedAt: c.Now().UTC(),
	}
	if err := c.updateSettled(func(tx *store.Tx) error {
		return tx.BeginInvocation(inv, ad.task.MaxConcurrent, hostAlive, c.Now().UTC())
	}); err != nil {
		var busy *store.BusyError
		if errors.As(err, &busy) {
			out := rejected(ReasonBusy, "%v", busy)
			out.InvocationID = inv.ID
			return out, c.recordRejected(t, req, ad, out)
		}
		// Nothing ran and nothing could be recorded; the message says why
		// (and err is the same, not another thing to report).
		return &Outcome{Outcome: Rejected, Reason: ReasonStoreUnavailable, Message: err.Error()}, err
	}
	req.Diagnostics.start(inv.ID, t, req, ad.taskName)
	if req.OnStart != nil {
		req.OnStart(inv.ID)
	}
	out = c.run(ctx, t, req, inv.ID, ad)
	out.InvocationID = inv.ID
	return out, c.finish(inv.ID, out)
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
		return ad, rejected(ReasonDenied, "task %q is not defined in the active profile", ad.taskName)
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
		return ad, rejected(ReasonDenied, "task %q may not run %s; the owner can add it to tasks.%s.commands", ad.taskName, cmd.Identity, ad.taskName)
	}
	for _, a := range cmd.Access {
		resource := expand(a.Resource, ad.inputs)
		if !strings.HasPrefix(resource, "path:") {
			if !allowed(ad.task.Allow, a.Action, resource) {
				return ad, rejected(ReasonDenied, "task %q does not allow %s on %q; the owner can add an allow rule to tasks.%s", ad.taskName, a.Action, resource, ad.taskName)
			}
			continue
		}
		clean, real, err := pathResource(resource)
		switch {
		case err != nil:
			return ad, rejected(ReasonDenied, "%s on %q: %v", a.Action, resource, err)
		case !allowed(ad.task.Allow, a.Action, "path:"+clean):
			return ad, rejected(ReasonDenied, "task %q does not allow %s on %q; the owner can add an allow rule to tasks.%s", ad.taskName, a.Action, "path:"+clean, ad.taskName)
		case !allowed(ad.task.Allow, a.Action, "path:"+real):
			return ad, rejected(ReasonDenied, "task %q does not allow %s on %q: %s resolves to %s, which it does not allow", ad.taskName, a.Action, "path:"+clean, clean, real)
		}
		ad.grants = append(ad.grants, grant{path: real, write: !strings.HasSuffix(a.Action, ".read")})
	}
	ad.deadline = time.Duration(ad.task.DeadlineMs) * time.Millisecond
	return ad, nil
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

func (c *Core) update(fn func(tx *store.Tx) error) error { return c.Store.Update(fn) }

// recordRejected commits a refusal as an invocation that began and ended
// at once, so it has an id and exactly one outcome like any other. When
// the store refuses it, the error is a *RecordError (nothing ran).
func (c *Core) recordRejected(t *Target, req *Request, ad *admission, out *Outcome) error {
	now := c.Now().UTC()
	inv := &store.Invocation{
		ID: out.InvocationID, Identity: t.Command.Identity, Digest: t.Release.Digest, Revision: t.Revision,
		Transport: req.Transport, Task: ad.taskName, PID: os.Getpid(), PIDStart: selfStart(), StartedAt: now,
	}
	err := c.updateSettled(func(tx *store.Tx) error {
		// A refusal occupies no slot: admit it against an unbounded limit.
		if err := tx.BeginInvocation(inv, int(^uint(0)>>1), hostAlive, now); err != nil {
			return err
		}
		_, err := tx.FinishInvocation(inv.ID, out.Outcome, out.Reason, 0, out.Message, now)
		return err
	})
	if err != nil {
		return &RecordError{ID: inv.ID, Outcome: outcomeName(out), Err: err}
	}
	return nil
}
