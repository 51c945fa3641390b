package tabula

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The reference-model test applies random operations to the engine and to a plain map that
// implements the service's rules the obvious way, and demands the same result or error code
// for every operation and the same contents, in the same order, at the end.
//
// Replay a failure with: go test -run TestReferenceModel -model.seed=N -v

var (
	modelSeed  = flag.Uint64("model.seed", 0, "run the reference-model test with only this seed")
	modelSeeds = flag.Int("model.seeds", 12, "number of seeds for the reference-model test")
	modelOps   = flag.Int("model.ops", 600, "operations per seed in the reference-model test")
)

type modelEntity struct {
	props Properties
	etag  ETag
}

// modelDB is the reference: tables (nil when missing) of entities by key.
type modelDB struct {
	tables map[string]map[[2]string]modelEntity
}

// Keys near the interesting boundaries: empty, case, UTF-16 order traps, the length limit.
var modelKeys = []string{
	"", "A", "a", "aa", "a b", "~", "é", "\ud7ff", "\U0001F600", "\uff5e", "\ue000", "\U0010FFFF",
	strings.Repeat("k", MaxKeyLength), strings.Repeat("\U0001F600", MaxKeyLength/2),
}

var modelNames = []string{"A", "B", "Num", "Text", "Flag", "When", "Id", "Blob", "Big", "_x"}

func randomValue(r *rand.Rand) Property {
	switch r.IntN(10) {
	case 0:
		return String(modelKeys[r.IntN(len(modelKeys)-2)])
	case 1:
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return Binary(b)
	case 2:
		return Boolean(r.IntN(2) == 0)
	case 3:
		return DateTime(time.Date(1601+r.IntN(8000), 1, 1, 0, 0, 0, r.IntN(1e7)*100, time.UTC))
	case 4:
		return Double([]float64{0, -1.5, math.Inf(1), 1e300}[r.IntN(4)])
	case 5:
		var g Guid
		g[r.IntN(16)] = byte(r.UintN(256))
		return g
	case 6:
		return Int32(r.Int32() - math.MaxInt32/2)
	case 7:
		return Int64([]int64{math.MinInt64, 0, math.MaxInt64, r.Int64()}[r.IntN(4)])
	case 8:
		return nil // dropped, as the service drops JSON nulls
	default:
		return String(strings.Repeat("v", r.IntN(40)))
	}
}

func randomProps(r *rand.Rand) Properties {
	p := Properties{}
	for range r.IntN(5) {
		p[modelNames[r.IntN(len(modelNames))]] = randomValue(r)
	}
	return p
}

// invalidEntity returns an entity breaking exactly one rule, and the code it must get.
func invalidEntity(r *rand.Rand, pk, rk string) (Entity, string) {
	e := Entity{PartitionKey: pk, RowKey: rk, Properties: Properties{"A": Int32(1)}}
	switch r.IntN(5) {
	case 0:
		e.PartitionKey += "/"
		return e, "OutOfRangeInput"
	case 1:
		e.RowKey = strings.Repeat("r", MaxKeyLength+1)
		return e, "KeyValueTooLarge"
	case 2:
		e.Properties["1st"] = Int32(1)
		return e, "PropertyNameInvalid"
	case 3:
		e.Properties["Big"] = Binary(make([]byte, MaxBinaryLength+1))
		return e, "PropertyValueTooLarge"
	default:
		e.Properties = manyProps(MaxProperties + 1)
		return e, "TooManyProperties"
	}
}

func nonNil(p Properties) Properties {
	out := Properties{}
	for k, v := range p {
		if v != nil {
			out[k] = v
		}
	}
	return out
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	var te *Error
	if errors.As(err, &te) {
		return te.Code
	}
	return "non-service error: " + err.Error()
}

func TestReferenceModel(t *testing.T) {
	if bothStores(t, TestReferenceModel) {
		return
	}
	seeds := make([]uint64, *modelSeeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if *modelSeed != 0 {
		seeds = []uint64{*modelSeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			runModel(t, seed, *modelOps)
		})
	}
}

func runModel(t *testing.T, seed uint64, ops int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, seed))
	clock := newFakeClock()
	db := openTestDB(t, clock)
	m := &modelDB{tables: map[string]map[[2]string]modelEntity{}}
	names := []string{"Alpha", "Beta"}
	for _, n := range names {
		createTable(t, db, n)
		m.tables[n] = map[[2]string]modelEntity{}
	}
	var lastStamp time.Time
	staleETags := []ETag{`W/"datetime'2001-01-01T00%3A00%3A00Z'"`}

	for step := range ops {
		if r.IntN(3) == 0 {
			clock.Advance(time.Duration(r.IntN(3)) * time.Microsecond) // often no movement at all
		}
		name := names[r.IntN(len(names))]
		tbl := db.Table(name)
		rows := m.tables[name]
		pk, rk := modelKeys[r.IntN(4)], modelKeys[r.IntN(6)]
		if r.IntN(3) == 0 {
			rk = modelKeys[r.IntN(len(modelKeys))]
		}
		key := [2]string{pk, rk}
		cur, exists := rows[key]
		e := Entity{PartitionKey: pk, RowKey: rk, Properties: randomProps(r)}
		var cond ETag
		switch r.IntN(4) {
		case 0:
			cond = cur.etag
		case 1:
			cond = staleETags[r.IntN(len(staleETags))]
		case 2:
			cond = AnyETag
		}
		if cond == "" && exists && r.IntN(2) == 0 {
			cond = cur.etag
		}
		condOK := cond == "" || cond == AnyETag || cond == cur.etag
		mode := UpdateMode(r.IntN(2))

		var (
			op       string
			err      error
			want     string
			newETag  ETag
			newProps Properties
		)
		switch k := r.IntN(112); {
		case k >= 99 && k < 111:
			actions, bad := randomTransaction(r, pk, rows, staleETags)
			op = fmt.Sprintf("transaction of %d actions", len(actions))
			var results []ActionResult
			results, err = tbl.SubmitTransaction(ctx, actions)
			var at int
			at, want = expectTransaction(rows, actions, bad)
			var te *TransactionError
			switch {
			case want == "":
			case at < 0:
				require.False(t, errors.As(err, &te), "seed %d step %d: %v concerns no action", seed, step, err)
			case errors.As(err, &te):
				require.Equal(t, at, te.Index, "seed %d step %d: failing index of %v", seed, step, err)
			}
			if err == nil && want == "" {
				staleETags = applyTransaction(t, rows, actions, results, &lastStamp, staleETags)
			}
		case rows == nil: // the table is missing
			op, want = "insert into missing table", "TableNotFound"
			_, err = tbl.Insert(ctx, e)
		case k < 20:
			op = "insert"
			var got Entity
			got, err = tbl.Insert(ctx, e)
			if exists {
				want = "EntityAlreadyExists"
			} else {
				newETag, newProps = got.ETag, nonNil(e.Properties)
				require.Equal(t, newProps, got.Properties, "seed %d step %d: insert echo", seed, step)
			}
		case k < 40:
			op = "get"
			var sel []string
			if r.IntN(3) == 0 {
				sel = []string{modelNames[r.IntN(len(modelNames))], "Nope"}
			}
			var got Entity
			got, err = tbl.Get(ctx, pk, rk, sel...)
			if !exists {
				want = "ResourceNotFound"
			} else if err == nil {
				wantProps := maps.Clone(cur.props)
				if sel != nil {
					maps.DeleteFunc(wantProps, func(n string, _ Property) bool { return !slices.Contains(sel, n) })
				}
				require.Equal(t, wantProps, got.Properties, "seed %d step %d: get", seed, step)
				require.Equal(t, cur.etag, got.ETag, "seed %d step %d: get etag", seed, step)
			}
		case k < 60:
			op = fmt.Sprintf("update mode=%d if-match=%q", mode, cond)
			newETag, err = tbl.Update(ctx, e, mode, cond)
			switch {
			case !exists:
				want = "ResourceNotFound"
			case !condOK:
				want = "UpdateConditionNotSatisfied"
			default:
				newProps = applyMode(cur.props, e.Properties, mode)
			}
		case k < 75:
			op = fmt.Sprintf("upsert mode=%d", mode)
			newETag, err = tbl.Upsert(ctx, e, mode)
			if exists {
				newProps = applyMode(cur.props, e.Properties, mode)
			} else {
				newProps = nonNil(e.Properties)
			}
		case k < 88:
			op = fmt.Sprintf("delete if-match=%q", cond)
			err = tbl.Delete(ctx, pk, rk, cond)
			switch {
			case !exists:
				want = "ResourceNotFound"
			case !condOK:
				want = "UpdateConditionNotSatisfied"
			default:
				delete(rows, key)
			}
		case k < 99:
			bad, code := invalidEntity(r, pk, rk)
			op, want = "invalid write "+code, code
			switch r.IntN(3) {
			case 0:
				_, err = tbl.Insert(ctx, bad)
			case 1:
				_, err = tbl.Upsert(ctx, bad, mode)
			default:
				_, err = tbl.Update(ctx, bad, mode, AnyETag)
			}
		default:
			op = "delete table"
			err = db.DeleteTable(ctx, name)
			m.tables[name] = nil
		}
		require.Equal(t, want, codeOf(err), "seed %d step %d: %s on %q %q: %v", seed, step, op, pk, rk, err)
		if newProps != nil && err == nil {
			stamp := timeOfTicks(mustTicks(t, newETag))
			require.True(t, stamp.After(lastStamp), "seed %d step %d: Timestamp %v not after %v", seed, step, stamp, lastStamp)
			lastStamp = stamp
			if exists {
				staleETags = append(staleETags, cur.etag)
			}
			rows[key] = modelEntity{props: newProps, etag: newETag}
		}
		// A deleted table comes back empty a little later.
		if m.tables[name] == nil && r.IntN(3) == 0 {
			createTable(t, db, name)
			m.tables[name] = map[[2]string]modelEntity{}
		}
	}

	for _, name := range names {
		rows := m.tables[name]
		if rows == nil {
			continue
		}
		var want []Entity
		for k, v := range rows {
			want = append(want, Entity{PartitionKey: k[0], RowKey: k[1], ETag: v.etag, Properties: v.props})
		}
		slices.SortFunc(want, compareEntityKeys)
		got := dumpTable(t, db.Table(name))
		for i := range got {
			got[i].Timestamp = time.Time{}
		}
		require.Equal(t, want, got, "seed %d: final contents of %s", seed, name)
	}
}

func applyMode(old, given Properties, mode UpdateMode) Properties {
	if mode == Replace {
		return nonNil(given)
	}
	out := maps.Clone(old)
	maps.Copy(out, nonNil(given))
	return out
}

func mustTicks(t *testing.T, e ETag) int64 {
	t.Helper()
	ticks, err := e.ticks()
	require.NoError(t, err)
	return ticks
}

// randomTransaction builds a transaction on partition pk: usually a few actions of every
// kind on distinct rows, with conditions that may or may not hold, and sometimes broken in
// one of the ways the service refuses before executing anything. bad[i] is the code
// action i's entity must get when it was made invalid.
func randomTransaction(r *rand.Rand, pk string, rows map[[2]string]modelEntity, stale []ETag) ([]Action, []string) {
	n := 1 + r.IntN(6)
	switch r.IntN(40) {
	case 0:
		n = 0
	case 1:
		n = MaxTransactionActions + 1
	}
	actions := make([]Action, n)
	bad := make([]string, n)
	order := r.Perm(len(modelKeys))
	for i := range actions {
		rk := modelKeys[order[i%len(order)]]
		cur := rows[[2]string{pk, rk}]
		cond := []ETag{cur.etag, cur.etag, AnyETag, "", stale[r.IntN(len(stale))]}[r.IntN(5)]
		e := Entity{PartitionKey: pk, RowKey: rk, Properties: randomProps(r)}
		mode := UpdateMode(r.IntN(2))
		kind := r.IntN(4)
		if _, exists := rows[[2]string{pk, rk}]; r.IntN(4) != 0 {
			// Mostly what would succeed, so that transactions often commit and a failure
			// tends to come in the middle of actions that would otherwise apply.
			kind = []int{0, 2}[r.IntN(2)]
			if exists {
				kind = 1 + r.IntN(3)
				cond = []ETag{cur.etag, AnyETag, ""}[r.IntN(3)]
			}
		}
		switch kind {
		case 0:
			actions[i] = InsertAction(e)
		case 1:
			actions[i] = UpdateAction(e, mode, cond)
		case 2:
			actions[i] = UpsertAction(e, mode)
		default:
			actions[i] = DeleteAction(pk, rk, cond)
		}
	}
	if n < 2 || r.IntN(3) != 0 {
		return actions, bad
	}
	j := 1 + r.IntN(n-1)
	switch r.IntN(3) {
	case 0: // another partition
		for actions[j].Entity.PartitionKey == pk {
			actions[j].Entity.PartitionKey = modelKeys[r.IntN(4)]
		}
	case 1: // a row seen before
		actions[j].Entity.RowKey = actions[r.IntN(j)].Entity.RowKey
	default: // an invalid entity
		var e Entity
		e, bad[j] = invalidEntity(r, pk, actions[j].Entity.RowKey)
		actions[j] = []Action{InsertAction(e), UpsertAction(e, Merge), UpdateAction(e, Replace, AnyETag)}[r.IntN(3)]
	}
	return actions, bad
}

// expectTransaction applies the service's rules the obvious way: the request, then each
// action's validity, partition and row in order, then the table, then the actions in order
// on a scratch copy. It returns the failing index (-1 when the failure concerns no action)
// and code, or an empty code for success.
func expectTransaction(rows map[[2]string]modelEntity, actions []Action, bad []string) (int, string) {
	if len(actions) == 0 {
		return -1, "InvalidInput"
	}
	if len(actions) > MaxTransactionActions {
		return MaxTransactionActions - 1, "InvalidInput"
	}
	seen := map[string]bool{}
	for i, a := range actions {
		switch {
		case bad[i] != "":
			return i, bad[i]
		case a.Entity.PartitionKey != actions[0].Entity.PartitionKey:
			return i, "CommandsInBatchActOnDifferentPartitions"
		case seen[a.Entity.RowKey]:
			return i, "InvalidDuplicateRow"
		}
		seen[a.Entity.RowKey] = true
	}
	if rows == nil {
		return 0, "TableNotFound"
	}
	for i, a := range actions {
		cur, exists := rows[[2]string{a.Entity.PartitionKey, a.Entity.RowKey}]
		condOK := a.IfMatch == "" || a.IfMatch == AnyETag || a.IfMatch == cur.etag
		switch {
		case a.Kind == ActionInsert && exists:
			return i, "EntityAlreadyExists"
		case (a.Kind == ActionUpdate || a.Kind == ActionDelete) && !exists:
			return i, "ResourceNotFound"
		case (a.Kind == ActionUpdate || a.Kind == ActionDelete) && !condOK:
			return i, "UpdateConditionNotSatisfied"
		}
	}
	return 0, ""
}

// applyTransaction puts a successful transaction's effects into the model, checking that
// every write got its own Timestamp, later than any before, and returns the ETags that
// became stale.
func applyTransaction(t *testing.T, rows map[[2]string]modelEntity, actions []Action, results []ActionResult,
	lastStamp *time.Time, stale []ETag) []ETag {
	t.Helper()
	require.Len(t, results, len(actions))
	for i, a := range actions {
		key := [2]string{a.Entity.PartitionKey, a.Entity.RowKey}
		cur, exists := rows[key]
		if exists {
			stale = append(stale, cur.etag)
		}
		if a.Kind == ActionDelete {
			require.Equal(t, ActionResult{}, results[i])
			delete(rows, key)
			continue
		}
		stamp := results[i].Timestamp
		require.True(t, stamp.After(*lastStamp), "action %d: Timestamp %v not after %v", i, stamp, *lastStamp)
		require.Equal(t, etagOf(ticksOf(stamp)), results[i].ETag)
		*lastStamp = stamp
		props := nonNil(a.Entity.Properties)
		if exists && a.Kind != ActionInsert {
			props = applyMode(cur.props, a.Entity.Properties, a.Mode)
		}
		rows[key] = modelEntity{props: props, etag: results[i].ETag}
	}
	return stale
}
