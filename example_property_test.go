package tabula_test

import (
	"fmt"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/odata"
)

// ValueOf and PropertyOf convert between an entity's properties and the values the filter
// language compares; a Value prints as the filter literal of its type. A DateTime keeps the
// service's 100 ns ticks.
func ExampleValueOf() {
	for _, p := range []tabula.Property{
		tabula.String("Ocean's Eleven"), tabula.Int32(7), tabula.Int64(7), tabula.Double(7),
		tabula.DateTime(time.Date(2001, 12, 7, 20, 0, 0, 123456789, time.UTC)),
	} {
		v := tabula.ValueOf(p)
		fmt.Printf("%-12s %-38s %v\n", v.Type, v, tabula.PropertyOf(v))
	}
	fmt.Println(tabula.PropertyOf(odata.Value{}) == nil)
	// Output:
	// Edm.String   'Ocean''s Eleven'                      Ocean's Eleven
	// Edm.Int32    7                                      7
	// Edm.Int64    7L                                     7
	// Edm.Double   7.0                                    7
	// Edm.DateTime datetime'2001-12-07T20:00:00.1234567Z' 2001-12-07T20:00:00.1234567Z
	// true
}
