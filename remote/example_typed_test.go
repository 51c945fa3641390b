package remote_test

import (
	"context"
	"fmt"
	"log"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

// Order is an entity as a Go struct.
type Order struct {
	Customer string `tabula:"PartitionKey"`
	ID       string `tabula:"RowKey"`
	ETag     tabula.ETag
	Total    float64
	Items    int32
	Ref      string `tabula:",Edm.Guid"`
}

// Typed entities through a remote service (tabula serve in process here; Azure, Azurite
// and the Cosmos DB Table API alike), and through the engine behind it: the same calls and
// the same structs on both backends.
func Example_typedEntities() {
	ctx := context.Background()
	srv, err := tabulatest.Start(nil, tabulatest.InProcess())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	svc, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}})
	if err != nil {
		log.Fatal(err)
	}
	orders, err := svc.CreateTable(ctx, "Orders")
	if err != nil {
		log.Fatal(err)
	}
	o := Order{Customer: "c42", ID: "0001", Total: 5, Items: 2, Ref: "6f9619ff-8b86-d011-b42d-00c04fc964ff"}
	if _, err := tabula.InsertAs(ctx, orders, o); err != nil {
		log.Fatal(err)
	}
	got, err := tabula.GetAs[Order](ctx, orders, "c42", "0001")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Total, got.Items, got.Ref)
	// The engine behind the server reads the same struct, from the stored record.
	stored, err := tabula.GetAs[Order](ctx, srv.DB.Table("Orders"), "c42", "0001")
	fmt.Println(stored == got, err)
	// The types went over the wire as the struct says: 5.0 stays a Double, Ref is a Guid.
	e, _ := orders.Get(ctx, "c42", "0001")
	fmt.Println(e.Properties["Total"].EdmType(), e.Properties["Ref"].EdmType())
	// Output:
	// 5 2 6f9619ff-8b86-d011-b42d-00c04fc964ff
	// true <nil>
	// Edm.Double Edm.Guid
}
