package tabula_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
)

// Export writes a database's tables to a file any tool can read; Import loads one, all or
// nothing.
func ExampleDB_Export() {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	db, _ := tabula.OpenInMemory(&tabula.Options{Clock: func() time.Time { return now }})
	defer db.Close()
	orders, _ := db.CreateTable(ctx, "Orders")
	orders.Insert(ctx, tabula.Entity{PartitionKey: "alice", RowKey: "0001", Properties: tabula.Properties{
		"Total": tabula.Double(12.5), "Units": tabula.Int64(3)}})

	var file bytes.Buffer
	if err := db.Export(ctx, &file, nil); err != nil {
		fmt.Println(err)
	}
	fmt.Print(file.String())
	// Output:
	// {"@tabula":"export","version":1}
	// {"@tabula":"table","account":"","table":"Orders"}
	// {"odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A00.0000001Z'\"","PartitionKey":"alice","RowKey":"0001","Timestamp":"2024-05-01T10:00:00.0000001Z","Total":12.5,"Units@odata.type":"Edm.Int64","Units":"3"}
	// {"@tabula":"end","account":"","table":"Orders","entities":1}
	// {"@tabula":"eof","tables":1,"entities":1}
}

// A bad line stops the import with an error naming the line, the field and the rule, and
// changes nothing.
func ExampleDB_Import() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	file := `{"@tabula":"export","version":1}
{"@tabula":"table","account":"","table":"Orders"}
{"PartitionKey":"alice","RowKey":"0001","Timestamp":"2024-05-01T10:00:00Z","Units@odata.type":"Edm.Int64","Units":"3"}
{"PartitionKey":"bob","RowKey":"0002","Timestamp":"2024-05-01T10:00:00Z","Units@odata.type":"Edm.Int64","Units":"three"}
{"@tabula":"end","account":"","table":"Orders","entities":2}
{"@tabula":"eof","tables":1,"entities":2}
`
	_, err := db.Import(ctx, strings.NewReader(file), &tabula.ImportOptions{KeepTimestamps: true})
	fmt.Println(err)
	_, err = db.Table("Orders").Get(ctx, "alice", "0001")
	fmt.Println(err != nil)

	p, err := db.Import(ctx, strings.NewReader(file), &tabula.ImportOptions{BestEffort: true})
	fmt.Println(p.Entities, p.Skipped, err)
	// Output:
	// line 4: property "Units": three is not an Edm.Int64
	// true
	// 1 1 <nil>
}
