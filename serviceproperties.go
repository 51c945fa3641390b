package tabula

import (
	"context"

	"github.com/tabuladb/tabula/storage"
)

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
		return ErrInvalidInput.WithDetail("service properties of %d bytes exceed %d", len(doc), maxPropertiesSize)
	}
	return n.db.update(ctx, func(tx *storage.Txn) error { return tx.Set(propertiesKey(n.name), doc) })
}

// maxPropertiesSize bounds a service-properties document; the service's request bodies are
// at most 4 MiB, and five CORS rules with their longest lists fit well within 64 KiB.
const maxPropertiesSize = 64 << 10
