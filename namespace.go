package tabula

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tabuladb/tabula/storage"
)

// Namespace is a set of tables of its own inside a DB, as each storage account of the
// service has: a table in one namespace is invisible in every other, and two namespaces may
// hold tables of the same name. It is what the REST front end serves each account from.
//
// The DB's own methods (CreateTable, Table, ListTables …) work on the root namespace,
// Namespace(""); a namespace needs no creating, and holds nothing until a table is created
// in it. A Namespace is a cheap handle, safe for concurrent use.
type Namespace struct {
	db   *DB
	name string
}

// Namespace returns the namespace called name; "" is the root namespace, whose tables are the
// ones the DB's own methods see.
func (db *DB) Namespace(name string) *Namespace { return &Namespace{db: db, name: name} }

// Name returns the namespace's name ("" for the root namespace).
func (n *Namespace) Name() string { return n.name }

// Table returns a handle on a table of the namespace without checking that it exists, as
// DB.Table does.
func (n *Namespace) Table(name string) *Table { return &Table{db: n.db, ns: n.name, name: name} }

// Namespaced keys (see keys.go): the root namespace keeps its catalog under 't', every other
// one under 'n' | esc(namespace) | separator, so the root's format is unchanged and no
// namespace's range contains another's.
const (
	prefixNamespaceTable = 'n'
	prefixProperties     = 'p' // 'p' | esc(namespace): the namespace's service properties
	prefixACL            = 'a' // 'a' | tableID: a table's stored access policies
)

func namespacePrefix(ns string) []byte {
	return storage.AppendSeparator(storage.AppendPart([]byte{prefixNamespaceTable}, ns))
}

// catalogKey is a table's catalog key in namespace ns.
func catalogKey(ns, name string) []byte {
	if ns == "" {
		return tableKey(name)
	}
	return append(namespacePrefix(ns), lowerASCII(name)...)
}

// catalogBounds are the lower (inclusive) and upper (exclusive) keys of namespace ns's
// catalog.
func catalogBounds(ns string) (lower, upper []byte) {
	if ns == "" {
		return []byte{prefixTable}, []byte{prefixTable + 1}
	}
	return namespacePrefix(ns), storage.AppendPartEnd(storage.AppendPart([]byte{prefixNamespaceTable}, ns))
}

func lowerASCII(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// serviceTableName is the name a table has in the simulated service (and its heat report):
// "namespace/Table" outside the root namespace.
func serviceTableName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func aclKey(id uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefixACL}, id) }

func propertiesKey(ns string) []byte { return storage.AppendPart([]byte{prefixProperties}, ns) }

// ServiceProperties returns the document last stored with SetServiceProperties, or nil when
// none was. Tabula keeps it for the REST front end, which stores there the XML of the
// service's Set Table Service Properties (logging, metrics, CORS rules), one per account.
func (n *Namespace) ServiceProperties(ctx context.Context) ([]byte, error) {
	var doc []byte
	err := n.db.view(ctx, func(tx *storage.Txn) error {
		_, err := tx.Get(propertiesKey(n.name), func(v []byte) error {
			doc = append([]byte{}, v...)
			return nil
		})
		return err
	})
	return doc, err
}

// SetServiceProperties stores the namespace's service-properties document (see
// ServiceProperties) with the data, replacing the one stored before.
func (n *Namespace) SetServiceProperties(ctx context.Context, doc []byte) error {
	if len(doc) > maxPropertiesSize {
		return ErrInvalidInput.with("service properties of %d bytes exceed %d", len(doc), maxPropertiesSize)
	}
	return n.db.update(ctx, func(tx *storage.Txn) error { return tx.Set(propertiesKey(n.name), doc) })
}

// maxPropertiesSize bounds a service-properties document; the service's request bodies are
// at most 4 MiB, and five CORS rules with their longest lists fit well within 64 KiB.
const maxPropertiesSize = 64 << 10

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
		return t.db.view(ctx, func(tx *storage.Txn) error {
			_, err := tx.Get(aclKey(ot.rec.ID), func(v []byte) error {
				var stored []storedPolicy
				if err := msgpack.Unmarshal(v, &stored); err != nil {
					return errCorrupt("access policies: " + err.Error())
				}
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
				return nil
			})
			return err
		})
	})
	return out, err
}

// SetAccessPolicies replaces the table's stored access policies (none removes them all),
// with the service's limits: at most MaxAccessPolicies, IDs of 1 to MaxAccessPolicyID
// characters and unique, permissions from "raud".
func (t *Table) SetAccessPolicies(ctx context.Context, policies []AccessPolicy) error {
	if len(policies) > MaxAccessPolicies {
		return ErrInvalidInput.with("%d access policies; a table may have at most %d", len(policies), MaxAccessPolicies)
	}
	stored := make([]storedPolicy, 0, len(policies))
	seen := map[string]bool{}
	for _, p := range policies {
		if n := len([]rune(p.ID)); n == 0 || n > MaxAccessPolicyID {
			return ErrInvalidInput.with("access policy ID %q has %d characters; it must have 1 to %d", p.ID, n, MaxAccessPolicyID)
		}
		if seen[p.ID] {
			return ErrInvalidInput.with("access policy ID %q is given twice", p.ID)
		}
		seen[p.ID] = true
		for _, c := range p.Permission {
			switch c {
			case 'r', 'a', 'u', 'd':
			default:
				return ErrInvalidInput.with("access policy %q: permission %q is not one of r, a, u, d", p.ID, c)
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
	doc, err := msgpack.Marshal(stored)
	if err != nil {
		return ErrInternal.with("encoding access policies: %v", err)
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
		if len(stored) == 0 {
			return tx.Delete(aclKey(rec.ID))
		}
		return tx.Set(aclKey(rec.ID), doc)
	})
}
