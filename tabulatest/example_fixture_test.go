package tabulatest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// movies is seeded once, when a test first uses it; every test then gets a copy of its own.
var movies = tabulatest.Tables(map[string][]tabula.Entity{
	"Movies": {
		{PartitionKey: "Action", RowKey: "Cop Out", Properties: tabula.Properties{"Rating": tabula.Double(4.5)}},
		{PartitionKey: "Action", RowKey: "Heat", Properties: tabula.Properties{"Rating": tabula.Double(4.9)}},
	},
})

// In a test, srv := tabulatest.NewServer(t, nil, movies) gives the test a copy of its own.
func ExampleFixture() {
	ctx := context.Background()
	for range 2 {
		srv, err := tabulatest.Start(nil, movies, tabulatest.InProcess())
		if err != nil {
			log.Fatal(err)
		}
		// This copy's writes reach no other copy.
		if _, err := srv.DB.Table("Movies").Insert(ctx, tabula.Entity{PartitionKey: "Drama", RowKey: "Mine"}); err != nil {
			log.Fatal(err)
		}
		n, err := tabula.Count(ctx, srv.DB.Table("Movies"), "")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(n)
		srv.Close()
	}
	// Output:
	// 3
	// 3
}
