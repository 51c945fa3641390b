package tabula

import (
	"errors"
	"fmt"
	"strings"
)

// Flavor is the service whose rules a DB enforces: the Azure Table service (the default), or
// the Azure Cosmos DB for Table API, which serves the same REST protocol under rules of its
// own. Code that is to run on both is tested in both flavours: what the Cosmos flavour
// refuses is what would break on Cosmos DB. It is a simulation beyond the service, and no
// emulator of Cosmos DB for Table is involved; see cosmosRules for each rule and its source.
type Flavor uint8

const (
	// FlavorTable enforces the Azure Table service's rules (the zero value).
	FlavorTable Flavor = iota
	// FlavorCosmos enforces, on top of them, the rules in which the Cosmos DB for Table API
	// is stricter than the Table service, answering with Cosmos DB's error shapes.
	FlavorCosmos
)

// String returns the flavour's name as ParseFlavor and `tabula serve --flavor` take it.
func (f Flavor) String() string {
	switch f {
	case FlavorTable:
		return "table"
	case FlavorCosmos:
		return "cosmos"
	}
	return fmt.Sprintf("Flavor(%d)", uint8(f))
}

// ParseFlavor reads a flavour's name: "table" (or "") or "cosmos", in any letter case.
func ParseFlavor(s string) (Flavor, error) {
	switch strings.ToLower(s) {
	case "", "table":
		return FlavorTable, nil
	case "cosmos":
		return FlavorCosmos, nil
	}
	return 0, fmt.Errorf("tabula: unknown flavor %q: want table or cosmos", s)
}

// flavorRules are the limits in which a flavour differs from the Table service. A DB of the
// Table flavour has none (a nil *flavorRules), so its operations pay one nil check.
type flavorRules struct {
	name string
	// maxRowKeyBytes is the longest RowKey, in UTF-8 bytes.
	maxRowKeyBytes int
	// emptyKeys refuses an empty PartitionKey or RowKey.
	emptyKeys bool
	// maxTransactionPayload is the largest transaction by TransactionPayloadSize.
	maxTransactionPayload int
	// reservedProperties are property names an entity may not use.
	reservedProperties []string
	// caseSensitiveTableNames makes a table reachable only by the name it was created with.
	caseSensitiveTableNames bool
	// unsortedResults returns each query page's entities in reverse key order.
	unsortedResults bool
	// missingTableInTransaction is the error of a transaction on a table that does not
	// exist, in place of TableNotFound.
	missingTableInTransaction *Error
}

// cosmosRules are the Cosmos DB for Table API's rules where they are stricter than the Table
// service's, each from the page named beside it. Where a page gives a limit but not the
// answer Cosmos DB sends, the answer is marked as Tabula's choice.
//
// Sources, by title:
//   - FAQ: "Frequently asked questions about Azure Cosmos DB for Table", section "Where is API
//     for Table not identical with Azure Table storage behavior?".
//   - SDK: the Azure SDK for Python's (Azure/azure-sdk-for-python) recorded tests against a
//     Cosmos DB for Table account, sdk/tables/azure-data-tables/tests/test_table_entity_cosmos.py,
//     test_table_batch_cosmos.py and test_table_client_cosmos.py, and the Cosmos table name
//     check in sdk/tables/azure-data-tables/azure/data/tables/_error.py.
//   - Recorded: the answers those tests recorded (their tests/recordings), status, code and
//     message, which are Cosmos DB's own; where one contradicts the FAQ, the recording wins.
//
// Rules of the wire, which package server applies for a DB of this flavour (`tabula serve
// --flavor cosmos`), each as recorded:
//   - Set Table Service Properties is 501 NotImplemented, "The requested operation is not
//     supported.", whatever the body (six CORS rules too), in an odata.error JSON body
//     where the Table service answers this operation in XML (the service properties tests
//     against Cosmos DB, test_too_many_cors_rules among them). Get still answers.
//   - A table SAS limited to a key range (spk, srk, epk, erk) is 501 NotImplemented, "Shared
//     access signature with PartitionKey or RowKey are not supported", to every request
//     that carries it (the SAS tests against Cosmos DB).
//   - An entity body naming two properties that differ only in letter case keeps the first
//     and drops the other without a word: {"etag":"bar","Etag":"baz"} is stored, and read
//     back, as {"etag":"bar"} (test_etag_duplicate_field, an insert, a read, a merge and a
//     read). That recording shows one pair of names; that Cosmos DB folds every name's case
//     so is Tabula's reading of it. Only a body has an order, so a Go program's Entity, a
//     map, is not touched.
//
// Rules those sources state that Tabula does not enforce, and why:
//   - "TableQuery TakeCount isn't limited to 1000" (FAQ): a loosening, which no code that
//     runs on the Table service can trip over; Tabula keeps the limit of 1,000.
//   - CORS, Get Table Service Properties and Get Table Service Stats are not supported
//     (FAQ); no recording says what Cosmos DB answers to them, so Tabula serves them. Set
//     Table Service Properties is recorded, and refused (above).
//   - Table names: Cosmos DB takes 1 to 254 characters other than / \ # ? and a trailing
//     space (SDK: _validate_cosmos_tablename), a superset of the Table service's names.
//     Tabula keeps the Table service's rules, so a name it accepts is valid on both.
//   - Binary values take more room in Cosmos DB's encoding, so an entity near 1 MiB with
//     binary data may be refused (FAQ); the FAQ gives no figure, so Tabula does not guess.
//   - Continuation tokens: the FAQ says nothing of how they differ; Tabula's are the Table
//     service's.
//   - Error bodies: the SDK's tests record Cosmos DB's codes and the start of its messages,
//     not the rest of the body; beyond the code and message the rules above set, Tabula's
//     error bodies are the Table service's.
var cosmosRules = &flavorRules{
	name: "cosmos",
	// FAQ: "Row keys can only be up to 255 bytes." The FAQ does not name the encoding;
	// Tabula counts UTF-8 bytes, the encoding of the JSON bodies the API takes.
	maxRowKeyBytes: 255,
	// Recorded: an insert with an empty PartitionKey or RowKey is 400 PropertiesNeedValue,
	// "PartitionKey/RowKey cannot be empty" (test_delete_entity_with_empty_keys and the
	// insert tests with empty keys).
	emptyKeys: true,
	// FAQ: "Batches can only have up to 2 MBs." The FAQ does not define its MB; Tabula
	// reads 2 MiB, measured as for the Table service's 4 MiB (TransactionPayloadSize).
	// SDK: test_batch_request_too_large, the answer is 413 (RequestTooLargeError).
	maxTransactionPayload: 2 << 20,
	// FAQ: Cosmos DB reserves the entity property names ID, rid, etag and ResourceId,
	// which are not supported. Recorded, against the FAQ: a property named etag is stored
	// and read back (test_etag_duplicate_field), so etag is not refused.
	reservedProperties: []string{"ID", "rid", "ResourceId"},
	// FAQ: "Table names in Azure Table storage aren't case-sensitive, but they are in Azure
	// Cosmos DB for Table."
	caseSensitiveTableNames: true,
	// FAQ: "Query results returned by the API for Table aren't sorted in partition
	// key/row key order as they are in Azure Table storage." The FAQ names no order, so
	// Tabula picks one that code relying on key order cannot miss: each page's entities
	// in reverse key order. Pages and continuation tokens are the Table service's.
	unsortedResults: true,
	// Recorded: a transaction on a table that does not exist answers its part 404
	// ResourceNotFound, "The specified resource does not exist." (test_new_non_existent_table
	// against Cosmos DB), where the Table service says TableNotFound; and, as that
	// transaction's only operation, no index (see package server).
	missingTableInTransaction: ErrResourceNotFound,
}

// rulesOf returns the rules of a flavour: nil for the Table service's.
func rulesOf(f Flavor) (*flavorRules, error) {
	switch f {
	case FlavorTable:
		return nil, nil
	case FlavorCosmos:
		return cosmosRules, nil
	}
	return nil, ErrInvalidInput.WithDetail("Options.Flavor %v is neither FlavorTable nor FlavorCosmos", f)
}

// Cosmos DB's answers, as its Table API sends them. The message of a bad input is Cosmos
// DB's, recorded in the SDK's test_insert_entity_with_large_int32_value_throws: code
// InvalidInput, "One of the input values is invalid.".
const (
	cosmosMsgInvalidInput = "One of the input values is invalid."
	cosmosMsgEmptyKey     = "PartitionKey/RowKey cannot be empty"
)

// Flavor returns the flavour whose rules the DB enforces (Options.Flavor).
func (db *DB) Flavor() Flavor {
	if db.flavor == cosmosRules {
		return FlavorCosmos
	}
	return FlavorTable
}

// checkEntity applies the flavour's entity rules to an entity about to be written, after the
// Table service's rules passed.
func (r *flavorRules) checkEntity(e *Entity) error {
	if err := r.checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return err
	}
	for _, name := range r.reservedProperties {
		if _, ok := e.Properties[name]; ok {
			// The FAQ names the reserved names but not Cosmos DB's answer: Tabula's choice
			// is Cosmos DB's answer to a bad input.
			return ErrInvalidInput.WithMessage(cosmosMsgInvalidInput,
				"property name %q is reserved by Cosmos DB (Options.Flavor %s)", name, r.name)
		}
	}
	return nil
}

// checkKeys applies the flavour's key rules.
func (r *flavorRules) checkKeys(pk, rk string) error {
	if r.emptyKeys && (pk == "" || rk == "") {
		return ErrPropertiesNeedValue.WithMessage(cosmosMsgEmptyKey,
			"PartitionKey and RowKey may not be empty on Cosmos DB (Options.Flavor %s)", r.name)
	}
	if n := len(rk); n > r.maxRowKeyBytes {
		// The FAQ gives the limit, not the answer: Tabula's choice is Cosmos DB's answer to
		// a bad input.
		return ErrInvalidInput.WithMessage(cosmosMsgInvalidInput,
			"RowKey is %d bytes long in UTF-8; Cosmos DB's limit is %d (Options.Flavor %s)", n, r.maxRowKeyBytes, r.name)
	}
	return nil
}

// checkAction applies the flavour's rules to one action of a transaction or a single write.
func (r *flavorRules) checkAction(a *Action) error {
	switch a.Kind {
	case ActionInsert, ActionUpdate, ActionUpsert:
		return r.checkEntity(&a.Entity)
	}
	return nil
}

// checkTransaction applies the flavour's rules to a transaction the Table service's rules
// passed: the request as a whole, then each action.
func (r *flavorRules) checkTransaction(actions []Action) error {
	if size, over := payloadOver(actions, r.maxTransactionPayload); over {
		// 413 as the SDK's test records; it does not record the code, and Tabula keeps the
		// Table service's code for 413.
		return ErrRequestBodyTooLarge.WithDetail("transaction payload is %d bytes by TransactionPayloadSize; Cosmos DB's limit is %d (Options.Flavor %s)",
			size, r.maxTransactionPayload, r.name)
	}
	for i := range actions {
		if err := r.checkAction(&actions[i]); err != nil {
			return actionError(i, err)
		}
	}
	return nil
}

// transactionTableError is err, the failure to open a transaction's table, as the flavour
// answers it.
func (r *flavorRules) transactionTableError(err error) error {
	if r != nil && r.missingTableInTransaction != nil && errors.Is(err, ErrTableNotFound) {
		var te *Error
		detail := ""
		if errors.As(err, &te) {
			detail = te.Detail
		}
		return r.missingTableInTransaction.WithDetail("%s (Options.Flavor %s)", detail, r.name)
	}
	return err
}

// checkTableName refuses a table reached by a name other than the one it was created with,
// where table names are case-sensitive, as a missing table (notFound).
func (r *flavorRules) checkTableName(created, asked string, notFound *Error) error {
	if r.caseSensitiveTableNames && created != asked {
		return notFound.WithDetail("table %q does not exist; table %q does, and table names are case-sensitive on Cosmos DB (Options.Flavor %s)",
			asked, created, r.name)
	}
	return nil
}
