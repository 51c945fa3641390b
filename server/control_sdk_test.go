package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// manage calls the management API of srv over HTTP, as a test in any language would (curl -u
// devstoreaccount1:KEY -X method URL -d body), and returns the status and body.
func manage(t *testing.T, srv *tabulatest.Server, method, resource, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.Endpoint+server.ReservedPrefix+"api/"+resource, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(server.DevelopmentAccountName, server.DevelopmentAccountKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The management API drives an SDK client into ServerBusy and out again while the server
// runs: enforce tiny rates, watch the client's writes refused and the heat report count them,
// then raise the rates and watch the same client succeed.
func TestManagementAPIDrivesSDKIntoServerBusyAndOut(t *testing.T) {
	srv := tabulatest.NewServer(t, nil)
	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), &aztables.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	orders := svc.NewClient("Orders")
	if _, err := orders.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	add := func(row string) error {
		_, err := orders.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "hot", "RowKey": row}), nil)
		return err
	}
	if err := add("0"); err != nil {
		t.Fatal(err)
	}

	// One entity per thousand seconds and a bucket of one: the first write passes, the next is
	// refused however slowly the machine runs.
	status, body := manage(t, srv, "PUT", "limits", `{"mode":"enforce","partitionRate":0.001,"partitionBurst":1}`)
	if status != 200 || !strings.Contains(body, `"mode":"enforce"`) || !strings.Contains(body, `"partitionRate":0.001`) {
		t.Fatalf("PUT limits: %d %s", status, body)
	}
	if err := add("1"); err != nil {
		t.Fatalf("the first write after the change fills the bucket's one token: %v", err)
	}
	for _, row := range []string{"2", "3"} {
		wantCode(t, add(row), 503, "ServerBusy")
	}
	rep := srv.DB.Namespace("").HeatReport()
	if rep.ThrottledPartition != 2 || rep.PartitionRate != 0.001 {
		t.Fatalf("heat report: throttled %d at %v/s, want 2 at 0.001/s", rep.ThrottledPartition, rep.PartitionRate)
	}
	// A query scans entities too, and is refused while the partition's bucket is empty.
	pager := orders.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'hot'")})
	_, err = pager.NextPage(ctx)
	wantCode(t, err, 503, "ServerBusy")

	// Out again: the service's own rates, every bucket full at once.
	status, body = manage(t, srv, "PUT", "limits", `{"partitionRate":2000}`)
	if status != 200 || !strings.Contains(body, `"partitionRate":2000,"partitionBurst":2000`) {
		t.Fatalf("PUT limits: %d %s", status, body)
	}
	for _, row := range []string{"2", "3", "4"} {
		if err := add(row); err != nil {
			t.Fatalf("after raising the rate: %v", err)
		}
	}

	// Observing refuses nothing but still counts what enforcing would have refused.
	if status, body = manage(t, srv, "PUT", "limits", `{"mode":"observe","partitionRate":0.001}`); status != 200 {
		t.Fatalf("PUT limits: %d %s", status, body)
	}
	if status, _ = manage(t, srv, "POST", "reset", ""); status != http.StatusNoContent {
		t.Fatalf("POST reset: %d", status)
	}
	for _, row := range []string{"5", "6", "7"} {
		if err := add(row); err != nil {
			t.Fatalf("observing: %v", err)
		}
	}
	if got := srv.DB.Namespace("").HeatReport().ThrottledPartition; got != 2 {
		t.Fatalf("observing after a reset: %d would-be throttled, want 2", got)
	}
}
