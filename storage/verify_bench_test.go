package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The cost of what reads verify (a value log's checksums, an empty value taken for a failed
// read, a mapping fault taken for an error), measured on one store in one run: each
// iteration reads verified and then unverified, timing each, so that whatever else the
// machine does weighs on both alike. It reports ns per read of each and their ratio, for
// point reads and for scans of 100 keys of 1 KiB values (in the LSM tree, as the engine's
// records are).
//
//	go test -run '^$' -bench 'BenchmarkReadVerification' -count 5 ./storage/
func BenchmarkReadVerification(b *testing.B) {
	const n = 100_000
	dir := fillBenchStore(b, n)
	db, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	get := func(key []byte) error {
		return db.View(func(tx *Txn) error {
			_, err := tx.Get(key, func([]byte) error { return nil })
			return err
		})
	}
	scan := func(key []byte) error {
		return db.View(func(tx *Txn) error {
			it := tx.Scan(key, nil)
			defer it.Close()
			for i := 0; i < 100 && it.Next(); i++ {
				if err := it.Value(func([]byte) error { return nil }); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for name, read := range map[string]func([]byte) error{"Get": get, "Scan100": scan} {
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			key := make([]byte, 0, 16)
			var spent [2]time.Duration // verified, unverified
			for j := 0; b.Loop(); j++ {
				key = fmt.Appendf(key[:0], "k%08d", rng.IntN(n-100))
				// The second read of a key finds it in the caches: each goes second in
				// turn.
				for k := range 2 {
					i := (j + k) % 2
					db.unverified = i == 1
					start := time.Now()
					if err := read(key); err != nil {
						b.Fatal(err)
					}
					spent[i] += time.Since(start)
				}
			}
			db.unverified = false
			b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "verified-ns/read")
			b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "unverified-ns/read")
			b.ReportMetric(float64(spent[0])/float64(spent[1]), "verified/unverified")
		})
	}
}

// BenchmarkOpenVerification is the cost of verifying every table at Open: a store of about
// 100 MiB of tables opened and closed, reporting MB verified per second.
//
//	go test -run '^$' -bench 'BenchmarkOpenVerification' -count 3 ./storage/
func BenchmarkOpenVerification(b *testing.B) {
	dir := fillBenchStore(b, 100_000)
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	var size int64
	for _, p := range ssts {
		if st, err := os.Stat(p); err == nil {
			size += st.Size()
		}
	}
	var spent time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := inspect(dir); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
	}
	b.ReportMetric(float64(size)*float64(b.N)/1e6/spent.Seconds(), "MB/s")
	b.ReportMetric(float64(size)/1e6, "MB")
}

// fillBenchStore writes n keys of 1 KiB values (k00000000 on) into a new store and closes
// it, returning its directory.
func fillBenchStore(b *testing.B, n int) string {
	dir := b.TempDir()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	for lo := 0; lo < n; lo += 100 {
		if err := db.Update(func(tx *Txn) error {
			for i := lo; i < lo+100; i++ {
				if err := tx.Set(fmt.Appendf(nil, "k%08d", i), value); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}
