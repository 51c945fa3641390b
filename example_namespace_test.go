package tabula_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula"
)

// Each storage account is its own set of tables; in one DB, a Namespace is one. tabula
// serve gives every account but the first its own namespace.
func ExampleDB_Namespace() {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()

	alice, bob := db.Namespace("alice"), db.Namespace("bob")
	if _, err := alice.CreateTable(ctx, "Orders"); err != nil {
		panic(err)
	}
	// bob has no table Orders, and may create his own.
	_, err = bob.Table("Orders").Get(ctx, "p", "r")
	fmt.Println(errors.Is(err, tabula.ErrTableNotFound))
	if _, err := bob.CreateTable(ctx, "Orders"); err != nil {
		panic(err)
	}
	// The DB's own methods see the root namespace, Namespace(""), which holds neither.
	page, err := db.ListTables(ctx, tabula.TableQuery{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Tables))
	// Output:
	// true
	// 0
}
