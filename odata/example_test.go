package odata_test

import (
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/odata"
)

type movie map[string]odata.Value

func (m movie) Property(name string) (odata.Value, bool) {
	v, ok := m[name]
	return v, ok
}

func Example() {
	e, err := odata.Parse("'Action' eq PartitionKey and RowKey ge 'Sh' and RowKey lt 'Si' and Rating gt 4")
	if err != nil {
		panic(err)
	}
	fmt.Println(e)

	p := odata.Compile(e)
	fmt.Println(p.Match(movie{
		"PartitionKey": odata.StringValue("Action"),
		"RowKey":       odata.StringValue("Shaft"),
		"Rating":       odata.DoubleValue(4.5), // an Int32 literal widens to Double
	}))

	for _, r := range odata.Ranges(e) {
		fmt.Println(r)
	}
	// Output:
	// PartitionKey eq 'Action' and RowKey ge 'Sh' and RowKey lt 'Si' and Rating gt 4
	// true
	// PartitionKey ["Action", "Action"] RowKey ["Sh", "Si")
}

func ExampleParse_errors() {
	for _, f := range []string{"aaa bbb ccc", "Views gt 1498179600055", "startswith(RowKey, 'a')"} {
		_, err := odata.Parse(f)
		var oe *odata.Error
		if errors.As(err, &oe) {
			fmt.Printf("%s: %q\n", oe.Code, oe.Message)
		}
	}
	// Output:
	// InvalidInput: "Syntax error at position 7 in 'aaa bbb ccc'."
	// InvalidInput: "Unrecognized 'Edm.Int32' literal '1498179600055' "
	// NotImplemented: "The requested operation is not implemented on the specified resource."
}
