package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	// Recorded (test_delete_entity_with_empty_keys and the inserts with empty keys): 400
	// PropertiesNeedValue, "PartitionKey/RowKey cannot be empty".
	golden(t, "cosmos_empty_rowkey_400", insert(`{"PartitionKey":"p","RowKey":""}`))
	// FAQ: row keys of at most 255 bytes; the answer is Cosmos DB's to a bad input.
	golden(t, "cosmos_rowkey_too_long_400", insert(`{"PartitionKey":"p","RowKey":"`+strings.Repeat("r", 256)+`"}`))
	// FAQ: the property names ID, rid and ResourceId are reserved.
	golden(t, "cosmos_reserved_property_400", insert(`{"PartitionKey":"p","RowKey":"r","rid":"x"}`))
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

// The Cosmos flavour held to the Cosmos DB for Table API's recorded answers (the Azure SDK for
// Python's tests against a Cosmos DB account, sdk/tables/azure-data-tables/tests/recordings),
// each beside its golden file. The Table flavour's answer to the same request is checked too.
func TestGoldenCosmosRecorded(t *testing.T) {
	cosmos := newHarness(t, &tabula.Options{Flavor: tabula.FlavorCosmos})
	plain := newHarness(t, nil)
	for _, h := range []*harness{cosmos, plain} {
		h.createTable("uttablede7e2e1b")
	}
	entity := func(h *harness, method, target, body string, header map[string]string) *http.Response {
		hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json;odata=minimalmetadata"}
		for k, v := range header {
			hd[k] = v
		}
		return h.do(request{method: method, target: "/devstoreaccount1/" + target, header: hd, body: body})
	}
	const key = "uttablede7e2e1b(PartitionKey='pkde7e2e1b',RowKey='rkde7e2e1b')"

	// test_etag_duplicate_field: an insert of {"PartitionKey":"pkde7e2e1b","RowKey":
	// "rkde7e2e1b","etag":"bar","Etag":"baz"} (each with an Edm.String annotation) was
	// answered 201 with "etag":"bar" and no Etag; the read that followed the same; a MERGE of
	// "etag":"two","Etag":"three" then 204, and the read "etag":"two", no Etag.
	insert := `{"PartitionKey":"pkde7e2e1b","PartitionKey@odata.type":"Edm.String","RowKey":"rkde7e2e1b","RowKey@odata.type":"Edm.String",` +
		`"etag":"bar","etag@odata.type":"Edm.String","Etag":"baz","Etag@odata.type":"Edm.String"}`
	got := dump(t, entity(cosmos, "POST", "uttablede7e2e1b", insert, nil))
	golden(t, "cosmos_recorded_etag_property_201", got)
	assert.Contains(t, got, `"etag":"bar"`)
	assert.NotContains(t, got, `"Etag"`)
	merge := `{"PartitionKey":"pkde7e2e1b","RowKey":"rkde7e2e1b","etag":"two","Etag":"three"}`
	mustStatus(t, entity(cosmos, "MERGE", key, merge, map[string]string{"If-Match": "*"}), http.StatusNoContent)
	read := body(t, entity(cosmos, "GET", key, "", nil))
	assert.Contains(t, read, `"etag":"two"`)
	assert.NotContains(t, read, `"Etag"`)
	// The Table service keeps both (the same test against a storage account).
	read = mustStatus(t, entity(plain, "POST", "uttablede7e2e1b", insert, nil), http.StatusCreated)
	assert.Contains(t, read, `"Etag":"baz"`)
	assert.Contains(t, read, `"etag":"bar"`)

	// Inserts with an empty RowKey or PartitionKey: 400 PropertiesNeedValue, "PartitionKey/RowKey
	// cannot be empty".
	resp := entity(cosmos, "POST", "uttablede7e2e1b", `{"PartitionKey":"","RowKey":"r"}`, nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body(t, resp), `{"odata.error":{"code":"PropertiesNeedValue","message":{"lang":"en-US","value":"PartitionKey/RowKey cannot be empty\n`)

	// The service properties tests: Set Table Service Properties answered 501 NotImplemented,
	// "The requested operation is not supported.", for the body the SDK sent, in JSON:
	// {"odata.error":{"code":"NotImplemented","message":{"lang":"en-us","value":"The requested
	// operation is not supported.…"}}} (test_too_many_cors_rules, six rules).
	set := `<?xml version='1.0' encoding='utf-8'?>` + "\n" + `<StorageServiceProperties><Logging><Delete>true</Delete><Read>false</Read>` +
		`<RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy><Version>1.0</Version><Write>true</Write></Logging></StorageServiceProperties>`
	props := request{method: "PUT", target: "/devstoreaccount1/?restype=service&comp=properties",
		header: map[string]string{"Content-Type": "application/xml"}, body: set}
	got = dump(t, cosmos.do(props))
	golden(t, "cosmos_recorded_set_service_properties_501", got)
	assert.Contains(t, got, `{"odata.error":{"code":"NotImplemented","message":{"lang":"en-US","value":"The requested operation is not supported.\n`)
	mustStatus(t, plain.do(props), http.StatusAccepted)
	six := strings.Repeat(`<CorsRule><AllowedOrigins>www.xyz.com</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders /><ExposedHeaders /><MaxAgeInSeconds>0</MaxAgeInSeconds></CorsRule>`, 6)
	props.body = `<StorageServiceProperties><Cors>` + six + `</Cors></StorageServiceProperties>`
	mustStatus(t, cosmos.do(props), http.StatusNotImplemented)
	mustStatus(t, plain.do(props), http.StatusBadRequest)
	mustStatus(t, cosmos.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties"}), http.StatusOK)

	// test_new_non_existent_table against Cosmos DB: one insert into a table that does not
	// exist, answered 202 with a part 404 ResourceNotFound, "The specified resource does not
	// exist.", without "0:" (the Table service: TableNotFound, "0:The table specified does not
	// exist.", golden batch_table_not_found).
	got = cosmos.batch(changeSetBody(insertOp("doesntexist", `{"PartitionKey":"001","RowKey":"batch_negative_1","age":39}`, true)))
	golden(t, "cosmos_recorded_batch_table_not_found", got)
	assert.Contains(t, got, `{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"The specified resource does not exist.\n`)

	// A table SAS with a key range (spk, srk, epk, erk): 501 NotImplemented, "Shared access
	// signature with PartitionKey or RowKey are not supported". Without a range the SAS serves.
	ranged := tableSAS("uttablede7e2e1b", "raud", time.Time{}, testNow.Add(time.Hour), [4]string{"pkde7e2e1b", "rk", "pkde7e2e1b", "rkz"}, nil)
	sasInsert := func(h *harness, sas string) *http.Response {
		return h.do(request{method: "POST", target: "/devstoreaccount1/uttablede7e2e1b?" + sas, unsigned: true,
			header: map[string]string{"Content-Type": "application/json"}, body: `{"PartitionKey":"pkde7e2e1b","RowKey":"rkx"}`})
	}
	golden(t, "cosmos_recorded_key_range_sas_501", dump(t, sasInsert(cosmos, ranged)))
	mustStatus(t, sasInsert(plain, ranged), http.StatusCreated)
	open := tableSAS("uttablede7e2e1b", "raud", time.Time{}, testNow.Add(time.Hour), [4]string{}, nil)
	resp = sasInsert(cosmos, open)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body(t, resp))
}
