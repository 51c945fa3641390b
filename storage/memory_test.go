package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In memory there is no size limit but memory: a value of 1.5 MiB of non-ASCII text (a 1 MiB
// entity as the service counts it, in UTF-16) and a transaction of a hundred values adding up
// to 4 MiB, or to 90 MiB, all commit and read back intact.
func TestMemoryHoldsLargeValuesAndTransactions(t *testing.T) {
	db := openMem(t)
	text := []byte(strings.Repeat("表", 512<<10)) // 512 Ki UTF-16 code units, 1.5 MiB of UTF-8
	require.NoError(t, db.Update(func(txn *Txn) error { return txn.Set([]byte("text"), text) }))
	for _, size := range []int{40 << 10, 900 << 10} {
		require.NoError(t, db.Update(func(txn *Txn) error {
			for i := range 100 {
				if err := txn.Set(fmt.Appendf(nil, "k%d-%03d", size, i), bytes.Repeat([]byte{byte(i)}, size)); err != nil {
					return err
				}
			}
			return nil
		}), "a transaction of 100 values of %d bytes", size)
	}
	require.NoError(t, db.View(func(txn *Txn) error {
		found, err := txn.Get([]byte("text"), func(v []byte) error {
			assert.Equal(t, text, v)
			return nil
		})
		assert.True(t, found)
		require.NoError(t, err)
		found, err = txn.Get([]byte("k921600-099"), func(v []byte) error {
			assert.Equal(t, bytes.Repeat([]byte{99}, 900<<10), v)
			return nil
		})
		assert.True(t, found)
		return err
	}))
}

// The store owns what it holds: a caller may reuse its key and value buffers once the
// transaction has ended.
func TestMemoryCopiesWhatItStores(t *testing.T) {
	db := openMem(t)
	k, v := []byte("key"), []byte("value")
	require.NoError(t, db.Update(func(txn *Txn) error { return txn.Set(k, v) }))
	copy(k, "xxx")
	copy(v, "XXXXX")
	assert.Equal(t, []string{"key"}, scanKeys(t, db, nil, nil))
	require.NoError(t, db.View(func(txn *Txn) error {
		_, err := txn.Get([]byte("key"), func(got []byte) error {
			assert.Equal(t, "value", string(got))
			return nil
		})
		return err
	}))
}

// A read-only transaction keeps the state it started with while others commit, and so does
// an iterator: it walks the data as it was when the scan began.
func TestSnapshotsAreStable(t *testing.T) { eachEngine(t, testSnapshotsAreStable) }

func testSnapshotsAreStable(t *testing.T, db *DB) {
	set := func(k, v string) {
		require.NoError(t, db.Update(func(txn *Txn) error { return txn.Set([]byte(k), []byte(v)) }))
	}
	for i := range 100 {
		set(fmt.Sprintf("k%03d", i), "old")
	}
	require.NoError(t, db.View(func(txn *Txn) error {
		it := txn.Scan(nil, nil)
		defer it.Close()
		n := 0
		for it.Next() {
			if n == 10 {
				// Commits while the scan runs: a changed value, a new key, a deleted key.
				set("k050", "new")
				set("k0505", "new")
				require.NoError(t, db.Update(func(txn *Txn) error { return txn.Delete([]byte("k060")) }))
			}
			require.NoError(t, it.Value(func(v []byte) error {
				assert.Equal(t, "old", string(v), "key %s", it.Key())
				return nil
			}))
			n++
		}
		assert.Equal(t, 100, n)
		found, err := txn.Get([]byte("k0505"), nil)
		assert.False(t, found)
		return err
	}))
	// Inside a read-write transaction, an iterator sees the writes made before it began.
	require.NoError(t, db.Update(func(txn *Txn) error {
		require.NoError(t, txn.Set([]byte("k000a"), nil))
		it := txn.Scan([]byte("k000"), []byte("k001"))
		defer it.Close()
		var keys []string
		for it.Next() {
			keys = append(keys, string(it.Key()))
			require.NoError(t, txn.Set([]byte("k000b"), nil))
		}
		assert.Equal(t, []string{"k000", "k000a"}, keys)
		return nil
	}))
	assert.Equal(t, []string{"k000", "k000a", "k000b", "k001"}, scanKeys(t, db, []byte("k000"), []byte("k002")))
}

// A closure may commit another transaction from within, as the Timestamp clock does. When
// that inner commit writes what the outer transaction read, the outer one is re-run on the
// new data; when it writes something else, the outer one commits at once.
func TestNestedCommits(t *testing.T) { eachEngine(t, testNestedCommits) }

// The inner writes use UpdateNow: on disk an Update inside an Update closure would wait for
// the group commit that runs it.
func testNestedCommits(t *testing.T, db *DB) {
	read := func(txn *Txn, k string) (v string) {
		_, err := txn.Get([]byte(k), func(b []byte) error { v = string(b); return nil })
		require.NoError(t, err)
		return v
	}
	runs := 0
	require.NoError(t, db.Update(func(txn *Txn) error {
		runs++
		v := read(txn, "read")
		if runs == 1 {
			require.NoError(t, db.UpdateNow(func(inner *Txn) error { return inner.Set([]byte("read"), []byte("inner")) }))
		}
		return txn.Set([]byte("copy"), []byte(v))
	}))
	assert.Equal(t, 2, runs, "the outer transaction read what the inner one wrote")
	require.NoError(t, db.View(func(txn *Txn) error {
		assert.Equal(t, "inner", read(txn, "copy"))
		return nil
	}))

	runs = 0
	require.NoError(t, db.Update(func(txn *Txn) error {
		runs++
		read(txn, "read")
		require.NoError(t, db.UpdateNow(func(inner *Txn) error { return inner.Set([]byte("other"), []byte("x")) }))
		return txn.Set([]byte("copy"), []byte("outer"))
	}))
	assert.Equal(t, 1, runs, "the inner transaction wrote nothing the outer one read")
}

// In memory, a scan counts as a read of its whole range: a key committed into a range a
// transaction scanned makes it run again, so a check over a range (at most N keys here)
// holds however transactions interleave.
func TestMemoryScansConflictWithInserts(t *testing.T) {
	db := openMem(t)
	require.NoError(t, db.Update(func(txn *Txn) error { return txn.Set([]byte("a1"), nil) }))
	runs := 0
	require.NoError(t, db.Update(func(txn *Txn) error {
		runs++
		it := txn.Scan([]byte("a"), []byte("b"))
		n := 0
		for it.Next() {
			n++
		}
		it.Close()
		if runs == 1 {
			require.NoError(t, db.Update(func(inner *Txn) error { return inner.Set([]byte("a2"), nil) }))
		}
		return txn.Set(fmt.Appendf(nil, "count%d", runs), []byte{byte(n)})
	}))
	assert.Equal(t, 2, runs)
	assert.Equal(t, []string{"count2"}, scanKeys(t, db, []byte("count"), []byte("countz")))

	// A scan that stopped early read only up to where it stopped (give or take the chunk it
	// read the tree in): a key inserted beyond it is no conflict.
	require.NoError(t, db.Update(func(txn *Txn) error {
		for i := range 20 {
			if err := txn.Set(fmt.Appendf(nil, "a%02d", i), nil); err != nil {
				return err
			}
		}
		return nil
	}))
	runs = 0
	require.NoError(t, db.Update(func(txn *Txn) error {
		runs++
		it := txn.Scan([]byte("a"), []byte("b"))
		require.True(t, it.Next())
		it.Close()
		if runs == 1 {
			require.NoError(t, db.Update(func(inner *Txn) error { return inner.Set([]byte("a99"), nil) }))
		}
		return txn.Set([]byte("first"), nil)
	}))
	assert.Equal(t, 1, runs)
}

// Concurrent transactions on the in-memory engine stay serializable: each one scans a
// range, and inserts into it only while it holds fewer than limit keys; each one moves money
// between two accounts read by Get. The range never overfills and the money is never lost
// or made, whatever the interleaving (run with -race).
func TestMemoryConcurrentTransactions(t *testing.T) {
	db := openMem(t)
	const accounts, workers, each, limit = 10, 8, 150, 50
	account := func(i int) []byte { return fmt.Appendf(nil, "acct%02d", i) }
	require.NoError(t, db.Update(func(txn *Txn) error {
		for i := range accounts {
			if err := txn.Set(account(i), binary.BigEndian.AppendUint64(nil, 100)); err != nil {
				return err
			}
		}
		return nil
	}))
	balance := func(txn *Txn, k []byte) (n uint64) {
		_, err := txn.Get(k, func(v []byte) error { n = binary.BigEndian.Uint64(v); return nil })
		require.NoError(t, err)
		return n
	}
	var inserted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range each {
				var err error
				if i%2 == 0 {
					ok := false
					err = db.Update(func(txn *Txn) error {
						it := txn.Scan([]byte("slot"), []byte("slou"))
						n := 0
						for it.Next() {
							n++
						}
						it.Close()
						ok = n < limit
						if !ok {
							return nil
						}
						return txn.Set(fmt.Appendf(nil, "slot%d-%d", w, i), nil)
					})
					if ok {
						inserted.Add(1)
					}
				} else {
					from, to := account(rng.IntN(accounts)), account(rng.IntN(accounts))
					err = db.Update(func(txn *Txn) error {
						a, b := balance(txn, from), balance(txn, to)
						if bytes.Equal(from, to) || a == 0 {
							return nil
						}
						if err := txn.Set(from, binary.BigEndian.AppendUint64(nil, a-1)); err != nil {
							return err
						}
						return txn.Set(to, binary.BigEndian.AppendUint64(nil, b+1))
					})
				}
				assert.NoError(t, err)
			}
		})
	}
	// sumIsKept checks, in one snapshot, that the transfers kept the accounts' total.
	sumIsKept := func(txn *Txn) error {
		total := uint64(0)
		for i := range accounts {
			total += balance(txn, account(i))
		}
		assert.Equal(t, uint64(accounts*100), total)
		return nil
	}
	// Readers see consistent totals throughout.
	for range 50 {
		require.NoError(t, db.View(sumIsKept))
	}
	wg.Wait()
	assert.Len(t, scanKeys(t, db, []byte("slot"), []byte("slou")), limit)
	assert.Equal(t, int64(limit), inserted.Load())
	require.NoError(t, db.View(sumIsKept))
}

// A closed store refuses further use rather than answering from data it let go.
func TestMemoryClosed(t *testing.T) {
	db, err := Open(Options{InMemory: true})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.Error(t, db.View(func(*Txn) error { return nil }))
	assert.Error(t, db.Update(func(*Txn) error { return nil }))
}

// The differential model test: the same random sequence of operations, applied to the
// in-memory engine and to Badger, gives the same results step by step. Each byte of the
// input picks an operation and its arguments, so `go test -fuzz FuzzMemoryMatchesBadger`
// explores sequences of its own; the seeds below run as a plain test.
func FuzzMemoryMatchesBadger(f *testing.F) {
	rng := rand.New(rand.NewPCG(16, 16))
	for range 20 {
		ops := make([]byte, 200)
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		f.Add(ops)
	}
	mem, err := Open(Options{InMemory: true})
	require.NoError(f, err)
	disk, err := Open(Options{Dir: f.TempDir()})
	require.NoError(f, err)
	f.Cleanup(func() {
		assert.NoError(f, mem.Close())
		assert.NoError(f, disk.Close())
	})
	// Every input works under a prefix of its own, so the stores are shared between inputs
	// (opening Badger per input would dominate the run).
	var round atomic.Uint64
	f.Fuzz(func(t *testing.T, ops []byte) {
		prefix := binary.BigEndian.AppendUint64(nil, round.Add(1))
		want := applyOps(t, disk, prefix, ops)
		got := applyOps(t, mem, prefix, ops)
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, want[i], got[i], "step %d", i)
		}
	})
}

var errAbort = errors.New("abort")

// applyOps interprets ops as a sequence of transactions on db and returns what each step
// observed. Keys are prefix plus one of 16 short strings, so that operations collide.
func applyOps(t *testing.T, db *DB, prefix, ops []byte) []string {
	key := func(b byte) []byte { return append(bytes.Clone(prefix), "k"+string(rune('a'+b%16))...) }
	var out []string
	for i := 0; i < len(ops); {
		// A transaction of up to 8 operations; a top bit set on its first byte aborts it.
		n := int(ops[i]%8) + 1
		abort := ops[i]&0x80 != 0
		body := ops[i+1 : min(i+1+n, len(ops))]
		i += 1 + n
		var log []string
		err := db.Update(func(txn *Txn) error {
			log = log[:0]
			for j, op := range body {
				switch op >> 5 {
				case 0, 1: // set
					if err := txn.Set(key(op), fmt.Appendf(nil, "v%d-%d", i, j)); err != nil {
						return err
					}
				case 2: // delete
					if err := txn.Delete(key(op)); err != nil {
						return err
					}
				case 3, 4: // get
					var v string
					found, err := txn.Get(key(op), func(b []byte) error { v = string(b); return nil })
					if err != nil {
						return err
					}
					log = append(log, fmt.Sprintf("get %q %v %s", key(op), found, v))
				default: // scan from a key, to another or to the prefix's end
					lower, upper := key(op), key(op>>1+3)
					if op&1 == 1 {
						upper = SuccessorOf(append(bytes.Clone(prefix), 0xff))
					}
					log = append(log, fmt.Sprintf("scan %q %q: %s", lower, upper, scanAll(t, txn, lower, upper)))
				}
			}
			if abort {
				return errAbort
			}
			return nil
		})
		if abort {
			require.ErrorIs(t, err, errAbort)
		} else {
			require.NoError(t, err)
		}
		out = append(out, log...)
		// After every transaction, a read-only view of the whole prefix.
		require.NoError(t, db.View(func(txn *Txn) error {
			out = append(out, "view: "+scanAll(t, txn, prefix, SuccessorOf(append(bytes.Clone(prefix), 0xff))))
			return nil
		}))
	}
	// Every step may also be a range deletion of part of the keys.
	if len(ops) > 0 {
		lower := key(ops[0])
		require.NoError(t, db.DeleteRange(t.Context(), lower, key(ops[0]+5)))
		require.NoError(t, db.View(func(txn *Txn) error {
			out = append(out, "after DeleteRange: "+scanAll(t, txn, prefix, SuccessorOf(append(bytes.Clone(prefix), 0xff))))
			return nil
		}))
	}
	return out
}

func scanAll(t *testing.T, txn *Txn, lower, upper []byte) string {
	var b strings.Builder
	it := txn.Scan(lower, upper)
	defer it.Close()
	for it.Next() {
		require.NoError(t, it.Value(func(v []byte) error {
			fmt.Fprintf(&b, "%q=%q ", it.Key(), v)
			return nil
		}))
	}
	return b.String()
}
