package tabula

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCheckImport is CheckImport (tabula import --check) over an in-memory file of
// 1 KiB entities shaped as bench's BenchmarkImport writes them: the decode and validation
// that bound every import, without the disk.
func BenchmarkCheckImport(b *testing.B) {
	const n = 20_000
	pad := strings.Repeat("x", 1000)
	var buf bytes.Buffer
	buf.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Bulk"}` + "\n")
	for i := range n {
		fmt.Fprintf(&buf, `{"PartitionKey":"p%06d","RowKey":"r%08d","Timestamp":"2024-01-02T03:04:05.1234567Z","N@odata.type":"Edm.Int64","N":"%d","Payload":"%s"}`+"\n",
			i/100, i, int64(i)<<33, pad)
	}
	fmt.Fprintf(&buf, `{"@tabula":"end","account":"","table":"Bulk","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", n, n)
	file := buf.Bytes()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := CheckImport(context.Background(), bytes.NewReader(file), nil)
		if err != nil || p.Entities != n {
			b.Fatalf("checked %d of %d: %v", p.Entities, n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
}
