package remote_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

var (
	diffSeed  = flag.Uint64("remote.seed", 0, "replay TestDifferential with this seed (0: the fixed seeds, or fresh ones with -remote.fresh)")
	diffRuns  = flag.Int("remote.runs", 4, "sequences TestDifferential runs when no seed is given")
	diffFresh = flag.Bool("remote.fresh", false, "TestDifferential draws fresh seeds instead of the fixed ones, to search for new differences")
	diffOps   = flag.Int("remote.ops", 300, "operations per TestDifferential sequence")
)

// TestDifferential applies the same random operations to an embedded DB and, through the
// remote backend, to a `tabula serve` with a DB of its own, and requires identical results
// at every step (entities, ETags, Timestamps, transaction results, pages and continuation
// tokens, error codes, messages and failing indexes) and identical contents at the end.
// Both DBs run on the same constant clock, so Timestamps, and the ETags made from them,
// depend only on the sequence of writes. By default the seeds are fixed (1, 2, ...), so a
// run of the suite passes or fails the same way every time; -remote.fresh searches with new
// ones. A failure prints the seed; replay it with -remote.seed.
func TestDifferential(t *testing.T) {
	seeds := []uint64{*diffSeed}
	if *diffSeed == 0 {
		seeds = seeds[:0]
		for i := range *diffRuns {
			seed := uint64(i + 1)
			if *diffFresh {
				seed = rand.Uint64()
			}
			seeds = append(seeds, seed)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d, %d operations", seed, *diffOps)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("replay with: go test ./remote -run TestDifferential -remote.seed=%d", seed)
				}
			})
			differential(t, seed, *diffOps)
		})
	}
}

func differential(t *testing.T, seed uint64, ops int) {
	ctx := context.Background()
	epoch := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := &tabula.Options{Clock: func() time.Time { return epoch }}

	db, err := tabula.OpenInMemory(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv := tabulatest.NewInProcess(t, opts)
	client, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: azcore.ClientOptions{
		Transport: srv.Transport(), Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)

	backends := []tabula.ServiceAPI{tabula.Embedded(db), client}
	var tables [2]tabula.TableAPI
	for i, b := range backends {
		tables[i], err = b.CreateTable(ctx, "Diff")
		require.NoError(t, err)
	}

	g := &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), etags: map[string]tabula.ETag{}}
	for step := range ops {
		op := g.next()
		var outs [2]outcome
		for i, tbl := range tables {
			outs[i] = op.run(ctx, tbl)
		}
		require.Equal(t, outs[0], outs[1], "step %d: %s", step, op.what)
		g.learn(op, outs[0])
	}
	var contents [2][]tabula.Entity
	for i, tbl := range tables {
		for e, err := range tbl.QueryAll(ctx, tabula.Query{}) {
			require.NoError(t, err)
			contents[i] = append(contents[i], e)
		}
	}
	require.Equal(t, contents[0], contents[1], "final contents")
}

// outcome is everything an operation returned that a caller can see.
type outcome struct {
	Entity  tabula.Entity
	ETag    tabula.ETag
	Results []tabula.ActionResult
	Pages   []tabula.Page
	Err     string
}

func errorOutcome(err error) string {
	if err == nil {
		return ""
	}
	var txe *tabula.TransactionError
	if errors.As(err, &txe) {
		return fmt.Sprintf("action %d: %d %s %q", txe.Index, txe.Err.StatusCode, txe.Err.Code, txe.Err.Message)
	}
	var te *tabula.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("%d %s %q", te.StatusCode, te.Code, te.Message)
	}
	return "not a *tabula.Error: " + err.Error()
}

type operation struct {
	what string
	run  func(ctx context.Context, tbl tabula.TableAPI) outcome
	// wrote lists the entities a successful write changed, with the index of their result
	// (-1 for a single write), so later operations can name their current ETag.
	wrote map[string]int
}

type generator struct {
	r     *rand.Rand
	etags map[string]tabula.ETag // the latest ETag seen per entity, "pk/rk"
	stale []tabula.ETag          // ETags of versions since replaced
}

var (
	partitions = []string{"a", "b", "c"}
	propNames  = []string{"S", "N", "D", "B", "T", "G", "L", "X"}
)

func (g *generator) key() (string, string) {
	return partitions[g.r.IntN(len(partitions))], fmt.Sprint(g.r.IntN(6))
}

func (g *generator) value() tabula.Property {
	switch g.r.IntN(9) {
	case 0:
		return tabula.String(fmt.Sprint("s", g.r.IntN(5)))
	case 1:
		return tabula.Int32(g.r.Int32N(10) - 5)
	case 2:
		return tabula.Double(float64(g.r.IntN(7)) / 2)
	case 3:
		return tabula.Boolean(g.r.IntN(2) == 0)
	case 4:
		return tabula.DateTime(time.Date(2000+g.r.IntN(3), 1, 1, 0, 0, 0, g.r.IntN(10)*100, time.UTC))
	case 5:
		var id tabula.Guid
		id[0] = byte(g.r.IntN(3))
		return id
	case 6:
		return tabula.Int64(g.r.Int64N(10) - 5 + math.MaxInt32)
	case 7:
		return tabula.Binary{byte(g.r.IntN(4))}
	}
	return nil // dropped on write
}

func (g *generator) entity(pk, rk string) tabula.Entity {
	props := tabula.Properties{}
	for range g.r.IntN(4) {
		props[propNames[g.r.IntN(len(propNames))]] = g.value()
	}
	if g.r.IntN(40) == 0 {
		props["1bad"] = tabula.Int32(1) // a broken rule now and then
	}
	return tabula.Entity{PartitionKey: pk, RowKey: rk, Properties: props}
}

// condition is an If-Match: any version, the current one, or a stale one.
func (g *generator) condition(pk, rk string) tabula.ETag {
	switch g.r.IntN(4) {
	case 0:
		return ""
	case 1:
		return tabula.AnyETag
	case 2:
		if len(g.stale) > 0 {
			return g.stale[g.r.IntN(len(g.stale))]
		}
	}
	if etag, ok := g.etags[pk+"/"+rk]; ok {
		return etag
	}
	return tabula.AnyETag
}

func (g *generator) mode() tabula.UpdateMode { return tabula.UpdateMode(g.r.IntN(2)) }

func (g *generator) next() operation {
	pk, rk := g.key()
	id := pk + "/" + rk
	single := map[string]int{id: -1}
	switch n := g.r.IntN(20); {
	case n < 4:
		e := g.entity(pk, rk)
		return operation{what: fmt.Sprintf("Insert %v", e), wrote: single, run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
			got, err := tbl.Insert(ctx, e)
			return outcome{Entity: got, ETag: got.ETag, Err: errorOutcome(err)}
		}}
	case n < 7:
		var sel []string
		if g.r.IntN(3) == 0 {
			sel = []string{propNames[g.r.IntN(len(propNames))], propNames[g.r.IntN(len(propNames))]}
		}
		return operation{what: fmt.Sprintf("Get %s %v", id, sel), run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
			got, err := tbl.Get(ctx, pk, rk, sel...)
			return outcome{Entity: got, Err: errorOutcome(err)}
		}}
	case n < 10:
		e, mode, cond := g.entity(pk, rk), g.mode(), g.condition(pk, rk)
		return operation{what: fmt.Sprintf("Update %v %v %s", e, mode, cond), wrote: single, run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
			etag, err := tbl.Update(ctx, e, mode, cond)
			return outcome{ETag: etag, Err: errorOutcome(err)}
		}}
	case n < 12:
		e, mode := g.entity(pk, rk), g.mode()
		return operation{what: fmt.Sprintf("Upsert %v %v", e, mode), wrote: single, run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
			etag, err := tbl.Upsert(ctx, e, mode)
			return outcome{ETag: etag, Err: errorOutcome(err)}
		}}
	case n < 14:
		cond := g.condition(pk, rk)
		return operation{what: fmt.Sprintf("Delete %s %s", id, cond), run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
			return outcome{Err: errorOutcome(tbl.Delete(ctx, pk, rk, cond))}
		}}
	case n < 17:
		return g.transaction(pk)
	default:
		return g.query()
	}
}

func (g *generator) transaction(pk string) operation {
	actions := make([]tabula.Action, 1+g.r.IntN(6))
	wrote := map[string]int{}
	for i := range actions {
		p, rk := pk, fmt.Sprint(g.r.IntN(6))
		if g.r.IntN(25) == 0 {
			p = partitions[g.r.IntN(len(partitions))] // sometimes another partition
		}
		switch g.r.IntN(4) {
		case 0:
			actions[i] = tabula.InsertAction(g.entity(p, rk))
		case 1:
			actions[i] = tabula.UpdateAction(g.entity(p, rk), g.mode(), g.condition(p, rk))
		case 2:
			actions[i] = tabula.UpsertAction(g.entity(p, rk), g.mode())
		default:
			actions[i] = tabula.DeleteAction(p, rk, g.condition(p, rk))
		}
		if actions[i].Kind != tabula.ActionDelete {
			wrote[p+"/"+rk] = i
		}
	}
	return operation{what: fmt.Sprintf("SubmitTransaction %v", actions), wrote: wrote, run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
		results, err := tbl.SubmitTransaction(ctx, actions)
		return outcome{Results: results, Err: errorOutcome(err)}
	}}
}

var filters = []string{
	"",
	"PartitionKey eq 'b'",
	"PartitionKey eq 'a' and RowKey ge '2'",
	"PartitionKey ge 'b'",
	"N gt 0",
	"S eq 's1' or PartitionKey eq 'c'",
	"B eq true",
	"D le 1.5",
	"L gt 2147483650L",
	"PartitionKey eq 'a' and RowKey eq '3'",
	"T lt datetime'2001-01-01T00:00:00Z'",
}

func (g *generator) query() operation {
	q := tabula.Query{Filter: filters[g.r.IntN(len(filters))]}
	if g.r.IntN(2) == 0 {
		q.Top = 1 + g.r.IntN(4)
	}
	if g.r.IntN(4) == 0 {
		q.Select = []string{propNames[g.r.IntN(len(propNames))]}
	}
	return operation{what: fmt.Sprintf("Query %+v", q), run: func(ctx context.Context, tbl tabula.TableAPI) outcome {
		q := q // each backend pages from the start
		var out outcome
		for {
			page, err := tbl.Query(ctx, q)
			if err != nil {
				out.Err = errorOutcome(err)
				return out
			}
			page.Plan = tabula.Plan{} // only the embedded engine knows it
			out.Pages = append(out.Pages, page)
			if page.Continuation.IsZero() {
				return out
			}
			q.Continuation = page.Continuation
		}
	}}
}

// learn records the ETags a successful write produced, and those it made stale.
func (g *generator) learn(op operation, out outcome) {
	if out.Err != "" {
		return
	}
	for id, i := range op.wrote {
		etag := out.ETag
		if i >= 0 {
			etag = out.Results[i].ETag
		}
		if old, ok := g.etags[id]; ok {
			g.stale = append(g.stale, old)
		}
		g.etags[id] = etag
	}
}
