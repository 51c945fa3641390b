package remote_test

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// README.md, "Moving from embedded to a storage account", shows this region (readme_test.go in
// the root package checks it).
// snippet: moving
// open returns the embedded database, or the service a connection string names.
func open(connectionString string, opts *remote.Options) (tabula.ServiceAPI, func() error, error) {
	if connectionString != "" {
		svc, err := remote.Dial(connectionString, opts) // AccountKey or SharedAccessSignature
		return svc, func() error { return nil }, err
	}
	db, err := tabula.OpenInMemory(nil) // or tabula.Open(dir, nil)
	if err != nil {
		return nil, nil, err
	}
	return tabula.Embedded(db), db.Close, nil
}

// favorite is repository code: it takes the interface, and runs on either backend.
func favorite(ctx context.Context, movies tabula.TableAPI, category, title string) error {
	e, err := movies.Get(ctx, category, title)
	if err != nil {
		return err // errors.Is(err, tabula.ErrResourceNotFound) on both
	}
	e.Properties["Favorite"] = tabula.Boolean(true)
	_, err = movies.Update(ctx, e, tabula.Merge, e.ETag)
	return err // errors.Is(err, tabula.ErrUpdateConditionNotSatisfied) on both
}

// end snippet

// The same code on an embedded database and on tabula serve (in process here; a storage
// account's connection string works the same).
func Example() {
	ctx := context.Background()
	srv, err := tabulatest.Start(nil, tabulatest.InProcess())
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	opts := &remote.Options{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}}

	for _, conn := range []string{"", server.DevelopmentAccount().ConnectionString(srv.Endpoint)} {
		svc, closeDB, err := open(conn, opts)
		if err != nil {
			panic(err)
		}
		movies, err := svc.CreateTable(ctx, "Movies")
		if err != nil {
			panic(err)
		}
		_, err = movies.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Cop Out",
			Properties: tabula.Properties{"Rating": tabula.Double(4.5)}})
		if err != nil {
			panic(err)
		}
		fmt.Println(favorite(ctx, movies, "Action", "Cop Out"), favorite(ctx, movies, "Action", "Heat"))
		e, _ := movies.Get(ctx, "Action", "Cop Out")
		fmt.Println(e.Properties["Favorite"], e.Properties["Rating"])
		if err := closeDB(); err != nil {
			panic(err)
		}
	}
	// Output:
	// <nil> tabula: entity ("Action", "Heat") does not exist (ResourceNotFound)
	// true 4.5
	// <nil> tabula: entity ("Action", "Heat") does not exist (ResourceNotFound)
	// true 4.5
}

// A table's stored access policies, set and read through the optional interface that the
// embedded tables share, so that code (such as an export) works on either backend.
func ExampleTable_SetAccessPolicies() {
	ctx := context.Background()
	srv, err := tabulatest.Start(nil, tabulatest.InProcess())
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	svc, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}})
	if err != nil {
		panic(err)
	}
	movies, err := svc.CreateTable(ctx, "Movies")
	if err != nil {
		panic(err)
	}
	acl := movies.(tabula.AccessPoliciesAPI)
	err = acl.SetAccessPolicies(ctx, []tabula.AccessPolicy{{ID: "readers", Permission: "r",
		Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Expiry: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}})
	if err != nil {
		panic(err)
	}
	policies, err := acl.AccessPolicies(ctx)
	if err != nil {
		panic(err)
	}
	for _, p := range policies {
		fmt.Println(p.ID, p.Permission, p.Expiry.Format(time.DateOnly))
	}
	// Output:
	// readers r 2026-01-01
}
