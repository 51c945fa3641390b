package remote

import (
	"bytes"
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
)

// A table's stored access policies (Get Table ACL, Set Table ACL) and the account's service
// properties (Get Table Service Properties, Set Table Service Properties): what an export
// carries beside the entities. The service lets only the account's key read or set a
// table's ACL, so through a shared access signature both calls fail with
// AuthorizationFailure.

// The remote handles have the optional interfaces of package tabula.
var (
	_ tabula.AccessPoliciesAPI    = (*Table)(nil)
	_ tabula.ServicePropertiesAPI = (*Client)(nil)
)

// AccessPolicies returns the table's stored access policies, in the order the service lists
// them (the order they were set); a missing table gives TableNotFound (ResourceNotFound on
// some services).
func (t *Table) AccessPolicies(ctx context.Context) ([]tabula.AccessPolicy, error) {
	ctx, ex := withExchange(ctx, "")
	resp, err := t.client.GetAccessPolicy(ctx, nil)
	if err != nil {
		return nil, ex.fail(err)
	}
	var out []tabula.AccessPolicy
	for _, si := range resp.SignedIdentifiers {
		if si == nil || si.ID == nil {
			continue
		}
		p := tabula.AccessPolicy{ID: *si.ID}
		if ap := si.AccessPolicy; ap != nil {
			if ap.Start != nil {
				p.Start = ap.Start.UTC()
			}
			if ap.Expiry != nil {
				p.Expiry = ap.Expiry.UTC()
			}
			if ap.Permission != nil {
				p.Permission = *ap.Permission
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// SetAccessPolicies replaces the table's stored access policies (none removes them all).
// The service checks them by the rules of tabula.Table.SetAccessPolicies and answers
// InvalidXmlDocument where the engine answers InvalidInput. The SDK writes times to the
// nanosecond; the service keeps them to 100 ns.
func (t *Table) SetAccessPolicies(ctx context.Context, policies []tabula.AccessPolicy) error {
	opts := &aztables.SetAccessPolicyOptions{}
	for _, p := range policies {
		si := &aztables.SignedIdentifier{ID: &p.ID}
		if !p.Start.IsZero() || !p.Expiry.IsZero() || p.Permission != "" {
			ap := &aztables.AccessPolicy{}
			if !p.Start.IsZero() {
				ap.Start = &p.Start
			}
			if !p.Expiry.IsZero() {
				ap.Expiry = &p.Expiry
			}
			if p.Permission != "" {
				ap.Permission = &p.Permission
			}
			si.AccessPolicy = ap
		}
		opts.TableACL = append(opts.TableACL, si)
	}
	ctx, ex := withExchange(ctx, "")
	if _, err := t.client.SetAccessPolicy(ctx, opts); err != nil {
		return ex.fail(err)
	}
	return nil
}

// ServiceProperties returns the account's service-properties document (logging, metrics,
// CORS rules) as the service sends it, without the XML declaration (and byte-order mark)
// before its root element: the form tabula.Namespace.ServiceProperties holds. The service
// always has one, its defaults when none was set, where an embedded namespace has none
// (nil). The document is read raw, not through the SDK's types, so that nothing the SDK
// does not know is lost.
func (c *Client) ServiceProperties(ctx context.Context) ([]byte, error) {
	ctx, ex := withExchange(ctx, "")
	ex.stub = "<StorageServiceProperties/>"
	if _, err := c.svc.GetProperties(ctx, nil); err != nil {
		return nil, ex.fail(err)
	}
	return documentOf(ex.body), nil
}

// SetServiceProperties sends doc, a StorageServiceProperties document, as the body of Set
// Table Service Properties, as it is: an element it leaves out keeps its value on the
// service.
func (c *Client) SetServiceProperties(ctx context.Context, doc []byte) error {
	ctx, ex := withExchange(ctx, "")
	ex.send = doc
	if _, err := c.svc.SetProperties(ctx, aztables.ServiceProperties{}, nil); err != nil {
		return ex.fail(err)
	}
	return nil
}

// documentOf strips what may come before an XML document's root element: a UTF-8 byte-order
// mark, the XML declaration, white space.
func documentOf(body []byte) []byte {
	doc := bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if bytes.HasPrefix(doc, []byte("<?xml")) {
		if _, rest, ok := bytes.Cut(doc, []byte("?>")); ok {
			doc = rest
		}
	}
	return bytes.Clone(bytes.TrimSpace(doc))
}
