package tabula

import (
	"context"
	"errors"
	"iter"
)

// TableAPI is what code needs of a table to run on any backend: the embedded *Table, or a
// table of a remote service through package remote (tabula serve, Azurite, an Azure Storage
// account or the Cosmos DB Table API). Write repository code against it, and the backend is
// chosen where the program starts. Every method has the meaning, the errors and the
// *TransactionError of the *Table method of the same name.
//
// What only the embedded engine can know is left out: Explain, SplitRangePartition, and,
// on DB, HeatReport and the fault controls. On a remote backend a Page's Plan is the zero
// Plan, whose Kind is PlanUnavailable, because the service does not say how it ran a query.
type TableAPI interface {
	// Name returns the table's name as the handle was made with.
	Name() string
	Insert(ctx context.Context, e Entity) (Entity, error)
	Get(ctx context.Context, partitionKey, rowKey string, selected ...string) (Entity, error)
	Update(ctx context.Context, e Entity, mode UpdateMode, ifMatch ETag) (ETag, error)
	Upsert(ctx context.Context, e Entity, mode UpdateMode) (ETag, error)
	Delete(ctx context.Context, partitionKey, rowKey string, ifMatch ETag) error
	SubmitTransaction(ctx context.Context, actions []Action) ([]ActionResult, error)
	Query(ctx context.Context, q Query) (Page, error)
	QueryAll(ctx context.Context, q Query) iter.Seq2[Entity, error]
}

// ServiceAPI is what code needs of a database, the set of tables, to run on any backend:
// Embedded(db) for an embedded DB, or a *remote.Client. Its methods have the meaning and
// errors of the DB methods of the same name; CreateTable and Table return a TableAPI where
// DB's return a *Table.
//
// The one difference a caller can see: the service's table listing carries no creation
// time, so a remote backend's TableInfo has a zero Created.
type ServiceAPI interface {
	CreateTable(ctx context.Context, name string) (TableAPI, error)
	DeleteTable(ctx context.Context, name string) error
	ListTables(ctx context.Context, q TableQuery) (TablePage, error)
	Tables(ctx context.Context, filter string) iter.Seq2[TableInfo, error]
	// Table returns a handle on the named table without checking that it exists.
	Table(name string) TableAPI
}

// Embedded returns db as a ServiceAPI, for code that takes either backend. It is a view:
// closing db is still the caller's job.
func Embedded(db *DB) ServiceAPI { return embedded{db} }

type embedded struct{ *DB }

func (e embedded) CreateTable(ctx context.Context, name string) (TableAPI, error) {
	t, err := e.DB.CreateTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (e embedded) Table(name string) TableAPI { return e.DB.Table(name) }

// The embedded table is a TableAPI as it is.
var _ TableAPI = (*Table)(nil)

// AccessPoliciesAPI is the optional interface of a TableAPI whose stored access policies
// can be read and set (Get Table ACL and Set Table ACL): the embedded *Table, and a table of
// package remote. ExportService and ImportService carry a table's policies through it.
type AccessPoliciesAPI interface {
	AccessPolicies(ctx context.Context) ([]AccessPolicy, error)
	SetAccessPolicies(ctx context.Context, policies []AccessPolicy) error
}

// ServicePropertiesAPI is the optional interface of a ServiceAPI whose service-properties
// document (see Namespace.ServiceProperties) can be read and set: Embedded(db), for its
// root namespace, and package remote's client. ExportService and ImportService carry an
// account's properties through it.
type ServicePropertiesAPI interface {
	ServiceProperties(ctx context.Context) ([]byte, error)
	SetServiceProperties(ctx context.Context, doc []byte) error
}

var (
	_ AccessPoliciesAPI    = (*Table)(nil)
	_ ServicePropertiesAPI = embedded{}
)

// ServiceProperties returns the root namespace's service-properties document, or nil.
func (e embedded) ServiceProperties(ctx context.Context) ([]byte, error) {
	return e.DB.Namespace("").ServiceProperties(ctx)
}

// SetServiceProperties stores the root namespace's service-properties document.
func (e embedded) SetServiceProperties(ctx context.Context, doc []byte) error {
	return e.DB.Namespace("").SetServiceProperties(ctx, doc)
}

// unavailable says whether err is a backend's refusal of an optional part of a service (a
// table's access policies, the service properties) that an export or import leaves out
// rather than stopping for: the credential may not touch it (403: the service lets only the
// account's key read or set a table's ACL, not a shared access signature), or the service
// does not implement it (501).
func unavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.StatusCode == 403 || e.StatusCode == 501)
}
