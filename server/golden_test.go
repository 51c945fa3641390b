package server

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/<name>.golden (or rewrites it with -update).
// The files are whole responses, so a change in any header or byte of the body shows.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// wireEntity has every EDM type, the awkward values of each (an integral Double, NaN and
// -Infinity, extreme exponents, a DateTime with trailing zeros, an upper-case Guid,
// characters JSON must escape), a null, a client-sent Timestamp and odata.etag, and a
// RowKey whose quote and space the links must escape.
const wireEntity = `{"PartitionKey":"pk","RowKey":"r k'1",` +
	`"Name":"Ann \"A\"\n\u0001 ünïcode 😀","Age":42,` +
	`"Big@odata.type":"Edm.Int64","Big":"9223372036854775807",` +
	`"Ratio":0.5,"Whole@odata.type":"Edm.Double","Whole":5,"Huge":1e300,"Tiny":1.5e-7,"Large":123456789012345.0,` +
	`"NotANumber@odata.type":"Edm.Double","NotANumber":"NaN","NegInf@odata.type":"Edm.Double","NegInf":"-Infinity",` +
	`"Active":true,"Born@odata.type":"Edm.DateTime","Born":"1973-10-04T00:00:00.000000Z",` +
	`"Seen@odata.type":"Edm.DateTime","Seen":"2021-07-13T01:02:03.4500000Z",` +
	`"Id@odata.type":"Edm.Guid","Id":"C9DA6455-213D-42C9-9A79-3E9149A57833",` +
	`"Raw@odata.type":"Edm.Binary","Raw":"AAEC+g==","Empty":"","Gone":null,` +
	`"Timestamp":"0001-01-01T00:00:00Z","odata.etag":"W/\"ignored\""}`

const wirePath = "/devstoreaccount1/Wire(PartitionKey='pk',RowKey='r%20k''1')"

func TestGoldenEntityLevels(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Wire")
	h.insert("Wire", wireEntity)
	for _, lvl := range []string{"nometadata", "minimalmetadata", "fullmetadata"} {
		resp := h.do(request{method: "GET", target: wirePath,
			header: map[string]string{"Accept": "application/json;odata=" + lvl}})
		golden(t, "entity_"+lvl, dump(t, resp))
	}
	// $format overrides Accept.
	resp := h.do(request{method: "GET", target: wirePath + "?$format=application/json;odata=nometadata",
		header: map[string]string{"Accept": "application/json;odata=fullmetadata"}})
	golden(t, "entity_format_overrides_accept", dump(t, resp))
}

// Full metadata annotates only what JSON cannot carry by itself, as minimal metadata does,
// on every path that writes an entity: the insert's echo, a point get and a query. The live
// service's answers at odata=fullmetadata are recorded in the legacy Go SDK's
// storage/recordings (github.com/Azure/azure-sdk-for-go v68.0.0): StorageEntitySuite/TestGet
// answers the entity inserted below with exactly the properties asserted below, Int32 bare in
// TestExecuteQueryNextResults ("Number":3) and TableBatchSuite ("DifferentField":123); an SDK
// maintainer says the same in Azure/azure-sdk-for-js#15950. Integral Doubles (5.0, with its
// point), NaN and the infinities follow minimal metadata's rule, which the golden files of
// TestGoldenEntityLevels pin.
func TestGoldenFullMetadata(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Full")
	full := map[string]string{"Content-Type": "application/json", "Accept": "application/json;odata=fullmetadata"}
	resp := h.do(request{method: "POST", target: "/devstoreaccount1/Full", header: full, body: wireEntity})
	golden(t, "entity_fullmetadata_insert", dump(t, resp))
	// The recorded entity, sent as the legacy Go SDK sent it, and the properties the service
	// answered with.
	h.insert("Full", `{"AmountDue":"200.23","AmountDue@odata.type":"Edm.Double","CustomerCode":"c9da6455-213d-42c9-9a79-3e9149a57833",`+
		`"CustomerCode@odata.type":"Edm.Guid","CustomerSince":"1992-12-20T21:55:00Z","CustomerSince@odata.type":"Edm.DateTime",`+
		`"IsActive":true,"NumberOfOrders":"255","NumberOfOrders@odata.type":"Edm.Int64","PartitionKey":"mypartitionkey","RowKey":"myrowkey"}`)
	got := dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Full(PartitionKey='mypartitionkey',RowKey='myrowkey')", header: full}))
	recorded := `"AmountDue":200.23,"CustomerCode@odata.type":"Edm.Guid","CustomerCode":"c9da6455-213d-42c9-9a79-3e9149a57833",` +
		`"CustomerSince@odata.type":"Edm.DateTime","CustomerSince":"1992-12-20T21:55:00Z","IsActive":true,` +
		`"NumberOfOrders@odata.type":"Edm.Int64","NumberOfOrders":"255"}`
	if !strings.HasSuffix(got, `"Timestamp":"2024-05-06T07:08:09.1234569Z",`+recorded) {
		t.Errorf("the recorded entity at full metadata:\n%s\nwant its properties as recorded:\n%s", got, recorded)
	}
	h.insert("Full", `{"PartitionKey":"z","RowKey":"edges","PosInf@odata.type":"Edm.Double","PosInf":"Infinity","Zero@odata.type":"Edm.Double","Zero":0,`+
		`"Min":-2147483648,"Max":2147483647,"Off":false,"Nothing@odata.type":"Edm.Binary","Nothing":""}`)
	golden(t, "query_fullmetadata", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Full()", header: full})))
}

func TestGoldenQuery(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Wire")
	h.insert("Wire", wireEntity)
	h.insert("Wire", `{"PartitionKey":"pk","RowKey":"second","Age":7}`)
	// $select names a property neither has (null), one only the first has, and a key;
	// $top=1 ends the page with continuation headers naming the next entity.
	resp := h.do(request{method: "GET", target: "/devstoreaccount1/Wire()?$select=RowKey,Name,Missing&$top=1"})
	golden(t, "query_select_top", dump(t, resp))
	next := headerValue(resp.Header, "x-ms-continuation-NextPartitionKey")
	nextRow := headerValue(resp.Header, "x-ms-continuation-NextRowKey")
	if next == "" || nextRow == "" {
		t.Fatal("$top=1 over two entities gave no continuation")
	}
	resp = h.do(request{method: "GET", target: "/devstoreaccount1/Wire()?$select=RowKey,Name,Missing&$top=1&NextPartitionKey=" +
		next + "&NextRowKey=" + nextRow, header: map[string]string{"Accept": "application/json;odata=fullmetadata"}})
	golden(t, "query_select_continued_full", dump(t, resp))
}

func TestGoldenInsertAndTables(t *testing.T) {
	h := newHarness(t, nil)
	resp := h.do(request{method: "POST", target: "/devstoreaccount1/Tables",
		header: map[string]string{"Content-Type": "application/json", "Accept": "application/json;odata=fullmetadata"},
		body:   `{"TableName":"Wire"}`})
	golden(t, "table_create", dump(t, resp))
	resp = h.do(request{method: "POST", target: "/devstoreaccount1/Wire", header: map[string]string{"Content-Type": "application/json"},
		body: `{"PartitionKey":"p","RowKey":"1","N":1}`})
	golden(t, "insert_201", dump(t, resp))
	resp = h.do(request{method: "POST", target: "/devstoreaccount1/Wire",
		header: map[string]string{"Content-Type": "application/json", "Prefer": "return-no-content"},
		body:   `{"PartitionKey":"p","RowKey":"2","N":2}`})
	golden(t, "insert_204", dump(t, resp))
	resp = h.do(request{method: "GET", target: "/devstoreaccount1/Wire(PartitionKey='p',RowKey='3')"})
	golden(t, "error_not_found", dump(t, resp))
	h.createTable("Other")
	resp = h.do(request{method: "GET", target: "/devstoreaccount1/Tables?$top=1"})
	golden(t, "tables_page", dump(t, resp))
}

// A table name no table can have, by its length or its encoding, and a $filter that is not
// UTF-8: the service's 400s, quoting neither.
func TestGoldenMalformedURLs(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Wire")
	resp := h.do(request{method: "GET", target: "/devstoreaccount1/" + strings.Repeat("a", 1<<20) + "()"})
	golden(t, "table_name_too_long_400", dump(t, resp))
	resp = h.do(request{method: "GET", target: "/devstoreaccount1/Wire%FF()"})
	golden(t, "table_name_not_utf8_400", dump(t, resp))
	resp = h.do(request{method: "GET", target: "/devstoreaccount1/Wire()?$filter=Name%20eq%20'%FF'"})
	golden(t, "filter_not_utf8_400", dump(t, resp))
}

// subRequest formats one operation of a batch as the Go SDK does: an absolute URL, headers
// in name order, a blank line, the body.
func subRequestText(method, path string, header map[string]string, body string) string {
	var b strings.Builder
	b.WriteString(method + " http://127.0.0.1:10002/devstoreaccount1/" + path + " HTTP/1.1\r\n")
	if body != "" {
		header["Content-Length"] = strconv.Itoa(len(body))
		header["Content-Type"] = "application/json"
	}
	header["Dataserviceversion"] = "3.0"
	header["X-Ms-Version"] = "2019-02-02"
	names := make([]string, 0, len(header))
	for k := range header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(k + ": " + header[k] + "\r\n")
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

// changeSetBody wraps operations in a batch with one change set, in the Go SDK's layout.
func changeSetBody(ops ...string) string {
	var b strings.Builder
	b.WriteString("--batch_B\r\nContent-Type: multipart/mixed; boundary=changeset_C\r\n\r\n")
	for _, op := range ops {
		b.WriteString("--changeset_C\r\nContent-Transfer-Encoding: binary\r\nContent-Type: application/http\r\n\r\n")
		b.WriteString(op + "\r\n")
	}
	b.WriteString("--changeset_C--\r\n\r\n--batch_B--\r\n")
	return b.String()
}

const minimalFormat = "?%24format=application%2Fjson%3Bodata%3Dminimalmetadata"

func insertOp(table, body string, prefer bool) string {
	h := map[string]string{"Accept": "application/json;odata=minimalmetadata"}
	if prefer {
		h["Prefer"] = "return-no-content"
	}
	return subRequestText("POST", table+minimalFormat, h, body)
}

func (h *harness) batch(body string) string {
	h.t.Helper()
	return dump(h.t, h.do(request{method: "POST", target: "/devstoreaccount1/$batch",
		header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B", "Accept": "application/json;odata=minimalmetadata"},
		body:   body}))
}

func TestGoldenBatch(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Batch")
	h.insert("Batch", `{"PartitionKey":"p","RowKey":"merge","Old":"x"}`)
	h.insert("Batch", `{"PartitionKey":"p","RowKey":"replace","Old":"x"}`)
	h.insert("Batch", `{"PartitionKey":"p","RowKey":"delete","Old":"x"}`)
	success := changeSetBody(
		insertOp("Batch", `{"PartitionKey":"p","RowKey":"a","N":1}`, true),
		insertOp("Batch", `{"PartitionKey":"p","RowKey":"b","N":2}`, false),
		subRequestText("PATCH", "Batch(PartitionKey='p',RowKey='merge')", map[string]string{"Accept": "application/json", "If-Match": "*"}, `{"PartitionKey":"p","RowKey":"merge","New":"y"}`),
		subRequestText("PUT", "Batch(PartitionKey='p',RowKey='replace')", map[string]string{"Accept": "application/json"}, `{"PartitionKey":"p","RowKey":"replace","New":"y"}`),
		subRequestText("DELETE", "Batch(PartitionKey='p',RowKey='delete')"+minimalFormat, map[string]string{"Accept": "application/json;odata=minimalmetadata", "If-Match": "*"}, ""),
	)
	golden(t, "batch_success", h.batch(success))
	failure := changeSetBody(
		insertOp("Batch", `{"PartitionKey":"p","RowKey":"c"}`, true),
		insertOp("Batch", `{"PartitionKey":"p","RowKey":"d"}`, true),
		insertOp("Batch", `{"PartitionKey":"p","RowKey":"a"}`, true),
	)
	golden(t, "batch_failure", h.batch(failure))
	missing := changeSetBody(insertOp("Nope", `{"PartitionKey":"p","RowKey":"a"}`, true))
	golden(t, "batch_table_not_found", h.batch(missing))
	query := "--batch_B\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		subRequestText("GET", "Batch(PartitionKey='p',RowKey='a')", map[string]string{"Accept": "application/json;odata=nometadata"}, "") +
		"\r\n--batch_B--\r\n"
	golden(t, "batch_query", h.batch(query))
}
