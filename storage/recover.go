package storage

import (
	"os"
	"path/filepath"
	"strings"
)

// removeEmptyLogs deletes the empty memtable logs (*.mem) and value logs (*.vlog) in dir
// before Badger opens it. Badger creates such a file and then sizes it; a crash between the
// two, or a power cut after the name reached the disk but not the size (which only an fsync
// of the file makes durable), leaves it empty, and Badger then refuses to open the
// directory ("while opening fid: N err: Create a new file"). An empty log holds nothing, not
// even its header, so nothing is lost with it. Found by the power-loss test
// (powerloss_test.go in the root package).
func removeEmptyLogs(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	removed := false
	for _, e := range entries {
		if !e.Type().IsRegular() || !(strings.HasSuffix(e.Name(), ".mem") || strings.HasSuffix(e.Name(), ".vlog")) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Size() == 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
			removed = true
		}
	}
	if !removed {
		return nil
	}
	return syncDir(dir)
}

// syncDir makes the names in dir durable. Badger opening a directory creates its logs
// (a memtable log, a value log) without syncing the directory, and a file system may then
// lose their names in a power cut even once their content is synced (POSIX asks for an
// fsync of the directory; file systems with a journal commit names with any fsync). The
// power-loss test with TABULA_POWER_STRICT=1 (powerloss_test.go) lost the value log so, and
// read a value pointer into it, until Open synced the directory.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
