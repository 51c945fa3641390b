package tabulatest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/tabulatest"
)

// Transport is an azcore transport without this package importing azcore.
var _ policy.Transporter = (*tabulatest.Transport)(nil)

// The official SDK talks to a Tabula server on a loopback port through its connection
// string, as it would to Azure or Azurite. In a test, tabulatest.NewServer(t, nil) does
// the same and closes the server when the test ends.
func Example() {
	srv, err := tabulatest.Start(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), nil)
	if err != nil {
		log.Fatal(err)
	}
	movies := svc.NewClient("Movies")
	if _, err := movies.CreateTable(ctx, nil); err != nil {
		log.Fatal(err)
	}
	e, _ := json.Marshal(map[string]any{"PartitionKey": "Action", "RowKey": "Cop Out", "Rating": 4.5})
	if _, err := movies.AddEntity(ctx, e, nil); err != nil {
		log.Fatal(err)
	}
	_, err = movies.AddEntity(ctx, e, nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		fmt.Println("again:", re.StatusCode, re.ErrorCode)
	}

	// The engine behind the server is at hand, to arrange data or check outcomes.
	got, err := srv.DB.Table("Movies").Get(ctx, "Action", "Cop Out")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", got.Properties["Rating"])
	// Output:
	// again: 409 EntityAlreadyExists
	// stored: 4.5
}

// With the in-process transport no socket is opened at all: requests go straight to the
// server's handler. Engine options reach the server too; here, forced continuations make
// every page hold at most two entities, and the SDK's pager follows them.
func ExampleServer_Transport() {
	srv, err := tabulatest.Start(&tabula.Options{Faults: partition.Faults{ContinuationEvery: 2}}, tabulatest.InProcess())
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	opts := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Transport: srv.Transport()}}
	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), opts)
	if err != nil {
		log.Fatal(err)
	}
	t := svc.NewClient("Pages")
	if _, err := t.CreateTable(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for i := range 5 {
		e, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprint(i)})
		if _, err := t.AddEntity(ctx, e, nil); err != nil {
			log.Fatal(err)
		}
	}
	pager := t.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(page.Entities), "entities")
	}
	// Output:
	// 2 entities
	// 2 entities
	// 1 entities
}

// A server per test costs a few kilobytes and microseconds, so a suite can give every
// parallel test its own, with nothing shared and nothing to clean up between tests. In a
// test file that reads
//
//	func TestOrders(t *testing.T) {
//		t.Parallel()
//		srv := tabulatest.NewServer(t, nil, tabulatest.InProcess())
//		...
//	}
//
// Here 100 such tests run at once, each creating the same table in its own server and
// finding only its own entity there.
func Example_parallelTests() {
	ctx := context.Background()
	var isolated atomic.Int64
	var wg sync.WaitGroup
	for test := range 100 {
		wg.Go(func() {
			srv, err := tabulatest.Start(nil, tabulatest.InProcess())
			if err != nil {
				log.Fatal(err)
			}
			defer srv.Close()
			opts := &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Transport: srv.Transport()}}
			svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), opts)
			if err != nil {
				log.Fatal(err)
			}
			orders := svc.NewClient("Orders")
			if _, err := orders.CreateTable(ctx, nil); err != nil {
				log.Fatal(err)
			}
			e, _ := json.Marshal(map[string]any{"PartitionKey": "test", "RowKey": fmt.Sprint(test)})
			if _, err := orders.AddEntity(ctx, e, nil); err != nil {
				log.Fatal(err)
			}
			page, err := orders.NewListEntitiesPager(nil).NextPage(ctx)
			if err != nil {
				log.Fatal(err)
			}
			var got struct{ RowKey string }
			if len(page.Entities) == 1 && json.Unmarshal(page.Entities[0], &got) == nil && got.RowKey == fmt.Sprint(test) {
				isolated.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Println(isolated.Load(), "tests, each alone with its own server")
	// Output:
	// 100 tests, each alone with its own server
}
