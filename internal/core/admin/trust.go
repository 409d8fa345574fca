package admin

import (
	"fmt"
	"slices"

	"github.com/rukh-cli/rukh/internal/core/store"
	"github.com/rukh-cli/rukh/internal/release/descriptor"
	"github.com/rukh-cli/rukh/internal/release/trust"
)

// TrustAdd trusts the public key in pubPath for publisher.
func (a *Admin) TrustAdd(publisher, pubPath string) (*Result, string, error) {
	if !descriptor.ValidPublisher(publisher) {
		return nil, "", fmt.Errorf("%q is not a publisher name: lowercase letters and digits joined by \"-\" or \".\"", publisher)
	}
	pub, err := trust.ReadPublicKey(pubPath)
	if err != nil {
		return nil, "", err
	}
	return a.trustKey(publisher, pub)
}

// trustKey trusts pub for publisher, as one revision.
func (a *Admin) trustKey(publisher string, pub trust.PublicKey) (*Result, string, error) {
	id := pub.ID()
	res, err := a.publish(fmt.Sprintf("trust add %s %s", publisher, id[:len("sha256:")+12]), func(tx *store.Tx, c *Candidate) error {
		if err := tx.PutKey(&store.Key{Publisher: publisher, ID: id, Public: []byte(pub), AddedAt: a.Now().UTC(), AddedBy: a.UID}); err != nil {
			return err
		}
		c.Keys[publisher+"/"+id] = true
		return nil
	})
	return res, id, err
}

// TrustRemove stops trusting every key of publisher. It is refused while
// an active release depends on one of them.
func (a *Admin) TrustRemove(publisher string) (*Result, error) {
	return a.publish("trust remove "+publisher, func(tx *store.Tx, c *Candidate) error {
		n, err := tx.DeleteKeys(publisher)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("publisher %q is not trusted; see `trust list`", publisher)
		}
		for k := range c.Keys {
			if len(k) > len(publisher) && k[:len(publisher)+1] == publisher+"/" {
				delete(c.Keys, k)
			}
		}
		return nil
	})
}

// TrustedKeys lists the keys the active revision trusts.
func (a *Admin) TrustedKeys() ([]*store.Key, error) {
	var out []*store.Key
	err := a.view(func(tx *store.Tx) error {
		if tx == nil {
			return nil
		}
		cur, err := tx.ActiveRevision()
		if err != nil || cur == nil {
			return err
		}
		keys, err := tx.Keys("")
		if err != nil {
			return err
		}
		for _, k := range keys {
			if slices.Contains(cur.Keys, k.Publisher+"/"+k.ID) {
				out = append(out, k)
			}
		}
		return nil
	})
	return out, err
}
