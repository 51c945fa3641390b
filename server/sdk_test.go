package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/tabulatest"
)

// The official Go SDK, unchanged, against Tabula over both transports: loopback HTTP and
// the in-process transport. Every client method the SDK has for tables and entities is
// driven here, and the error codes it surfaces are checked against the service's.

var ctx = context.Background()

// sdkEnv is one transport's way to reach a fresh server.
type sdkEnv struct {
	srv  *tabulatest.Server
	opts *aztables.ClientOptions
}

func (e sdkEnv) service(t *testing.T) *aztables.ServiceClient {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(e.srv.ConnectionString(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// table creates a table and returns its client.
func (e sdkEnv) table(t *testing.T, name string) *aztables.Client {
	t.Helper()
	c := e.service(t).NewClient(name)
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// forEachTransport runs f against a fresh server over loopback HTTP and in process, both
// in memory, and in process on disk.
// Retries are off so that an expected 5xx surfaces at once.
func forEachTransport(t *testing.T, dbOpts *tabula.Options, f func(t *testing.T, env sdkEnv)) {
	t.Run("loopback", func(t *testing.T) {
		srv := tabulatest.NewServer(t, dbOpts)
		f(t, sdkEnv{srv: srv, opts: &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{
			Retry: policy.RetryOptions{MaxRetries: -1}}}})
	})
	t.Run("inprocess", func(t *testing.T) {
		srv := tabulatest.NewInProcess(t, dbOpts)
		f(t, sdkEnv{srv: srv, opts: &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: srv.Transport(), Retry: policy.RetryOptions{MaxRetries: -1}}}})
	})
	t.Run("disk", func(t *testing.T) {
		srv := onDiskServer(t, dbOpts)
		f(t, sdkEnv{srv: srv, opts: &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{
			Transport: srv.Transport(), Retry: policy.RetryOptions{MaxRetries: -1}}}})
	})
}

// wantCode checks that err is the service error the SDK surfaces as a ResponseError.
func wantCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not an *azcore.ResponseError", err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s", re.StatusCode, re.ErrorCode, status, code)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSDKTables(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		svc := env.service(t)
		for _, name := range []string{"Alpha", "beta", "Gamma", "delta", "Epsilon"} {
			resp, err := svc.CreateTable(ctx, name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.TableName == nil || *resp.TableName != name {
				t.Fatalf("CreateTable returned %v, want %s", resp.TableName, name)
			}
		}
		_, err := svc.CreateTable(ctx, "ALPHA", nil)
		wantCode(t, err, 409, "TableAlreadyExists")
		_, err = svc.CreateTable(ctx, "no-dashes", nil)
		wantCode(t, err, 400, "InvalidResourceName")
		_, err = svc.CreateTable(ctx, "ab", nil)
		wantCode(t, err, 400, "OutOfRangeInput")

		// Paging: two tables a page, in name order whatever the case.
		var pages [][]string
		pager := svc.NewListTablesPager(&aztables.ListTablesOptions{Top: to.Ptr[int32](2)})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tb := range page.Tables {
				names = append(names, *tb.Name)
			}
			pages = append(pages, names)
		}
		if got := fmt.Sprint(pages); got != "[[Alpha beta] [delta Epsilon] [Gamma]]" {
			t.Fatalf("pages %s", got)
		}
		// A filter on TableName.
		pager = svc.NewListTablesPager(&aztables.ListTablesOptions{Filter: to.Ptr("TableName ge 'b' and TableName lt 'e'")})
		var filtered []string
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, tb := range page.Tables {
				filtered = append(filtered, *tb.Name)
			}
		}
		if got := fmt.Sprint(filtered); got != "[beta delta]" {
			t.Fatalf("filtered %s", got)
		}
		if _, err := svc.DeleteTable(ctx, "gamma", nil); err != nil {
			t.Fatal(err)
		}
		_, err = svc.DeleteTable(ctx, "gamma", nil)
		wantCode(t, err, 404, "ResourceNotFound")
		if _, err := svc.NewClient("Delta").Delete(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, err = svc.NewClient("Nope").CreateTable(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
	})
}

// allTypes is an entity with one property of each EDM type, as the SDK marshals them.
func allTypes(pk, rk string) aztables.EDMEntity {
	return aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: pk, RowKey: rk},
		Properties: map[string]any{
			"Str":      "text that looks like 2021-07-13T00:00:00Z",
			"Int32":    int32(-42),
			"Int64":    aztables.EDMInt64(math.MaxInt64),
			"Double":   3.25,
			"Bool":     true,
			"When":     aztables.EDMDateTime(time.Date(2021, 7, 13, 1, 2, 3, 400000000, time.UTC)),
			"Id":       aztables.EDMGUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
			"Bytes":    aztables.EDMBinary([]byte{0, 1, 2, 250}),
			"Unicode":  "Grüße, 世界 😀",
			"Integral": 5.0, // encoding/json writes 5, which the service reads as an Int32
		},
	}
}

func TestSDKEntities(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		c := env.table(t, "Entities")
		added, err := c.AddEntity(ctx, marshal(t, allTypes("p", "r")), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(added.ETag), `W/"datetime'`) {
			t.Fatalf("AddEntity ETag %q", added.ETag)
		}
		got, err := c.GetEntity(ctx, "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.ETag != added.ETag {
			t.Fatalf("GetEntity ETag %q, AddEntity %q", got.ETag, added.ETag)
		}
		var e aztables.EDMEntity
		if err := json.Unmarshal(got.Value, &e); err != nil {
			t.Fatal(err)
		}
		want := allTypes("p", "r").Properties
		want["Integral"] = int32(5)
		want["Double"] = 3.25
		for name, w := range want {
			g := e.Properties[name]
			if fmt.Sprintf("%T %v", g, g) != fmt.Sprintf("%T %v", w, w) {
				t.Errorf("%s: got %T %v, want %T %v", name, g, g, w, w)
			}
		}
		if e.ETag != string(added.ETag) || time.Time(e.Timestamp).IsZero() {
			t.Errorf("odata.etag %q, Timestamp %v", e.ETag, time.Time(e.Timestamp))
		}

		_, err = c.AddEntity(ctx, marshal(t, allTypes("p", "r")), nil)
		wantCode(t, err, 409, "EntityAlreadyExists")
		_, err = c.GetEntity(ctx, "p", "missing", nil)
		wantCode(t, err, 404, "ResourceNotFound")
		_, err = env.service(t).NewClient("NoSuchTable").AddEntity(ctx, marshal(t, allTypes("p", "r")), nil)
		wantCode(t, err, 404, "TableNotFound")
		tooLong := aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: "p", RowKey: "long"},
			Properties: map[string]any{"S": strings.Repeat("x", tabula.MaxStringLength+1)}}
		_, err = c.AddEntity(ctx, marshal(t, tooLong), nil)
		wantCode(t, err, 400, "PropertyValueTooLarge")
		badName := aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: "p", RowKey: "bad"},
			Properties: map[string]any{"1abc": 1}}
		_, err = c.AddEntity(ctx, marshal(t, badName), nil)
		wantCode(t, err, 400, "PropertyNameInvalid")

		// Merge with the current ETag keeps other properties; a stale ETag is refused.
		patch := map[string]any{"PartitionKey": "p", "RowKey": "r", "Str": "merged", "Extra": int32(7)}
		up, err := c.UpdateEntity(ctx, marshal(t, patch), &aztables.UpdateEntityOptions{IfMatch: &got.ETag, UpdateMode: aztables.UpdateModeMerge})
		if err != nil {
			t.Fatal(err)
		}
		if up.ETag == got.ETag {
			t.Fatal("merge did not change the ETag")
		}
		_, err = c.UpdateEntity(ctx, marshal(t, patch), &aztables.UpdateEntityOptions{IfMatch: &got.ETag, UpdateMode: aztables.UpdateModeMerge})
		wantCode(t, err, 412, "UpdateConditionNotSatisfied")
		props := getProps(t, c, "p", "r")
		if props["Str"] != "merged" || props["Extra"] != int32(7) || props["Bool"] != true {
			t.Fatalf("after merge: %v", props)
		}
		// Replace with the new ETag drops everything not sent.
		repl := map[string]any{"PartitionKey": "p", "RowKey": "r", "Only": "this"}
		if _, err := c.UpdateEntity(ctx, marshal(t, repl), &aztables.UpdateEntityOptions{IfMatch: &up.ETag, UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		if props := getProps(t, c, "p", "r"); len(props) != 1 || props["Only"] != "this" {
			t.Fatalf("after replace: %v", props)
		}
		// Without an ETag the SDK sends If-Match: *, which still needs the entity.
		if _, err := c.UpdateEntity(ctx, marshal(t, repl), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
		ghost := map[string]any{"PartitionKey": "p", "RowKey": "ghost", "A": "b"}
		_, err = c.UpdateEntity(ctx, marshal(t, ghost), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace})
		wantCode(t, err, 404, "ResourceNotFound")

		// Upserts create and then merge or replace.
		if _, err := c.UpsertEntity(ctx, marshal(t, ghost), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
		more := map[string]any{"PartitionKey": "p", "RowKey": "ghost", "C": "d"}
		if _, err := c.UpsertEntity(ctx, marshal(t, more), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
			t.Fatal(err)
		}
		if props := getProps(t, c, "p", "ghost"); props["A"] != "b" || props["C"] != "d" {
			t.Fatalf("after upsert merge: %v", props)
		}
		if _, err := c.UpsertEntity(ctx, marshal(t, more), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		if props := getProps(t, c, "p", "ghost"); len(props) != 1 || props["C"] != "d" {
			t.Fatalf("after upsert replace: %v", props)
		}

		// Delete: a stale ETag is refused, the current one or none (*) deletes.
		cur, err := c.GetEntity(ctx, "p", "ghost", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.DeleteEntity(ctx, "p", "ghost", &aztables.DeleteEntityOptions{IfMatch: &got.ETag})
		wantCode(t, err, 412, "UpdateConditionNotSatisfied")
		if _, err := c.DeleteEntity(ctx, "p", "ghost", &aztables.DeleteEntityOptions{IfMatch: &cur.ETag}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteEntity(ctx, "p", "r", nil); err != nil {
			t.Fatal(err)
		}
		_, err = c.DeleteEntity(ctx, "p", "r", nil)
		wantCode(t, err, 404, "ResourceNotFound")
	})
}

func getProps(t *testing.T, c *aztables.Client, pk, rk string) map[string]any {
	t.Helper()
	resp, err := c.GetEntity(ctx, pk, rk, nil)
	if err != nil {
		t.Fatal(err)
	}
	var e aztables.EDMEntity
	if err := json.Unmarshal(resp.Value, &e); err != nil {
		t.Fatal(err)
	}
	return e.Properties
}

func TestSDKMetadataLevels(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		c := env.table(t, "Levels")
		if _, err := c.AddEntity(ctx, marshal(t, allTypes("p", "r")), nil); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			format aztables.MetadataFormat
			want   []string
			absent []string
		}{
			{aztables.MetadataFormatNone, []string{`"Int64":"9223372036854775807"`}, []string{"odata.", "@odata.type"}},
			{aztables.MetadataFormatMinimal, []string{`"odata.etag"`, `"Int64@odata.type":"Edm.Int64"`}, []string{`"Int32@odata.type"`, `"odata.id"`}},
			{aztables.MetadataFormatFull, []string{`"odata.id"`, `"odata.editLink"`, `"Int64@odata.type":"Edm.Int64"`, `"Timestamp@odata.type":"Edm.DateTime"`},
				[]string{`"Int32@odata.type"`, `"Bool@odata.type"`, `"Double@odata.type"`}},
		} {
			resp, err := c.GetEntity(ctx, "p", "r", &aztables.GetEntityOptions{Format: to.Ptr(tc.format)})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(resp.Value), w) {
					t.Errorf("%s: %s lacks %s", tc.format, resp.Value, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(string(resp.Value), a) {
					t.Errorf("%s: %s has %s", tc.format, resp.Value, a)
				}
			}
		}
	})
}

func TestSDKListEntities(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		c := env.table(t, "Listing")
		// 2,500 entities in 3 partitions, loaded by transactions of 100.
		const perPartition = 1000
		for _, pk := range []string{"a", "b", "c"} {
			n := perPartition
			if pk == "c" {
				n = 500
			}
			for start := 0; start < n; start += 100 {
				var actions []aztables.TransactionAction
				for i := start; i < start+100; i++ {
					e := map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("%04d", i), "N": int32(i)}
					if i%2 == 0 {
						e["Even"] = true
					}
					actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: marshal(t, e)})
				}
				if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		count := func(opts *aztables.ListEntitiesOptions) (pages, entities int, first map[string]any) {
			pager := c.NewListEntitiesPager(opts)
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, raw := range page.Entities {
					if first == nil {
						if err := json.Unmarshal(raw, &first); err != nil {
							t.Fatal(err)
						}
					}
					entities++
				}
			}
			return pages, entities, first
		}
		if p, n, _ := count(nil); p != 3 || n != 2500 {
			t.Fatalf("all: %d pages, %d entities", p, n)
		}
		if p, n, _ := count(&aztables.ListEntitiesOptions{Top: to.Ptr[int32](300)}); p != 9 || n != 2500 {
			t.Fatalf("top 300: %d pages, %d entities", p, n)
		}
		p, n, first := count(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'b' and N ge 990"), Select: to.Ptr("RowKey,N,Even")})
		if p != 1 || n != 10 {
			t.Fatalf("filter: %d pages, %d entities", p, n)
		}
		// $select: only what was named, and null for a selected property the entity lacks.
		if first["RowKey"] != "0990" || first["N"] != float64(990) || first["Even"] != true || first["PartitionKey"] != nil {
			t.Fatalf("selected entity %v", first)
		}
		_, _, odd := count(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'c' and RowKey eq '0001'"), Select: to.Ptr("Even")})
		if v, ok := odd["Even"]; !ok || v != nil {
			t.Fatalf("absent selected property: %v", odd)
		}
		pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("N eq")})
		_, err := pager.NextPage(ctx)
		wantCode(t, err, 400, "InvalidInput")
		pager = c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("startswith(RowKey, '1')")})
		_, err = pager.NextPage(ctx)
		wantCode(t, err, 501, "NotImplemented")
	})
}

// batchFailure reads what a failed transaction's 202 response says: the SDK returns it as
// a ResponseError with status 202 and no code, exactly as it does against the service, so
// the failing index and code are read from the body.
func batchFailure(t *testing.T, err error) (status int, msg, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not an *azcore.ResponseError", err)
	}
	if re.StatusCode != http.StatusAccepted || re.ErrorCode != "" {
		t.Fatalf("transaction failure surfaced as %d %q; the service's is 202 with no code", re.StatusCode, re.ErrorCode)
	}
	body, rerr := io.ReadAll(re.RawResponse.Body)
	if rerr != nil {
		t.Fatal(rerr)
	}
	m := regexp.MustCompile(`HTTP/1\.1 (\d+) [^\r]*\r\n(?s:.*)\{"odata\.error":\{"code":"(\w+)","message":\{"lang":"en-US","value":"([^\\]*)\\n`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no failing part in %q", body)
	}
	status, _ = strconv.Atoi(string(m[1]))
	return status, string(m[3]), string(m[2])
}

func TestSDKTransactions(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		c := env.table(t, "Batches")
		for _, rk := range []string{"merge", "replace", "delete"} {
			if _, err := c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "Old": "x"}), nil); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := c.GetEntity(ctx, "p", "merge", nil)
		if err != nil {
			t.Fatal(err)
		}
		act := func(kind aztables.TransactionType, e map[string]any, etag *azcore.ETag) aztables.TransactionAction {
			return aztables.TransactionAction{ActionType: kind, Entity: marshal(t, e), IfMatch: etag}
		}
		ok := []aztables.TransactionAction{
			act(aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "new", "V": int32(1)}, nil),
			act(aztables.TransactionTypeUpdateMerge, map[string]any{"PartitionKey": "p", "RowKey": "merge", "New": "y"}, &cur.ETag),
			act(aztables.TransactionTypeUpdateReplace, map[string]any{"PartitionKey": "p", "RowKey": "replace", "New": "y"}, nil),
			act(aztables.TransactionTypeInsertMerge, map[string]any{"PartitionKey": "p", "RowKey": "upmerge", "New": "y"}, nil),
			act(aztables.TransactionTypeInsertReplace, map[string]any{"PartitionKey": "p", "RowKey": "upreplace", "New": "y"}, nil),
			act(aztables.TransactionTypeDelete, map[string]any{"PartitionKey": "p", "RowKey": "delete"}, nil),
		}
		if _, err := c.SubmitTransaction(ctx, ok, nil); err != nil {
			t.Fatal(err)
		}
		if props := getProps(t, c, "p", "merge"); props["Old"] != "x" || props["New"] != "y" {
			t.Fatalf("merged: %v", props)
		}
		if props := getProps(t, c, "p", "replace"); props["Old"] != nil || props["New"] != "y" {
			t.Fatalf("replaced: %v", props)
		}
		_, err = c.GetEntity(ctx, "p", "delete", nil)
		wantCode(t, err, 404, "ResourceNotFound")

		before := snapshot(t, env.srv)
		fail := []aztables.TransactionAction{
			act(aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "n1"}, nil),
			act(aztables.TransactionTypeDelete, map[string]any{"PartitionKey": "p", "RowKey": "new"}, nil),
			act(aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "merge"}, nil),
		}
		_, err = c.SubmitTransaction(ctx, fail, nil)
		status, msg, code := batchFailure(t, err)
		if status != 409 || code != "EntityAlreadyExists" || msg != "2:The specified entity already exists." {
			t.Fatalf("failure part: %d %s %q", status, code, msg)
		}
		stale := []aztables.TransactionAction{
			act(aztables.TransactionTypeUpdateMerge, map[string]any{"PartitionKey": "p", "RowKey": "merge", "Z": "z"}, &cur.ETag),
		}
		_, err = c.SubmitTransaction(ctx, stale, nil)
		// A change set of one operation: the service names no index (see failedMessage).
		if status, msg, code := batchFailure(t, err); status != 412 || code != "UpdateConditionNotSatisfied" || msg != "The update condition specified in the request was not satisfied." {
			t.Fatalf("stale: %d %s %q", status, code, msg)
		}
		mixed := []aztables.TransactionAction{
			act(aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": "m1"}, nil),
			act(aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "q", "RowKey": "m2"}, nil),
		}
		_, err = c.SubmitTransaction(ctx, mixed, nil)
		if status, msg, code := batchFailure(t, err); status != 400 || code != "CommandsInBatchActOnDifferentPartitions" || !strings.HasPrefix(msg, "1:") {
			t.Fatalf("mixed partitions: %d %s %q", status, code, msg)
		}
		var tooMany []aztables.TransactionAction
		for i := range 101 {
			tooMany = append(tooMany, act(aztables.TransactionTypeAdd, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprint("many", i)}, nil))
		}
		_, err = c.SubmitTransaction(ctx, tooMany, nil)
		if status, msg, code := batchFailure(t, err); status != 400 || code != "InvalidInput" ||
			msg != "99:The batch request operation exceeds the maximum 100 changes per change set." {
			t.Fatalf("101 actions: %d %s %q", status, code, msg)
		}
		if after := snapshot(t, env.srv); after != before {
			t.Fatalf("failed transactions changed the table:\n%s\n%s", before, after)
		}
		_, err = env.service(t).NewClient("Missing").SubmitTransaction(ctx, ok[:1], nil)
		if status, msg, code := batchFailure(t, err); status != 404 || code != "TableNotFound" || msg != "0:The table specified does not exist." {
			t.Fatalf("missing table: %d %s %q", status, code, msg)
		}
	})
}

// snapshot lists every entity of Batches with its ETag, through the engine.
func snapshot(t *testing.T, srv *tabulatest.Server) string {
	t.Helper()
	var b strings.Builder
	for e, err := range srv.DB.Table("Batches").QueryAll(ctx, tabula.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, e.PartitionKey, e.RowKey, e.ETag, len(e.Properties))
	}
	return b.String()
}

func TestSDKSharedAccessSignatures(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		c := env.table(t, "Shared")
		if _, err := c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
			t.Fatal(err)
		}
		cred, err := aztables.NewSharedKeyCredential(tabulatest.AccountName, tabulatest.AccountKey)
		if err != nil {
			t.Fatal(err)
		}
		keyedSvc, err := aztables.NewServiceClientWithSharedKey(env.srv.URL, cred, env.opts)
		if err != nil {
			t.Fatal(err)
		}
		// GetTableSASURL appends the table name to the client's endpoint as it is, so the
		// endpoint must end in a slash, as a connection string's TableEndpoint from Tabula
		// does (NewClientWithSharedKey(URL+"Shared") would drop it).
		keyed := keyedSvc.NewClient("Shared")
		now := time.Now().UTC()
		readOnly, err := keyed.GetTableSASURL(aztables.SASPermissions{Read: true}, now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		reader, err := aztables.NewClientWithNoCredential(readOnly, env.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reader.GetEntity(ctx, "p", "r", nil); err != nil {
			t.Fatal(err)
		}
		_, err = reader.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "sas"}), nil)
		wantCode(t, err, 403, "AuthorizationPermissionMismatch")

		acct, err := keyedSvc.GetAccountSASURL(aztables.AccountSASResourceTypes{Container: true, Object: true},
			aztables.AccountSASPermissions{Read: true, Add: true, List: true, Create: true}, now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		sasSvc, err := aztables.NewServiceClientWithNoCredential(acct, env.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sasSvc.CreateTable(ctx, "ViaSAS", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := sasSvc.NewClient("Shared").AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "sas"}), nil); err != nil {
			t.Fatal(err)
		}
		_, err = sasSvc.DeleteTable(ctx, "ViaSAS", nil)
		wantCode(t, err, 403, "AuthorizationPermissionMismatch")
	})
}

// The engine's options reach through tabulatest: forced continuations make the pager
// follow short pages, ForbidFullScans refuses a scan, and injected ServerBusy surfaces as
// the service's 503.
func TestSDKEngineOptions(t *testing.T) {
	opts := &tabula.Options{ForbidFullScans: true, Faults: partition.Faults{ContinuationEvery: 7}}
	forEachTransport(t, opts, func(t *testing.T, env sdkEnv) {
		c := env.table(t, "Options")
		var actions []aztables.TransactionAction
		for i := range 50 {
			actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
				Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": fmt.Sprintf("%02d", i)})})
		}
		if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
			t.Fatal(err)
		}
		pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p'")})
		pages, n := 0, 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			n += len(page.Entities)
		}
		if n != 50 || pages < 7 {
			t.Fatalf("%d entities in %d pages", n, pages)
		}
		pager = c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("RowKey eq '01'")})
		_, err := pager.NextPage(ctx)
		wantCode(t, err, 400, "FullScanForbidden")
	})
	busy := &tabula.Options{Faults: partition.Faults{Seed: 1, ServerBusy: 1}}
	forEachTransport(t, busy, func(t *testing.T, env sdkEnv) {
		_, err := env.service(t).CreateTable(ctx, "Busy", nil)
		wantCode(t, err, 503, "ServerBusy")
	})
}

// Service properties, stats on the secondary endpoint, table ACLs and a SAS signed against
// a stored access policy, through the Go SDK.
func TestSDKServiceAndACL(t *testing.T) {
	forEachTransport(t, nil, func(t *testing.T, env sdkEnv) {
		svc := env.service(t)
		props, err := svc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(props.Cors) != 0 || props.Logging == nil || *props.Logging.Read {
			t.Fatalf("default properties %+v", props.ServiceProperties)
		}
		_, err = svc.SetProperties(ctx, aztables.ServiceProperties{
			Cors: []*aztables.CorsRule{{AllowedOrigins: to.Ptr("https://app.example"), AllowedMethods: to.Ptr("GET,PUT"),
				AllowedHeaders: to.Ptr("x-ms-*"), ExposedHeaders: to.Ptr("x-ms-request-id"), MaxAgeInSeconds: to.Ptr(int32(60))}},
			HourMetrics: &aztables.Metrics{Enabled: to.Ptr(true), IncludeAPIs: to.Ptr(true), Version: to.Ptr("1.0"),
				RetentionPolicy: &aztables.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(7))}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		props, err = svc.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(props.Cors) != 1 || *props.Cors[0].AllowedOrigins != "https://app.example" || *props.HourMetrics.RetentionPolicy.Days != 7 {
			t.Fatalf("properties after Set %+v", props.ServiceProperties)
		}
		_, err = svc.SetProperties(ctx, aztables.ServiceProperties{HourMetrics: &aztables.Metrics{Enabled: to.Ptr(false), Version: to.Ptr("1.0"),
			RetentionPolicy: &aztables.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(366))}}}, nil)
		wantCode(t, err, 400, "InvalidXmlDocument")

		// Stats come from the secondary endpoint only.
		_, err = svc.GetStatistics(ctx, nil)
		wantCode(t, err, 400, "InvalidQueryParameterValue")
		cred, err := aztables.NewSharedKeyCredential(tabulatest.AccountName, tabulatest.AccountKey)
		if err != nil {
			t.Fatal(err)
		}
		secondary, err := aztables.NewServiceClientWithSharedKey(env.srv.Endpoint+"/"+tabulatest.AccountName+"-secondary/", cred, env.opts)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := secondary.GetStatistics(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *stats.GeoReplication.Status != aztables.GeoReplicationStatusLive {
			t.Fatalf("stats %+v", stats.GeoReplication)
		}
		c := env.table(t, "Acl")
		if _, err := c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil); err != nil {
			t.Fatal(err)
		}
		// The secondary reads what the primary wrote, and refuses writes.
		if _, err := secondary.NewClient("Acl").GetEntity(ctx, "p", "r", nil); err != nil {
			t.Fatal(err)
		}
		_, err = secondary.NewClient("Acl").AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "s"}), nil)
		wantCode(t, err, 403, "AuthorizationFailure")

		now := time.Now().UTC().Truncate(time.Second)
		_, err = c.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{{
			ID: to.Ptr("readers"), AccessPolicy: &aztables.AccessPolicy{Permission: to.Ptr("r"), Start: to.Ptr(now.Add(-time.Minute)), Expiry: to.Ptr(now.Add(time.Hour))}}}})
		if err != nil {
			t.Fatal(err)
		}
		acl, err := c.GetAccessPolicy(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(acl.SignedIdentifiers) != 1 || *acl.SignedIdentifiers[0].ID != "readers" || *acl.SignedIdentifiers[0].AccessPolicy.Permission != "r" {
			t.Fatalf("ACL %+v", acl.SignedIdentifiers)
		}
	})
}
