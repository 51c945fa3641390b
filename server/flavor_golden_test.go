package server

import (
	"strings"
	"testing"

	"github.com/tabuladb/tabula"
)

// The Cosmos DB for Table flavour over the wire (`tabula serve --flavor cosmos`): each
// refusal is the answer the root package's flavor.go gives for it, with the page it comes
// from ("Frequently asked questions about Azure Cosmos DB for Table"; the Azure SDK for
// Python's recorded Cosmos tests for the messages), in the Table service's error body.
func TestGoldenCosmosFlavor(t *testing.T) {
	h := newHarness(t, &tabula.Options{Flavor: tabula.FlavorCosmos})
	h.createTable("Wire")
	insert := func(body string) string {
		return dump(t, h.do(request{method: "POST", target: "/devstoreaccount1/Wire",
			header: map[string]string{"Content-Type": "application/json"}, body: body}))
	}
	// SDK test_delete_entity_with_empty_keys: "PartitionKey/RowKey cannot be empty".
	golden(t, "cosmos_empty_rowkey_400", insert(`{"PartitionKey":"p","RowKey":""}`))
	// FAQ: row keys of at most 255 bytes; the answer is Cosmos DB's to a bad input.
	golden(t, "cosmos_rowkey_too_long_400", insert(`{"PartitionKey":"p","RowKey":"`+strings.Repeat("r", 256)+`"}`))
	// FAQ: the property names ID, rid, etag and ResourceId are reserved.
	golden(t, "cosmos_reserved_property_400", insert(`{"PartitionKey":"p","RowKey":"r","etag":"x"}`))
	// FAQ: table names are case-sensitive.
	golden(t, "cosmos_table_other_case_404", dump(t, h.do(request{method: "GET",
		target: "/devstoreaccount1/WIRE(PartitionKey='p',RowKey='r')"})))
	// FAQ: results not in key order; Tabula's order is each page's reversed.
	h.insert("Wire", `{"PartitionKey":"p","RowKey":"a"}`)
	h.insert("Wire", `{"PartitionKey":"p","RowKey":"b"}`)
	h.insert("Wire", `{"PartitionKey":"p","RowKey":"c"}`)
	golden(t, "cosmos_query_page", dump(t, h.do(request{method: "GET",
		target: "/devstoreaccount1/Wire()?$top=2&$select=RowKey",
		header: map[string]string{"Accept": "application/json;odata=nometadata"}})))
}
