package tabula

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The suites that matter most for correctness (the reference model, the query
// differential, the transaction bank and the concurrency tests) run against both stores:
// the in-memory engine and Badger on disk. Such a test starts with
//
//	if bothStores(t, TestX) {
//		return
//	}
//
// which runs TestX again as subtests "memory" and "disk"; inside the "disk" one (and its
// own subtests), openTestDB opens its databases in a temporary directory.

// storeModes maps the name of each subtest bothStores started to whether it is on disk.
var storeModes sync.Map // string → bool

func bothStores(t *testing.T, test func(*testing.T)) bool {
	if _, ok := storeMode(t); ok {
		return false
	}
	for _, mode := range []string{"memory", "disk"} {
		t.Run(mode, func(t *testing.T) {
			storeModes.Store(t.Name(), mode == "disk")
			test(t)
		})
	}
	return true
}

// storeMode reports whether t runs under a bothStores subtest, and if so whether on disk.
func storeMode(t *testing.T) (onDisk, ok bool) {
	name := t.Name()
	storeModes.Range(func(k, v any) bool {
		if prefix := k.(string); name == prefix || strings.HasPrefix(name, prefix+"/") {
			onDisk, ok = v.(bool), true
			return false
		}
		return true
	})
	return onDisk, ok
}

// openForTest opens a database in memory, or on disk under a bothStores "disk" subtest.
func openForTest(t *testing.T, opts *Options) (*DB, error) {
	if onDisk, _ := storeMode(t); onDisk {
		return Open(t.TempDir(), opts)
	}
	return OpenInMemory(opts)
}

// bothStores really switches the store: under "disk" the database keeps its files in a
// directory of the test, under "memory" it keeps none.
func TestBothStoresSwitchesTheStore(t *testing.T) {
	var ran []string
	bothStores(t, func(t *testing.T) {
		openTestDB(t, nil)
		onDisk, ok := storeMode(t)
		if !ok {
			t.Fatal("not under bothStores")
		}
		// t.TempDir makes numbered directories side by side; openTestDB's is a sibling.
		files, err := filepath.Glob(filepath.Join(filepath.Dir(t.TempDir()), "*", "MANIFEST"))
		if err != nil {
			t.Fatal(err)
		}
		if onDisk != (len(files) == 1) {
			t.Fatalf("on disk: %v, but the test's directories hold %v", onDisk, files)
		}
		ran = append(ran, filepath.Base(t.Name()))
	})
	if strings.Join(ran, ",") != "memory,disk" {
		t.Fatalf("ran %v", ran)
	}
}
