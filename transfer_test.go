package tabula

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asRemote is an embedded DB that ImportService takes for a remote service (no staging
// area, entities in transactions), with access policies the service refuses when refuseACL.
type asRemote struct {
	ServiceAPI
	refuseACL bool
}

func (s asRemote) CreateTable(ctx context.Context, name string) (TableAPI, error) {
	t, err := s.ServiceAPI.CreateTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.wrap(t), nil
}

func (s asRemote) Table(name string) TableAPI { return s.wrap(s.ServiceAPI.Table(name)) }

func (s asRemote) wrap(t TableAPI) TableAPI {
	if s.refuseACL {
		return refusingACL{t}
	}
	return t
}

// refusingACL refuses every access policy, as Azurite refuses one without a Start time.
type refusingACL struct{ TableAPI }

func (refusingACL) AccessPolicies(context.Context) ([]AccessPolicy, error) { return nil, nil }
func (refusingACL) SetAccessPolicies(context.Context, []AccessPolicy) error {
	return ErrInvalidInput.WithDetail("Bad Request (HTTP400)")
}

// remoteFile is an interchange file of one table, Things, with n entities in one partition.
func remoteFile(n int) string {
	var b strings.Builder
	b.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Things","accessPolicies":[{"Id":"readers","Permission":"r"}]}` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `{"PartitionKey":"p%d","RowKey":"%05d","Timestamp":"2024-01-02T03:04:05Z","N":%d}`+"\n", i/500, i, i)
	}
	fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":"Things","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", n, n)
	return b.String()
}

func countAll(t *testing.T, tbl TableAPI) int {
	t.Helper()
	n := 0
	for _, err := range tbl.QueryAll(context.Background(), Query{}) {
		require.NoError(t, err)
		n++
	}
	return n
}

// An import into a service interrupted after a Progress (Ctrl-C) keeps the table it
// created, and resumes from that Progress; one killed after writing past its last Progress
// (the state file lags the writes) resumes too, taking the entities it finds as the file
// has them for its own.
func TestImportServiceResumes(t *testing.T) {
	const n = 5000 // three batches of the import
	file := remoteFile(n)
	for _, lag := range []bool{false, true} {
		db := openStore(t, nil)
		svc := asRemote{ServiceAPI: Embedded(db)}
		ctx, cancel := context.WithCancel(context.Background())
		var state Progress
		calls := 0
		_, err := ImportService(ctx, svc, strings.NewReader(file), &ImportOptions{Progress: func(p Progress) error {
			calls++
			if !lag || calls == 1 {
				state = p // the state file, which a kill stops from recording the second
			}
			if calls == 2 {
				cancel()
				return ctx.Err()
			}
			return nil
		}})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 4000, countAll(t, db.Table("Things")), "the table and what was written stay")

		p, err := ImportService(context.Background(), svc, strings.NewReader(file), &ImportOptions{Resume: &state})
		require.NoError(t, err, "lag %v", lag)
		assert.EqualValues(t, n, p.Entities)
		assert.Equal(t, n, countAll(t, db.Table("Things")))
		cancel()
	}
}

// A failure of a service import deletes the table it created and takes the progress back
// to the line before it, so that a resume creates it again.
func TestImportServiceFailureRewinds(t *testing.T) {
	db := openStore(t, nil)
	svc := asRemote{ServiceAPI: Embedded(db)}
	bad := strings.Replace(remoteFile(3000), `"RowKey":"02500"`, `"RowKey":"a/b"`, 1)
	var last Progress
	_, err := ImportService(context.Background(), svc, strings.NewReader(bad), &ImportOptions{Progress: func(p Progress) error { last = p; return nil }})
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	_, err = db.Table("Things").Get(context.Background(), "p0", "00000")
	assert.ErrorIs(t, err, ErrTableNotFound)
	assert.Equal(t, 1, last.Line, "the progress is back before the table line")
	assert.Zero(t, last.Entities)
}

// A service that refuses a table's access policies (Azurite, without a Start time): the
// error explains it, and a best-effort import leaves them out.
func TestImportServiceRefusedPolicies(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, nil)
	svc := asRemote{ServiceAPI: Embedded(db), refuseACL: true}
	_, err := ImportService(ctx, svc, strings.NewReader(remoteFile(3)), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 2: accessPolicies: the service refused the table's access policies (an emulator such as Azurite")
	p, err := ImportService(ctx, svc, strings.NewReader(remoteFile(3)), &ImportOptions{BestEffort: true})
	require.NoError(t, err)
	assert.EqualValues(t, 3, p.Entities)
}
