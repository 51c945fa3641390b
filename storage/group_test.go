package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/badgertuning"
)

func openGrouped(t *testing.T, sync bool) *DB {
	t.Helper()
	db, err := Open(Options{Dir: t.TempDir(), SyncWrites: sync})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func readUint(t *testing.T, txn *Txn, key string) uint64 {
	var n uint64
	_, err := txn.Get([]byte(key), func(v []byte) error { n = binary.BigEndian.Uint64(v); return nil })
	require.NoError(t, err)
	return n
}

// Concurrent writers sharing group commits: increments that conflict inside a group are never
// lost, closures that fail before or after writing leave nothing behind and affect no one
// else, a panic reaches only its own writer, and writes large enough to split groups (Badger's
// transaction limit) all land.
func TestGroupCommitRace(t *testing.T) {
	for _, syncWrites := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", syncWrites), func(t *testing.T) {
			db := openGrouped(t, syncWrites)
			const workers, each = 16, 30
			// Under the value threshold, so each counts in full towards Badger's limit.
			big := bytes.Repeat([]byte("b"), int(badgertuning.Options("", 0).ValueThreshold)-1024)
			errBoom := errors.New("boom")
			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				succeeded int
				bigKeys   []string
			)
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					for i := range each {
						var err error
						switch op := rng.IntN(5); op {
						case 0, 1: // increment
							err = db.Update(func(txn *Txn) error {
								return txn.Set([]byte("counter"), binary.BigEndian.AppendUint64(nil, readUint(t, txn, "counter")+1))
							})
							if assert.NoError(t, err) {
								mu.Lock()
								succeeded++
								mu.Unlock()
							}
						case 2: // increment, then fail: nothing of it stays
							err = db.Update(func(txn *Txn) error {
								if err := txn.Set([]byte("counter"), binary.BigEndian.AppendUint64(nil, readUint(t, txn, "counter")+1000)); err != nil {
									return err
								}
								if err := txn.Set(fmt.Appendf(nil, "poison/%d/%d", w, i), nil); err != nil {
									return err
								}
								return errBoom
							})
							assert.ErrorIs(t, err, errBoom)
						case 3: // fail before writing
							err = db.Update(func(txn *Txn) error {
								readUint(t, txn, "counter")
								return errBoom
							})
							assert.ErrorIs(t, err, errBoom)
						case 4: // large: 40 just under the threshold, so a few fill Badger's transaction
							err = db.Update(func(txn *Txn) error {
								for j := range 40 {
									if err := txn.Set(fmt.Appendf(nil, "big/%d/%d/%02d", w, i, j), big); err != nil {
										return err
									}
								}
								return nil
							})
							if assert.NoError(t, err) {
								mu.Lock()
								bigKeys = append(bigKeys, fmt.Sprintf("big/%d/%d/39", w, i))
								mu.Unlock()
							}
						}
					}
				})
			}
			// A panicking closure panics in its own goroutine only.
			wg.Go(func() {
				assert.PanicsWithValue(t, "closure panic", func() {
					_ = db.Update(func(txn *Txn) error {
						_ = txn.Set([]byte("poison/panic"), nil)
						panic("closure panic")
					})
				})
			})
			wg.Wait()
			require.NoError(t, db.View(func(txn *Txn) error {
				assert.Equal(t, uint64(succeeded), readUint(t, txn, "counter"))
				for _, k := range bigKeys {
					found, err := txn.Get([]byte(k), nil)
					require.NoError(t, err)
					assert.True(t, found, k)
				}
				return nil
			}))
			assert.Empty(t, scanKeys(t, db, []byte("poison"), []byte("poison0")))
		})
	}
}

// A model test of the grouped path: random Sets, Deletes, conditional inserts (failing
// without writing when the key exists) and writes that fail after writing, from concurrent
// writers. Each successful closure appends its number to a log in the same transaction, so
// the log is the commit order; replaying the log on a map, in that order, must give exactly
// the stored data, and each conditional insert's outcome must be the one the model gives at
// its place in the log.
func TestGroupCommitModel(t *testing.T) {
	db := openGrouped(t, false)
	type op struct {
		kind int // 0 set, 1 delete, 2 insert if absent, 3 set then fail
		key  string
		val  string
	}
	const workers, each = 8, 150
	ops := make([][]op, workers)
	results := make([][]error, workers)
	for w := range workers {
		rng := rand.New(rand.NewPCG(uint64(w), 2))
		for i := range each {
			ops[w] = append(ops[w], op{kind: rng.IntN(4), key: fmt.Sprintf("k%02d", rng.IntN(20)), val: fmt.Sprintf("%d.%d", w, i)})
		}
		results[w] = make([]error, each)
	}
	errExists, errBoom := errors.New("exists"), errors.New("boom")
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i, o := range ops[w] {
				results[w][i] = db.Update(func(txn *Txn) error {
					var log []byte
					if _, err := txn.Get([]byte("log"), func(v []byte) error { log = bytes.Clone(v); return nil }); err != nil {
						return err
					}
					switch o.kind {
					case 0, 3:
						if err := txn.Set([]byte(o.key), []byte(o.val)); err != nil {
							return err
						}
						if o.kind == 3 {
							return errBoom
						}
					case 1:
						if err := txn.Delete([]byte(o.key)); err != nil {
							return err
						}
					case 2:
						found, err := txn.Get([]byte(o.key), nil)
						if err != nil {
							return err
						}
						if found {
							// Record the failure's place: it must match the model there.
							return fmt.Errorf("%w at %d", errExists, len(log)/4)
						}
						if err := txn.Set([]byte(o.key), []byte(o.val)); err != nil {
							return err
						}
					}
					log = binary.BigEndian.AppendUint16(log, uint16(w))
					log = binary.BigEndian.AppendUint16(log, uint16(i))
					return txn.Set([]byte("log"), log)
				})
			}
		})
	}
	wg.Wait()

	var log []byte
	require.NoError(t, db.View(func(txn *Txn) error {
		_, err := txn.Get([]byte("log"), func(v []byte) error { log = bytes.Clone(v); return nil })
		return err
	}))
	model := map[string]string{}
	committed := map[[2]int]bool{}
	// snapshots[n] is the model after n logged commits, for checking failed inserts.
	snapshots := []map[string]string{maps.Clone(model)}
	for p := 0; p < len(log); p += 4 {
		w, i := int(binary.BigEndian.Uint16(log[p:])), int(binary.BigEndian.Uint16(log[p+2:]))
		o := ops[w][i]
		committed[[2]int{w, i}] = true
		switch o.kind {
		case 0, 2:
			model[o.key] = o.val
		case 1:
			delete(model, o.key)
		}
		snapshots = append(snapshots, maps.Clone(model))
	}
	for w := range workers {
		for i, o := range ops[w] {
			err := results[w][i]
			switch {
			case o.kind == 3:
				assert.ErrorIs(t, err, errBoom)
				assert.False(t, committed[[2]int{w, i}])
			case errors.Is(err, errExists):
				var at int
				_, serr := fmt.Sscanf(err.Error(), "exists at %d", &at)
				require.NoError(t, serr)
				_, had := snapshots[at][o.key]
				assert.True(t, had, "insert %d.%d failed where the model had no %s", w, i, o.key)
			default:
				assert.NoError(t, err)
				assert.True(t, committed[[2]int{w, i}], "op %d.%d succeeded but is not in the log", w, i)
			}
		}
	}
	got := map[string]string{}
	require.NoError(t, db.View(func(txn *Txn) error {
		it := txn.Scan([]byte("k"), []byte("l"))
		defer it.Close()
		for it.Next() {
			k := string(it.Key())
			require.NoError(t, it.Value(func(v []byte) error { got[k] = string(v); return nil }))
		}
		return nil
	}))
	assert.Equal(t, model, got)
}

// What a writer was told is committed is seen by whatever it does next: by a closure that
// only reads, one that fails on what it read, and one that scans, while other writers keep
// groups committing back to back. (A version that ran each group's closures while Badger
// wrote the group before, in a transaction that did not see it, failed this until it
// re-ran such closures; it was no faster, and is not kept.)
func TestGroupSeesAcknowledgedWrites(t *testing.T) {
	for _, syncWrites := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", syncWrites), func(t *testing.T) {
			db := openGrouped(t, syncWrites)
			errMissing := errors.New("missing")
			const workers, each = 8, 60
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						key := fmt.Appendf(nil, "k/%d/%03d", w, i)
						if !assert.NoError(t, db.Update(func(txn *Txn) error { return txn.Set(key, []byte{1}) })) {
							return
						}
						var found bool
						switch i % 3 {
						case 0: // reads, writes nothing
							assert.NoError(t, db.Update(func(txn *Txn) (err error) {
								found, err = txn.Get(key, nil)
								return err
							}))
						case 1: // fails without writing when the key is not there
							err := db.Update(func(txn *Txn) error {
								ok, err := txn.Get(key, nil)
								if err != nil || !ok {
									return errors.Join(err, errMissing)
								}
								return txn.Set(append(key, '+'), nil)
							})
							found = assert.NoError(t, err)
						case 2: // scans, then writes what it saw
							assert.NoError(t, db.Update(func(txn *Txn) error {
								it := txn.Scan(fmt.Appendf(nil, "k/%d/", w), fmt.Appendf(nil, "k/%d0", w))
								n := 0
								for it.Next() {
									if bytes.Equal(it.Key(), key) {
										found = true
									}
									n++
								}
								it.Close()
								return txn.Set(fmt.Appendf(nil, "seen/%d", w), binary.BigEndian.AppendUint64(nil, uint64(n)))
							}))
						}
						assert.True(t, found, "writer %d lost sight of its write %d", w, i)
					}
				})
			}
			wg.Wait()
		})
	}
}
