package tabula_test

import (
	"context"
	"fmt"

	"github.com/tabuladb/tabula"
)

// Query returns a page at a time; QueryAll follows the continuation tokens for you.
func ExampleTable_QueryAll() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")
	for title, rating := range map[string]float64{"Alien": 4.5, "Heat": 4.8, "Shrek": 3.9, "Shining": 4.7} {
		movies.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: title,
			Properties: tabula.Properties{"Rating": tabula.Double(rating)}})
	}

	q := tabula.Query{Filter: "PartitionKey eq 'Action' and Rating gt 4.0", Top: 2}
	for e, err := range movies.QueryAll(ctx, q) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.RowKey, e.Properties["Rating"])
	}
	// Output:
	// Alien 4.5
	// Heat 4.8
	// Shining 4.7
}

// Explain shows the plan: the prefix trick makes a row range, not a scan.
func ExampleTable_Explain() {
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies := db.Table("Movies")

	for _, filter := range []string{
		"PartitionKey eq 'Action' and RowKey ge 'Sh' and RowKey lt 'Si'",
		"PartitionKey eq 'Action' or PartitionKey eq 'Thriller'",
		"Rating gt 4.0",
	} {
		plan, err := movies.Explain(tabula.Query{Filter: filter})
		if err != nil {
			panic(err)
		}
		fmt.Println(plan)
	}
	// Output:
	// RowRange PartitionKey = 'Action', RowKey in ['Sh', 'Si') (service: RowRange); scanned 0, returned 0
	// MultiRange PartitionKey = 'Action' ∪ PartitionKey = 'Thriller' (service: FullScan); scanned 0, returned 0
	// FullScan all keys (service: FullScan); scanned 0, returned 0
}

// A page ends at $top and carries a token naming the next entity to examine.
func ExampleTable_Query() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	logs, _ := db.CreateTable(ctx, "Logs")
	for _, rk := range []string{"0", "1", "2"} {
		logs.Insert(ctx, tabula.Entity{PartitionKey: "day1", RowKey: rk})
	}
	page, _ := logs.Query(ctx, tabula.Query{Top: 1})
	fmt.Println(len(page.Entities), page.Entities[0].RowKey)
	fmt.Println(page.Continuation.NextPartitionKey, page.Continuation.NextRowKey)
	// Output:
	// 1 0
	// 1!8!ZGF5MQ-- 1!4!MQ--
}
