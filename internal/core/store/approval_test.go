package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/core/store/storetest"
)

// call is an approval request for the deploy command with inputs in,
// under task, asked at t0.
func call(id, task, in string) *store.Approval {
	return &store.Approval{
		ID: id, Identity: "acme.deploy/rollback", Digest: digest("acme.deploy@1"), Task: task,
		InputsDigest: digest(in), Inputs: in, EffectClass: "destructive", Transport: "mcp",
		RequestedBy: id, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
}

func approvalID(n int) string { return fmt.Sprintf("%032x", n) }

// TestApprovalLifecycle: an approval is asked for once per call (a retry
// before the answer gets the same id), approved once, used by exactly one
// matching call, and never by a call with other inputs, another task,
// another release, or after it expired (issue 9 item 6).
func TestApprovalLifecycle(t *testing.T) {
	s := storetest.Open(t)
	var first *store.Approval
	mustUpdate(t, s, func(tx *store.Tx) error {
		var err error
		first, err = tx.RequestApproval(call(approvalID(1), "agent", `{"env":"prod"}`), t0)
		if err != nil {
			return err
		}
		again, err := tx.RequestApproval(call(approvalID(2), "agent", `{"env":"prod"}`), t0.Add(time.Minute))
		if err != nil {
			return err
		}
		if again.ID != first.ID {
			t.Errorf("a retry before the answer got approval %s, want the pending %s", again.ID, first.ID)
		}
		// Not approved yet: nothing to use.
		if used, err := tx.UseApproval(call("", "agent", `{"env":"prod"}`), approvalID(90), t0); err != nil || used != nil {
			t.Errorf("UseApproval of a pending approval = %v, %v; want none", used, err)
		}
		return nil
	})
	mustUpdate(t, s, func(tx *store.Tx) error {
		a, err := tx.Approve(first.ID, t0.Add(2*time.Minute))
		if err != nil || a.Status(t0.Add(2*time.Minute)) != store.ApprovalApproved {
			t.Fatalf("Approve = %+v, %v", a, err)
		}
		var ae *store.ApprovalError
		if _, err := tx.Approve(first.ID, t0.Add(3*time.Minute)); !errors.As(err, &ae) || ae.Status != store.ApprovalApproved {
			t.Errorf("approving twice: %v, want ApprovalError approved", err)
		}
		return nil
	})

	other := func(mod func(*store.Approval)) *store.Approval {
		a := call("", "agent", `{"env":"prod"}`)
		mod(a)
		return a
	}
	misses := []struct {
		name string
		want *store.Approval
		at   time.Time
	}{
		{"other inputs", other(func(a *store.Approval) { a.InputsDigest = digest(`{"env":"stage"}`) }), t0.Add(5 * time.Minute)},
		{"another task", other(func(a *store.Approval) { a.Task = "ops" }), t0.Add(5 * time.Minute)},
		{"another release", other(func(a *store.Approval) { a.Digest = digest("acme.deploy@2") }), t0.Add(5 * time.Minute)},
		{"another command", other(func(a *store.Approval) { a.Identity = "acme.deploy/status" }), t0.Add(5 * time.Minute)},
		{"expired", other(func(*store.Approval) {}), t0.Add(time.Hour)},
	}
	for _, m := range misses {
		mustUpdate(t, s, func(tx *store.Tx) error {
			if used, err := tx.UseApproval(m.want, approvalID(91), m.at); err != nil || used != nil {
				t.Errorf("%s: UseApproval = %+v, %v; want none", m.name, used, err)
			}
			return nil
		})
	}

	mustUpdate(t, s, func(tx *store.Tx) error {
		at := t0.Add(10 * time.Minute)
		used, err := tx.UseApproval(call("", "agent", `{"env":"prod"}`), approvalID(92), at)
		if err != nil || used == nil || used.ID != first.ID || used.UsedBy != approvalID(92) {
			t.Fatalf("UseApproval of the approved call = %+v, %v", used, err)
		}
		if again, err := tx.UseApproval(call("", "agent", `{"env":"prod"}`), approvalID(93), at); err != nil || again != nil {
			t.Errorf("a second use = %+v, %v; want none (single use)", again, err)
		}
		var ae *store.ApprovalError
		if _, err := tx.Approve(first.ID, at); !errors.As(err, &ae) || ae.Status != store.ApprovalUsed {
			t.Errorf("approving a used approval: %v, want ApprovalError used", err)
		}
		// The same call made again asks for a new approval.
		next, err := tx.RequestApproval(call(approvalID(3), "agent", `{"env":"prod"}`), at)
		if err != nil || next.ID != approvalID(3) {
			t.Errorf("a call after the use asked with %+v, %v; want a new approval", next, err)
		}
		return nil
	})

	mustUpdate(t, s, func(tx *store.Tx) error {
		var ae *store.ApprovalError
		if _, err := tx.Approve(approvalID(3), t0.Add(2*time.Hour)); !errors.As(err, &ae) || ae.Status != store.ApprovalExpired {
			t.Errorf("approving an expired approval: %v, want ApprovalError expired", err)
		}
		if _, err := tx.Approve(approvalID(77), t0); !errors.As(err, &ae) || ae.Status != "" {
			t.Errorf("approving an unknown id: %v, want ApprovalError with no status", err)
		}
		if _, err := tx.Approve("not-an-id", t0); !errors.As(err, &ae) {
			t.Errorf("approving a malformed id: %v, want ApprovalError", err)
		}
		return nil
	})
}

// TestApprovalLimit: the approvals kept are bounded; expired and used ones
// older than ApprovalKeep make room, live ones do not.
func TestApprovalLimit(t *testing.T) {
	s := storetest.Open(t)
	mustUpdate(t, s, func(tx *store.Tx) error {
		for i := range store.MaxApprovals {
			if _, err := tx.RequestApproval(call(approvalID(i+1), "agent", fmt.Sprint(i)), t0); err != nil {
				return err
			}
		}
		var le *store.ApprovalLimitError
		if _, err := tx.RequestApproval(call(approvalID(100000), "agent", "one more"), t0.Add(time.Minute)); !errors.As(err, &le) {
			t.Errorf("request past the limit: %v, want ApprovalLimitError", err)
		}
		// Once they have expired and been kept for ApprovalKeep, they go.
		later := t0.Add(time.Hour + store.ApprovalKeep + time.Second)
		if _, err := tx.RequestApproval(call(approvalID(100001), "agent", "one more"), later); err != nil {
			t.Errorf("request after the old ones expired: %v", err)
		}
		all, err := tx.Approvals()
		if err != nil || len(all) != 1 {
			t.Errorf("kept %d approvals (%v), want 1", len(all), err)
		}
		return nil
	})
}
