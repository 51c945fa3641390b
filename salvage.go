package tabula

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/storage"
)

// SalvageReport is what Salvage copied into the new database and what it could not read.
type SalvageReport struct {
	// Entities counts the entities in the new database.
	Entities int
	// Lost says, one line each, what could not be read: the damaged file and, where known,
	// the tables and keys it held there.
	Lost []string
	// Problems is what Check finds in the new database (entities whose table's catalog entry
	// was lost, say), or nil.
	Problems error
}

// Salvage copies every entity, table, access policy and service property it can read from
// the database in dir into a new database in to, which must not exist or be empty, and
// reports what it could not read. It is for a database with damaged files (Open or Check
// name them): it never writes to dir, and it reads past damage that makes Open refuse the
// directory (a damaged MANIFEST, log or table index), keeping of a damaged table every
// block that passes its checksum. It goes beyond the service: a maintenance tool, as
// `tabula salvage --data DIR --to NEWDIR`.
func Salvage(ctx context.Context, dir, to string) (SalvageReport, error) {
	var r SalvageReport
	sr, err := storage.Salvage(ctx, dir, to)
	if err != nil {
		return r, ErrInternal.WithDetail("salvage %s: %v", dir, err)
	}
	db, err := Open(to, nil)
	if err != nil {
		return r, err
	}
	defer db.Close()
	c, err := db.check(ctx)
	if err != nil {
		return r, err
	}
	r.Problems = errors.Join(c.problems...)
	for _, n := range c.counted {
		r.Entities += int(n.entities)
	}
	for _, d := range sr.Lost {
		switch {
		case d.Lower == nil:
			r.Lost = append(r.Lost, fmt.Sprintf("%s: %v", d.File, d.Err))
		case string(d.Lower) == string(d.Upper):
			r.Lost = append(r.Lost, fmt.Sprintf("%s: %v: %s", d.File, d.Err, c.describe(d.Lower)))
		default:
			r.Lost = append(r.Lost, fmt.Sprintf("%s: %v: %s to %s", d.File, d.Err, c.describe(d.Lower), c.describe(d.Upper)))
		}
	}
	return r, nil
}
