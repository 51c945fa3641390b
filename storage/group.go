package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Group commit. On disk, every DB.Update joins a queue; whichever writer finds no commit
// under way becomes the leader, takes the queue (at most maxGroup writes), runs their
// closures one after the other in one Badger transaction and commits it once: one commit,
// and under SyncWrites one fsync, for the whole group. While it commits, later writers
// queue up and form the next group, so groups grow with the load and a lone writer pays
// almost nothing (it leads a group of one).
//
// Each closure sees the writes of those before it in the group, exactly as if they had
// committed one after the other, and the groups commit one after the other too, so the
// closures' order is the commit order (the root package's Timestamp clock relies on it).
// A closure that fails without writing is simply left out. One that fails after writing
// (a transaction whose fifth action fails, a client gone mid-write) cannot be taken out of
// a Badger transaction: the leader discards the transaction, runs the closures before it
// again in a fresh one, commits them, and returns the failure; the closures after it form
// the next group. The same happens when a closure's write would make the transaction
// larger than Badger takes (ErrTooLarge): the closures before it commit, and it leads the
// next group, alone if need be, where only a write too large on its own gets ErrTooLarge.

// maxGroup bounds how many writes share one commit: enough to amortize a commit and an
// fsync many times over, few enough that a group's closures never keep the first writer
// waiting long.
const maxGroup = 128

// groupReq is one write waiting in or running through a group.
type groupReq struct {
	fn     func(*Txn) error
	err    error
	panicV any // what fn panicked with, re-raised in the writer's goroutine
	// wake tells a waiting writer that its write is done (false) or that it leads the
	// next group (true).
	wake chan bool
	// txn is what fn is given: kept here, in the pooled request, so that a write allocates
	// no Txn of its own.
	txn Txn
}

var reqPool = sync.Pool{New: func() any { return &groupReq{wake: make(chan bool, 1)} }}

// committer is the queue of writes waiting for a group.
type committer struct {
	mu    sync.Mutex
	queue []*groupReq
	// spare is the array of the group before last, which the queue reuses: the leader takes
	// the queue's array for its group, and the queue swaps to this one, so that after the
	// first groups a write appends to an array that is already there.
	spare   []*groupReq
	leading bool // a leader is running a group
	last    int  // how many writes the last group held
	want    int  // how many writes the next group waits for (see gather)
}

// gatherRounds bounds how often a leader yields to let writers queue (see gather).
const gatherRounds = 8

// gather runs when a writer is handed the lead, so other writers are about: it yields, to let
// those just woken by the last group queue their next writes, until want are queued or
// gatherRounds have passed. A round costs a pass of the scheduler; a group that could have
// been one fewer costs a commit (under SyncWrites, an fsync of hundreds of microseconds).
// Without SyncWrites, want is as many as the last group held.
//
// Under SyncWrites, want is as many as were waiting when the last group ended plus the last
// group's own writers, and the first writer back after a group of several, finding no
// leader, gathers too: otherwise it leads a group of one or two and the others the next,
// groups alternate large and small, and every small one costs an fsync
// (BenchmarkConcurrentInsert/sync=true measures it). Without SyncWrites a commit is cheap,
// and the longer wait would cost more than it saves.
func (d *badgerDB) gather() {
	c := &d.group
	c.mu.Lock()
	want := c.want
	c.mu.Unlock()
	for range gatherRounds {
		runtime.Gosched()
		c.mu.Lock()
		enough := len(c.queue) >= want
		c.mu.Unlock()
		if enough {
			return
		}
	}
}

// errPanicked marks a closure that panicked; its writer re-panics with panicV.
var errPanicked = errors.New("storage: update closure panicked")

// updateGrouped runs fn in the next group commit and returns its outcome.
func (d *badgerDB) updateGrouped(fn func(*Txn) error) error {
	r := reqPool.Get().(*groupReq)
	r.fn, r.err, r.panicV = fn, nil, nil
	c := &d.group
	c.mu.Lock()
	c.queue = append(c.queue, r)
	lead := !c.leading
	c.leading = true
	// After a group of several writers, the first of them back waits for the others.
	wait := lead && d.sync && c.want > 1
	c.mu.Unlock()
	if lead {
		if wait {
			d.gather()
		}
		d.lead(r)
	} else if <-r.wake {
		d.gather()
		d.lead(r)
	}
	err, p := r.err, r.panicV
	r.fn, r.err, r.panicV, r.txn = nil, nil, nil, Txn{}
	reqPool.Put(r)
	if p != nil {
		panic(p)
	}
	return err
}

// lead runs one group, which holds own (own is first in the queue: a writer leads only when
// the queue was empty or when the previous leader hands over to it), wakes its writers,
// and hands the lead to the first writer still waiting.
func (d *badgerDB) lead(own *groupReq) {
	c := &d.group
	c.mu.Lock()
	n := min(len(c.queue), maxGroup)
	taken := c.queue
	batch := taken[:n:n]
	c.queue = append(c.spare[:0], taken[n:]...)
	c.spare = nil
	c.last = n
	c.mu.Unlock()

	d.mu.RLock() // bdb stays the same store for the whole group (see reopenWritable)
	for done := 0; done < len(batch); {
		done += d.commitPrefix(batch[done:])
	}
	d.mu.RUnlock()
	c.mu.Lock()
	c.want = n
	if d.sync {
		// This group's writers are likely to write again: the next group waits for them too.
		c.want = min(len(c.queue)+n, maxGroup)
	}
	c.mu.Unlock()
	for _, r := range batch {
		if r != own {
			r.wake <- false
		}
	}
	clear(taken) // the requests go back to their pool

	c.mu.Lock()
	c.spare = taken[:0]
	if len(c.queue) == 0 {
		c.leading = false
		c.mu.Unlock()
		return
	}
	next := c.queue[0]
	c.mu.Unlock()
	next.wake <- true
}

// commitPrefix commits a prefix of batch in one transaction, settling the outcome of its
// writes and perhaps of the write after it (one that failed after writing), and returns
// how many writes it settled, at least one.
func (d *badgerDB) commitPrefix(batch []*groupReq) int {
	limit := len(batch) // run batch[:limit]
	settled := limit    // writes settled when batch[:limit] commits
	if d.bdb.IsClosed() {
		for _, r := range batch {
			r.err = badger.ErrDBClosed
		}
		return len(batch)
	}
	for conflicts := 0; ; {
		txn := d.bdb.NewTransaction(true)
		cut := -1
		for i, r := range batch[:limit] {
			r.txn = Txn{t: txn, db: d}
			t := &r.txn
			r.err = runClosure(r, t)
			if t.tooBig && i > 0 {
				// The group is full: commit what came before; r leads the next group.
				cut, settled = i, i
				break
			}
			if r.err != nil && (t.writes > 0 || r.panicV != nil) {
				// r's writes cannot be taken out of txn: commit what came before without
				// them; r's failure stands, as it was met on their writes.
				cut, settled = i, i+1
				break
			}
		}
		if cut >= 0 {
			txn.Discard()
			if cut == 0 {
				return settled
			}
			limit = cut
			continue
		}
		valueLog := false
		for _, r := range batch[:limit] {
			valueLog = valueLog || r.txn.valueLog
		}
		err := d.commit(txn, valueLog)
		if errors.Is(err, badger.ErrConflict) {
			// Groups commit one after the other, so nothing should conflict with one; if
			// something did, every closure runs again on the data that won.
			if conflicts++; conflicts == maxConflictRetries {
				err = ErrContention
			} else {
				limit, settled = len(batch), len(batch)
				runtime.Gosched()
				continue
			}
		}
		if err != nil {
			if errors.Is(err, badger.ErrTxnTooBig) {
				err = ErrTooLarge
			} else if !errors.Is(err, ErrContention) {
				err = fmt.Errorf("storage: commit: %w", err)
			}
			for _, r := range batch[:limit] {
				if r.err == nil {
					r.err = err
				}
			}
		}
		return settled
	}
}

// runClosure runs r's closure on t, catching a panic so that the leader carries on and the
// writer re-raises it.
func runClosure(r *groupReq, t *Txn) (err error) {
	r.panicV = nil
	defer func() {
		if p := recover(); p != nil {
			r.panicV = p
			err = errPanicked
		}
	}()
	return r.fn(t)
}
