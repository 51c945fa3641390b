package tabula

import (
	"context"
	"time"

	"github.com/tabuladb/tabula/storage"
	"github.com/vmihailenco/msgpack/v5"
)

// MaxAccessPolicies is the most stored access policies a table may have, as on the service.
const MaxAccessPolicies = 5

// MaxAccessPolicyID is the longest ID a stored access policy may have, in characters.
const MaxAccessPolicyID = 64

// AccessPolicy is a stored access policy of a table (Set Table ACL on the service): a shared
// access signature that names its ID (si) takes from it the fields it does not set itself,
// and stops working when the policy is removed or changed.
type AccessPolicy struct {
	// ID names the policy, 1 to 64 characters, unique within the table.
	ID string
	// Start and Expiry bound when signatures under the policy work; the zero time leaves
	// the bound to the signature.
	Start, Expiry time.Time
	// Permission is a subset of "raud" (query, add, update, delete), in that order; empty
	// leaves permissions to the signature.
	Permission string
}

// storedPolicy is an AccessPolicy as stored, times in ticks (0 for none).
type storedPolicy struct {
	ID         string `msgpack:"i"`
	Start      int64  `msgpack:"s,omitempty"`
	Expiry     int64  `msgpack:"e,omitempty"`
	Permission string `msgpack:"p,omitempty"`
}

// AccessPolicies returns the table's stored access policies, in the order they were set.
func (t *Table) AccessPolicies(ctx context.Context) ([]AccessPolicy, error) {
	var out []AccessPolicy
	err := t.read(ctx, func(ot *openTable) error {
		out = nil
		return t.db.view(ctx, func(tx *storage.Txn) (err error) {
			out, err = readAccessPolicies(tx, ot.rec.ID)
			return err
		})
	})
	return out, err
}

// SetAccessPolicies replaces the table's stored access policies (none removes them all),
// with the service's limits: at most MaxAccessPolicies, IDs of 1 to MaxAccessPolicyID
// characters and unique, permissions from "raud".
func (t *Table) SetAccessPolicies(ctx context.Context, policies []AccessPolicy) error {
	stored, err := storedPolicies(policies)
	if err != nil {
		return err
	}
	ot, err := t.acquire(ctx)
	if err != nil {
		return err
	}
	defer ot.mu.RUnlock()
	return t.db.update(ctx, func(tx *storage.Txn) error {
		// Read the catalog entry so that a concurrent DeleteTable conflicts with this write.
		rec, err := lookupTableIn(tx, t.ns, t.name)
		if err != nil {
			return err
		}
		return putStoredPolicies(tx, rec.ID, stored)
	})
}

// putAccessPolicies writes the access policies of table id in tx, after checking them by
// the service's rules (see SetAccessPolicies).
func putAccessPolicies(tx *storage.Txn, id uint64, policies []AccessPolicy) error {
	stored, err := storedPolicies(policies)
	if err != nil {
		return err
	}
	return putStoredPolicies(tx, id, stored)
}

// putStoredPolicies writes the stored access policies of table id in tx; none deletes
// the record.
func putStoredPolicies(tx *storage.Txn, id uint64, stored []storedPolicy) error {
	if len(stored) == 0 {
		return tx.Delete(aclKey(id))
	}
	doc, err := msgpack.Marshal(stored)
	if err != nil {
		return ErrInternal.WithDetail("encoding access policies: %v", err)
	}
	return tx.Set(aclKey(id), doc)
}

// readAccessPolicies reads the access policies of table id in tx (nil for none).
func readAccessPolicies(tx *storage.Txn, id uint64) ([]AccessPolicy, error) {
	var out []AccessPolicy
	_, err := tx.Get(aclKey(id), func(v []byte) (err error) {
		out, err = decodeAccessPolicies(v)
		return err
	})
	return out, err
}

// storedPolicies checks policies by the service's rules and converts them to their stored
// form.
func storedPolicies(policies []AccessPolicy) ([]storedPolicy, error) {
	if len(policies) > MaxAccessPolicies {
		return nil, ErrInvalidInput.WithDetail("%d access policies; a table may have at most %d", len(policies), MaxAccessPolicies)
	}
	stored := make([]storedPolicy, 0, len(policies))
	seen := map[string]bool{}
	for _, p := range policies {
		if n := len([]rune(p.ID)); n == 0 || n > MaxAccessPolicyID {
			return nil, ErrInvalidInput.WithDetail("access policy ID %q has %d characters; it must have 1 to %d", p.ID, n, MaxAccessPolicyID)
		}
		if seen[p.ID] {
			return nil, ErrInvalidInput.WithDetail("access policy ID %q is given twice", p.ID)
		}
		seen[p.ID] = true
		for _, c := range p.Permission {
			switch c {
			case 'r', 'a', 'u', 'd':
			default:
				return nil, ErrInvalidInput.WithDetail("access policy %q: permission %q is not one of r, a, u, d", p.ID, c)
			}
		}
		sp := storedPolicy{ID: p.ID, Permission: p.Permission}
		if !p.Start.IsZero() {
			sp.Start = ticksOf(p.Start)
		}
		if !p.Expiry.IsZero() {
			sp.Expiry = ticksOf(p.Expiry)
		}
		stored = append(stored, sp)
	}
	return stored, nil
}

// decodeAccessPolicies decodes a table's stored access policies.
func decodeAccessPolicies(v []byte) ([]AccessPolicy, error) {
	var stored []storedPolicy
	if err := msgpack.Unmarshal(v, &stored); err != nil {
		return nil, errCorrupt("access policies: " + err.Error())
	}
	out := make([]AccessPolicy, 0, len(stored))
	for _, p := range stored {
		ap := AccessPolicy{ID: p.ID, Permission: p.Permission}
		if p.Start != 0 {
			ap.Start = timeOfTicks(p.Start)
		}
		if p.Expiry != 0 {
			ap.Expiry = timeOfTicks(p.Expiry)
		}
		out = append(out, ap)
	}
	return out, nil
}
