// Package tabula is an embeddable, single-process table engine that behaves like the Azure
// Table storage service: the same data model, limits, error codes, ETags and ordering, kept
// in Badger on disk or in an ordered tree in memory.
//
// Use it as a fast, faithful fake of Azure Tables in unit tests, or point `go test -bench` at
// a partition-key design to learn what it costs before it ships.
//
// # Opening a database
//
// Open keeps data in a directory and brings everything back when reopened; OpenInMemory is
// the disposable kind tests want. Options inject a clock (Timestamps, and therefore ETags,
// come from it) and choose whether writes wait for the disk (SyncWrites). A directory records
// its format version: Open upgrades one written by an older release in place, saying so
// through Options.Logger, and refuses one written by a newer release.
//
//	db, err := tabula.OpenInMemory(nil)
//	defer db.Close()
//	movies, err := db.CreateTable(ctx, "Movies")
//
// # Entities
//
// An Entity has a PartitionKey, a RowKey, a Timestamp and ETag the engine sets on every
// write, and up to 252 Properties. Property values are typed: String, Binary, Boolean,
// DateTime, Double, Guid, Int32 and Int64 are distinct Go types, as they are distinct EDM
// types on the service, so an Int32 never silently becomes an Int64. A nil value is dropped,
// as the service drops a JSON null.
//
// Every write is validated first with the service's limits (keys of at most 1,024 UTF-16
// code units without / \ # ? or control characters; C#-identifier property names of at most
// 255 characters; strings of at most 32K characters; binaries of at most 64 KiB; 1 MiB per
// entity by the service's size formula), and a rejected write changes nothing.
//
// # Go structs as entities
//
// GetAs, InsertAs, UpdateAs, UpsertAs and QueryAs read and write Go structs on any TableAPI,
// the embedded table and package remote's alike; InsertActionOf, UpdateActionOf and
// UpsertActionOf make transaction actions of them, and EntityOf and EntityAs convert between
// a struct and an Entity. A struct maps to an entity field by field, in the manner of encoding/json, through the
// "tabula" struct tag:
//
//	type Movie struct {
//		Genre     string            `tabula:"PartitionKey"` // or a field named PartitionKey
//		Title     string            `tabula:"RowKey"`
//		Timestamp time.Time         // set on reads
//		ETag      tabula.ETag       // set on reads
//		Rating    float64           // Edm.Double
//		Year      int32             `tabula:"ReleaseYear"`
//		Views     int64             `tabula:",omitempty"`
//		ID        string            `tabula:"Id,Edm.Guid"`
//		Poster    []byte            // Edm.Binary
//		Secret    string            `tabula:"-"`
//		Rest      tabula.Properties // the properties no field names
//	}
//
// Go's type says the EDM type: string is Edm.String, []byte Edm.Binary, bool Edm.Boolean,
// time.Time (or tabula.DateTime) Edm.DateTime, float64 Edm.Double, [16]byte (tabula.Guid, a
// UUID type) Edm.Guid, int32 Edm.Int32, and int64 and int Edm.Int64; named types of these
// kinds map as their kind does. Where Go's type does not say it, the tag does: Edm.Guid on a
// string holds the Guid's text form, Edm.Int32 on an int64 or int field stores it as an Int32
// (a value beyond Int32 is an error), Edm.Int64 on an int32 one as an Int64. A pointer to any
// of these is a property that may be absent: nil is not written, and a property the entity
// lacks reads as nil. omitempty leaves out a zero value; "-" leaves the field out. Embedded
// structs without a tag are flattened, as encoding/json does; unexported fields are ignored.
//
// PartitionKey, RowKey (strings) and Timestamp (a time.Time, set on reads and ignored on
// writes, as the service ignores it) are fields of those names, or fields tagged with them. The
// ETag is a field of type tabula.ETag, or a string field named ETag; it is set on reads and
// ignored on writes: pass it to UpdateAs as the condition. A field of type tabula.Properties
// takes the properties no other field names, and gives them back on writes, so that reading
// an entity and replacing it never drops a property the struct does not know; without it,
// such properties are ignored on reads, and so dropped by a Replace.
//
// A property whose stored type is not its field's is an error naming the field, except that
// an Int32 reads into an Edm.Int64 field (int64 or int), which always holds it. Every rule of
// the service holds as for an Entity, with the same errors: the struct is checked as the
// Entity it maps to (names, limits, Merge and Replace, ETags), and a zero time.Time, which
// predates the service's earliest DateTime, is refused unless omitempty leaves it out.
//
// The mapping is worked out once per type and cached; a struct that does not map is a
// *StructError naming the field. On the embedded engine, GetAs and QueryAs decode the stored
// record straight into the struct, and InsertAs, and UpdateAs and UpsertAs in Replace mode,
// encode the struct straight into a record, without building Entity.Properties; on package
// remote's table, GetAs and QueryAs decode the service's JSON straight into the struct.
//
// # Operations
//
// Table offers the service's single-entity operations: Insert, Get, Update in Replace or
// Merge mode under an If-Match ETag (or AnyETag), Upsert (InsertOrReplace and
// InsertOrMerge) and Delete. Each is atomic and safe for concurrent use.
//
// # Transactions
//
// Table.SubmitTransaction applies an entity group transaction: 1 to 100 actions (Insert,
// Update, Upsert, Delete) on one PartitionKey, each RowKey at most once, at most 4 MiB, all
// applied or none. The rules are checked before anything is written, and a failure is a
// *TransactionError naming the failing action's index and its own error, as the service's
// batch response does.
//
// # Queries
//
// Table.Query runs an OData $filter in the service's dialect ("PartitionKey eq 'Action' and
// Rating gt 4.0") and returns a page: at most $top (and at most 1,000) entities in key order,
// ended early when the 5-second execution budget runs out, with a continuation token that
// names the next entity to examine. A page may be short, or empty, and still carry a token;
// Table.QueryAll follows the tokens and yields every match. Comparisons follow the service to
// the letter: a missing property never matches (not even ne), a property of another type
// compares as less than the literal, strings compare by UTF-16 code units.
//
// The planner picks the cheapest scan the keys allow (Point, RowRange, PartitionRange,
// FullScan) and, beyond the service, runs an OR of key conditions as a MultiRange union
// with identical results. Table.Explain and Page.Plan show the plan, how the service would
// run the query, and how many entities were examined for how many returned;
// Options.ForbidFullScans turns queries that scan the whole table on the service into errors.
//
// # Helpers beyond the service
//
// The service takes a filter as text, counts nothing, and writes at most one transaction of one
// partition at a time. Four helpers, marked as beyond the service, do what code on top of it
// keeps writing by hand; they work through TableAPI alone, so they behave the same on the
// embedded engine and on a remote service (package remote):
//   - Eq, Ne, Gt, Ge, Lt, Le, And, Or and Not build a Filter from typed values, escaped, so that
//     no value can change a filter's shape; its String is the service's $filter text.
//   - Count and Exists answer for a filter by querying keys page by page: a scan, whose cost
//     Table.Explain shows.
//   - DeletePartition and DeleteWhere delete what matches in transactions of up to 100.
//   - SubmitBulk cuts any number of actions into valid transactions (one partition, 100
//     actions, 4 MiB) and reports each one's outcome: the whole is not atomic.
//
// # The service under load
//
// Beyond data, Tabula simulates what the service does under load (package partition): tables served
// as range partitions that split when they stay hot and merge when cold, the scalability targets of
// 2,000 entities/s per PartitionKey and 20,000 per account as token buckets (Options.Limits:
// observed by default, enforced with ServerBusy on request), and deterministic fault injection
// (Options.Faults: ServerBusy, OperationTimedOut, forced continuations, partitions offline while
// they split). DB.HeatReport shows which partitions a workload makes hot, the "partition stress
// test" of "Design a scalable partitioning strategy for Azure Table storage";
// Options.BoundaryContinuations ends query pages at range boundaries as the service may; Retry
// retries what the service says to retry, waiting with its exponential Backoff. Each namespace
// (below) is an account with an account limit of its own, so one's load never throttles
// another's.
//
// The service's transient states come on request too. After Delete Table the service
// answers 409 TableBeingDeleted to a create of that name, and to operations on it, for at
// least 40 seconds; the emulators free the name at once, so the retry code that answer needs
// never runs against them. Options.TableDeleteDelay (ServiceTableDeleteDelay is the
// service's 40 s; `tabula serve --table-delete-delay`, or the management API's
// tableDeleteDelay) keeps a deleted name in that state on Clock. Off by default.
//
// # The Cosmos DB for Table flavour
//
// Beyond the service, Options.Flavor = FlavorCosmos (`tabula serve --flavor cosmos`) adds the
// rules in which the Azure Cosmos DB for Table API is stricter than the Table service, so that
// a suite run in both flavours catches what would break on Cosmos DB (whose emulators that
// serve the Table API are Windows or x64-only images). Each rule, with the page it comes from
// (FAQ: "Frequently asked questions about Azure Cosmos DB for Table"; SDK: the recorded
// Cosmos tests of the Azure SDK for Python's azure-data-tables):
//   - A RowKey of at most 255 bytes, counted in UTF-8 (FAQ; the encoding is not named there).
//   - No empty PartitionKey or RowKey, answered 400 PropertiesNeedValue "PartitionKey/RowKey
//     cannot be empty" (SDK).
//   - The property names ID, rid and ResourceId are reserved (FAQ; etag, which the FAQ also
//     names, is stored in the SDK's recordings).
//   - A transaction on a missing table is ResourceNotFound, not TableNotFound (SDK).
//   - A transaction of at most 2 MiB by TransactionPayloadSize, refused as a whole with
//     413 (FAQ: "Batches can only have up to 2 MBs"; SDK for the status).
//   - Table names are case-sensitive: a table is reached only by the name it was created
//     with, any other letter case being a missing table (FAQ). Creating a name that differs
//     only in case from an existing table is still TableAlreadyExists, as on the Table
//     service, where Cosmos DB would create a second table.
//   - Query results are not sorted by key (FAQ). The FAQ names no order; Tabula returns each
//     page in reverse key order, so code relying on key order fails. Pages and continuation
//     tokens are the Table service's.
//
// Other refused input is 400 InvalidInput "One of the input values is invalid.", the code
// and message Cosmos DB is recorded answering bad input with (SDK); flavor.go lists the
// rules package server adds on the wire (501 to Set Table Service Properties and to a SAS
// with a key range). Where the sources give a limit but not Cosmos DB's answer to it, the answer is
// Tabula's choice, marked so beside the rule in flavor.go. What the FAQ says differs but
// Tabula does not simulate, and why, is listed there too: $top above 1,000, the service endpoints Cosmos DB
// lacks, its wider table names, its binary encoding and its continuation tokens.
//
// # Over the wire
//
// Package server puts the Azure Table REST protocol in front of a DB, so programs written
// against Azure Table storage, through any official SDK, run against Tabula unchanged;
// `tabula serve` (cmd/tabula) runs it on 127.0.0.1:10002 like the storage emulators, and
// package tabulatest starts one inside a Go test, over loopback or with no socket at all.
//
// # Namespaces
//
// A DB holds one set of tables by default. DB.Namespace gives others in the same DB, each with
// its own table names and its own account limit, as each storage account has on the service;
// the REST front end serves every account but the first from one. A namespace also keeps what
// the service keeps per account and per table beyond data: the service properties document
// (Namespace.SetServiceProperties) and tables' stored access policies
// (Table.SetAccessPolicies).
//
// # Data in and out
//
// DB.Export writes a database's tables (every namespace, or those chosen, with their access
// policies and service properties) to an interchange file, and DB.Import reads one back:
// JSON Lines, one entity a line in the service's own JSON with odata.type annotations, so
// any tool reads it, and a trailer that counts what the file holds, so a file cut short is
// never taken for a whole one. DB.Import also reads a fixture a person writes: one JSON
// document mapping table names to arrays of entities, with no header, counts or
// Timestamps. An import is a bulk path, all or nothing, into new tables and tables that
// exist alike, through a bad line or a crash: it stages each table under a table ID no
// catalog entry names (a table that exists with its stored entities copied in) and
// publishes every table in one write at the file's end, with a policy for entities that
// exist (Existing) and for Timestamps (KeepTimestamps); a bad line is an *ImportError
// naming the line, the field (a fixture's JSON path) and the rule, and CheckImport checks
// a file by the same rules writing nothing. ExportService and
// ImportService do the same over any ServiceAPI, so that `tabula export` and `tabula import`
// (cmd/tabula) copy a real account down to a file and back, access policies and service
// properties included where the backend has the optional AccessPoliciesAPI and
// ServicePropertiesAPI (the embedded engine and package remote do). Both are beyond the
// service.
//
// # Snapshots
//
// DB.Snapshot takes the whole database as it is at one instant, beyond the service. Of an
// in-memory database it is an immutable copy-on-write tree: Snapshot.Open opens a new,
// independent database from it and DB.Restore puts a database back to it, each in a few
// microseconds whatever the data, so a fixture seeded once gives every test a copy of its
// own. Of a database on disk it is a consistent view for export and backup while the
// database serves writes. Either reads every table of every namespace with its entities,
// access policies and service properties (Snapshot.Tables, Snapshot.Entities …).
//
// # Errors
//
// Errors are *Error values carrying the service's error code and HTTP status; compare them
// with errors.Is against the sentinels:
//
//	_, err := movies.Insert(ctx, e)
//	if errors.Is(err, tabula.ErrEntityAlreadyExists) { … }
//
// Where the service's behaviour is undocumented, Tabula follows what recordings of the real
// service show; where Tabula goes beyond the service, results stay identical and the extra is
// named as such in its documentation.
package tabula
