package tabula_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula"
)

// A DB of the Cosmos DB for Table flavour refuses what the Table service accepts but Cosmos
// DB would not: here an empty RowKey, and a table reached by another letter case.
func ExampleFlavor() {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(&tabula.Options{Flavor: tabula.FlavorCosmos})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	orders, err := db.CreateTable(ctx, "Orders")
	if err != nil {
		panic(err)
	}

	_, err = orders.Insert(ctx, tabula.Entity{PartitionKey: "2024", RowKey: ""})
	var te *tabula.Error
	if errors.As(err, &te) {
		fmt.Println(te.StatusCode, te.Code, te.Message)
	}
	_, err = db.Table("orders").Get(ctx, "2024", "1")
	fmt.Println(errors.Is(err, tabula.ErrTableNotFound))
	// Output:
	// 400 PropertiesNeedValue PartitionKey/RowKey cannot be empty
	// true
}
