package tabula

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With Options.TableDeleteDelay, a deleted table's name answers 409 TableBeingDeleted to a
// create and to every operation, on the injected clock, until the delay has passed; then
// the name is free and a table made under it starts empty. Other namespaces are untouched.
func TestTableBeingDeleted(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db := openStore(t, &Options{Clock: clock.Now, TableDeleteDelay: ServiceTableDeleteDelay})
	tbl := createTable(t, db, "Orders")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	other, err := db.Namespace("acct").CreateTable(ctx, "Orders")
	require.NoError(t, err)
	require.NoError(t, db.DeleteTable(ctx, "Orders"))

	clock.Advance(ServiceTableDeleteDelay - time.Millisecond)
	_, err = db.CreateTable(ctx, "ORDERS")
	require.ErrorIs(t, err, ErrTableBeingDeleted, "a create, in any letter case")
	assert.Equal(t, 409, err.(*Error).StatusCode)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "s"})
	assert.ErrorIs(t, err, ErrTableBeingDeleted, "a write")
	_, err = db.Table("orders").Get(ctx, "p", "r")
	assert.ErrorIs(t, err, ErrTableBeingDeleted, "a read")
	_, err = tbl.Query(ctx, Query{})
	assert.ErrorIs(t, err, ErrTableBeingDeleted, "a query")
	assert.ErrorIs(t, db.DeleteTable(ctx, "Orders"), ErrTableBeingDeleted, "a second delete")
	_, err = other.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	assert.NoError(t, err, "the other namespace's table of the same name")

	clock.Advance(time.Millisecond)
	_, err = tbl.Get(ctx, "p", "r")
	assert.ErrorIs(t, err, ErrTableNotFound, "the deletion has ended")
	again, err := db.CreateTable(ctx, "Orders")
	require.NoError(t, err)
	_, err = again.Get(ctx, "p", "r")
	assert.ErrorIs(t, err, ErrResourceNotFound, "the new table starts empty")
}

// Off by default, as on the emulators; SetTableDeleteDelay switches it while the DB runs.
func TestTableDeleteDelayIsOptIn(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db := openTestDB(t, clock)
	createTable(t, db, "Orders")
	require.NoError(t, db.DeleteTable(ctx, "Orders"))
	createTable(t, db, "Orders") // at once

	db.SetTableDeleteDelay(time.Minute)
	assert.Equal(t, time.Minute, db.TableDeleteDelay())
	require.NoError(t, db.DeleteTable(ctx, "Orders"))
	_, err := db.CreateTable(ctx, "Orders")
	require.ErrorIs(t, err, ErrTableBeingDeleted)
	db.SetTableDeleteDelay(0)
	_, err = db.CreateTable(ctx, "Orders")
	require.NoError(t, err, "switching it off ends the deletions under way")
}

// The deletions tracked stay bounded: once sweepAbove of them are held, the next delete drops
// those that have ended.
func TestBeingDeletedSweepsEndedDeletions(t *testing.T) {
	b := beingDeleted{delay: time.Second}
	t0 := time.Unix(0, 0)
	for i := range sweepAbove {
		b.deleted("", "T"+time.Duration(i).String(), t0)
	}
	require.Len(t, b.since, sweepAbove)
	b.deleted("", "Late", t0.Add(time.Second))
	assert.Len(t, b.since, 1, "only the deletion still running")
}
