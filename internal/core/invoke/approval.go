package invoke

import (
	"strings"

	"github.com/rukh-cli/rukh/internal/core/store"
)

// Approvals returns the approvals kept, oldest first.
func (c *Core) Approvals() ([]*store.Approval, error) {
	var out []*store.Approval
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		out, err = tx.Approvals()
		return err
	})
	return out, err
}

// Approval returns the approval with this id; a missing one is an
// *store.ApprovalError.
func (c *Core) Approval(id string) (*store.Approval, error) {
	id = strings.ToLower(id)
	var out *store.Approval
	err := c.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		var err error
		out, err = tx.Approval(id)
		return err
	})
	if err == nil && out == nil {
		err = &store.ApprovalError{ID: id}
	}
	return out, err
}

// Approve approves a pending approval: the call it names, made again by
// the same task with the same inputs before it expires, then runs once.
// Only the owner's terminal path (`rukh approve`) calls it; no tool can.
func (c *Core) Approve(id string) (*store.Approval, error) {
	id = strings.ToLower(id)
	var out *store.Approval
	err := c.update(func(tx *store.Tx) error {
		var err error
		out, err = tx.Approve(id, c.Now().UTC())
		return err
	})
	return out, err
}
