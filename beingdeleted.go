package tabula

import (
	"sync"
	"time"
)

// ServiceTableDeleteDelay is how long the service keeps a deleted table's name in the
// TableBeingDeleted state: "at least 40 seconds" (REST docs: "Delete Table"). Give it as
// Options.TableDeleteDelay to exercise the retry code that state needs.
const ServiceTableDeleteDelay = 40 * time.Second

// beingDeleted tracks the tables deleted less than Options.TableDeleteDelay ago, in which
// the service answers 409 TableBeingDeleted to a create of the same name and to every
// operation on it. It lives in memory: a restart ends every deletion, as if it finished.
type beingDeleted struct {
	mu    sync.Mutex
	delay time.Duration
	since map[string]time.Time // openKey(ns, name) → when it was deleted
}

// sweepAbove is how many tracked deletions make the next delete sweep out the ended ones,
// so the map holds only deletions still running (and a bounded number more).
const sweepAbove = 1024

// deleted records that the table called name was deleted at now.
func (b *beingDeleted) deleted(ns, name string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.delay <= 0 {
		return
	}
	if b.since == nil {
		b.since = map[string]time.Time{}
	}
	if len(b.since) >= sweepAbove {
		for k, at := range b.since {
			if now.Sub(at) >= b.delay {
				delete(b.since, k)
			}
		}
	}
	b.since[openKey(ns, name)] = now
}

// check returns ErrTableBeingDeleted when the table called name is being deleted at now.
func (b *beingDeleted) check(ns, name string, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := openKey(ns, name)
	at, ok := b.since[key]
	if !ok {
		return nil
	}
	if left := b.delay - now.Sub(at); left > 0 {
		return ErrTableBeingDeleted.WithDetail("table %q was deleted %v ago and is being deleted for %v more (Options.TableDeleteDelay)",
			name, now.Sub(at).Round(time.Millisecond), left.Round(time.Millisecond))
	}
	delete(b.since, key)
	return nil
}

// SetTableDeleteDelay switches Options.TableDeleteDelay while the DB runs: tables deleted
// from then on stay in the TableBeingDeleted state for d (0 frees their names at once).
// Deletions already running end when they would have with the old delay or the new one,
// whichever comes first.
func (db *DB) SetTableDeleteDelay(d time.Duration) {
	db.deleting.mu.Lock()
	defer db.deleting.mu.Unlock()
	db.deleting.delay = max(d, 0)
	if d <= 0 {
		db.deleting.since = nil
	}
}

// TableDeleteDelay returns how long a deleted table stays in the TableBeingDeleted state.
func (db *DB) TableDeleteDelay() time.Duration {
	db.deleting.mu.Lock()
	defer db.deleting.mu.Unlock()
	return db.deleting.delay
}
