package tabula_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

// oddKey holds every printable ASCII character a key may hold (all but / \ # ?), and
// characters beyond ASCII of two, three and four bytes.
const oddKey = ` !"$%&'()*+,-.0123456789:;<=>@ABCXYZ[]^_` + "`abcxyz{|}~\u00e9\u20ac\U0001F600"

// edgeEntities are entities with every EDM type and edge value the format must carry.
func edgeEntities() []tabula.Entity {
	props := tabula.Properties{
		"I64Max": tabula.Int64(math.MaxInt64), "I64Min": tabula.Int64(math.MinInt64), "I64Zero": tabula.Int64(0),
		"I32Max": tabula.Int32(math.MaxInt32), "I32Min": tabula.Int32(math.MinInt32),
		"NaN": tabula.Double(math.NaN()), "Inf": tabula.Double(math.Inf(1)), "NegInf": tabula.Double(math.Inf(-1)),
		"NegZero": tabula.Double(math.Copysign(0, -1)), "Whole": tabula.Double(5), "Tiny": tabula.Double(math.SmallestNonzeroFloat64),
		"Huge": tabula.Double(math.MaxFloat64), "Third": tabula.Double(1.0 / 3),
		"Tick":   tabula.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)),
		"Last":   tabula.DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)),
		"Leap":   tabula.DateTime(time.Date(2024, 2, 29, 12, 0, 0, 1234500, time.UTC)),
		"Guid":   tabula.Guid{0xde, 0xad, 0xbe, 0xef, 15: 1},
		"Bin64K": tabula.Binary(bytes.Repeat([]byte{0, 0xff, '\n', '"'}, tabula.MaxBinaryLength/4)),
		"Empty":  tabula.Binary{}, "True": tabula.Boolean(true), "False": tabula.Boolean(false),
		"Str": tabula.String("line\nbreak \"quoted\" \\ \u2028 \x00 é"), "Num": tabula.String("12"), "Blank": tabula.String(""),
	}
	out := []tabula.Entity{{PartitionKey: oddKey, RowKey: oddKey, Properties: props}, {PartitionKey: "", RowKey: ""}}
	many := tabula.Properties{}
	for i := range tabula.MaxProperties {
		many[fmt.Sprintf("P%03d", i)] = tabula.Int32(int32(i))
	}
	out = append(out, tabula.Entity{PartitionKey: "many", RowKey: "252", Properties: many})
	// As near to 1 MiB by the service's size formula as binaries of at most 64 KiB allow.
	big := tabula.Properties{}
	size := 4 + 2*len("big") + 2*len("1MiB")
	for i := 0; ; i++ {
		name := fmt.Sprintf("B%02d", i)
		n := min(tabula.MaxBinaryLength, tabula.MaxEntitySize-size-8-2*len(name))
		if n <= 0 {
			break
		}
		big[name] = tabula.Binary(bytes.Repeat([]byte{byte(i)}, n))
		size += 8 + 2*len(name) + n
	}
	e := tabula.Entity{PartitionKey: "big", RowKey: "1MiB", Properties: big}
	over := tabula.EntitySize(&e) - tabula.MaxEntitySize // the formula's framing, beyond the estimate
	for name, v := range big {
		if b := v.(tabula.Binary); len(b) > over {
			big[name] = b[:len(b)-over]
			break
		}
	}
	if tabula.EntitySize(&e) != tabula.MaxEntitySize {
		panic(fmt.Sprintf("the big entity is %d bytes", tabula.EntitySize(&e)))
	}
	return append(out, e)
}

const serviceProps = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins></CorsRule></Cors></StorageServiceProperties>`

// seed fills db with several namespaces, access policies, service properties and the edge
// entities.
func seed(t *testing.T, db *tabula.DB) {
	ctx := context.Background()
	for _, ns := range []string{"", "alpha", "beta"} {
		n := db.Namespace(ns)
		for _, name := range []string{"Edges", "Plain"} {
			tb, err := n.CreateTable(ctx, name)
			require.NoError(t, err)
			if name == "Edges" {
				for _, e := range edgeEntities() {
					_, err := tb.Insert(ctx, e)
					require.NoError(t, err)
				}
				require.NoError(t, tb.SetAccessPolicies(ctx, []tabula.AccessPolicy{
					{ID: "readers", Permission: "r", Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
					{ID: "all", Permission: "raud", Start: time.Date(2024, 1, 1, 0, 0, 0, 1200, time.UTC)},
				}))
				continue
			}
			for i := range 25 {
				_, err := tb.Insert(ctx, tabula.Entity{PartitionKey: fmt.Sprint(i % 3), RowKey: fmt.Sprint(i), Properties: tabula.Properties{"N": tabula.Int32(int32(i))}})
				require.NoError(t, err)
			}
		}
		if ns != "" {
			require.NoError(t, n.SetServiceProperties(ctx, []byte(serviceProps)))
		}
	}
}

func export(t *testing.T, db *tabula.DB, opts *tabula.ExportOptions) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, db.Export(context.Background(), &buf, opts))
	return buf.String()
}

// Every EDM type and edge value, several namespaces, access policies and service
// properties go out to the file and back in bit for bit: the second export of the
// imported copy is the first export, byte for byte, Timestamps and all.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	defer src.Close()
	seed(t, src)
	file := export(t, src, nil)
	assert.Equal(t, 6, strings.Count(file, `{"@tabula":"table"`))
	assert.Contains(t, file, `{"@tabula":"eof","tables":6,"entities":87}`)

	dir := t.TempDir()
	dst, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	defer func() { dst.Close() }()
	p, err := dst.Import(ctx, strings.NewReader(file), &tabula.ImportOptions{KeepTimestamps: true})
	require.NoError(t, err)
	assert.Equal(t, int64(6), p.Tables)
	assert.Equal(t, int64(87), p.Entities)
	assert.Equal(t, file, export(t, dst, nil))
	require.NoError(t, dst.Check(ctx))
	// And so it stays after a restart: nothing imported was left to the staging area's drop.
	require.NoError(t, dst.Close())
	dst, err = tabula.Open(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, file, export(t, dst, nil))

	// Through the engine's API too: the same entities, the same ETags, the same policies.
	for _, ns := range []string{"", "alpha", "beta"} {
		want, got := src.Namespace(ns).Table("Edges"), dst.Namespace(ns).Table("Edges")
		for _, e := range edgeEntities() {
			a, err := want.Get(ctx, e.PartitionKey, e.RowKey)
			require.NoError(t, err)
			b, err := got.Get(ctx, e.PartitionKey, e.RowKey)
			require.NoError(t, err)
			assert.Equal(t, a.ETag, b.ETag)
			assert.Equal(t, len(a.Properties), len(b.Properties))
			for name, v := range a.Properties {
				if d, ok := v.(tabula.Double); ok {
					assert.Equal(t, math.Float64bits(float64(d)), math.Float64bits(float64(b.Properties[name].(tabula.Double))), name)
					continue
				}
				assert.Equal(t, v, b.Properties[name], name)
			}
		}
		pa, err := want.AccessPolicies(ctx)
		require.NoError(t, err)
		pb, err := got.AccessPolicies(ctx)
		require.NoError(t, err)
		assert.Equal(t, pa, pb)
		sp, err := dst.Namespace(ns).ServiceProperties(ctx)
		require.NoError(t, err)
		if ns != "" {
			assert.Equal(t, serviceProps, string(sp))
		}
	}
	// A write after an import that kept Timestamps gets a newer one than any imported.
	e, err := dst.Table("Plain").Insert(ctx, tabula.Entity{PartitionKey: "x", RowKey: "y"})
	require.NoError(t, err)
	assert.True(t, e.Timestamp.After(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)))
}

// Without KeepTimestamps an import stamps new Timestamps, as the service would.
func TestImportStampsTimestamps(t *testing.T) {
	ctx := context.Background()
	file := `{"@tabula":"export","version":1}
{"@tabula":"table","account":"","table":"Things"}
{"PartitionKey":"p","RowKey":"r","Timestamp":"2001-01-01T00:00:00Z","A":1}
{"@tabula":"end","account":"","table":"Things","entities":1}
{"@tabula":"eof","tables":1,"entities":1}
`
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	db, err := tabula.OpenInMemory(&tabula.Options{Clock: func() time.Time { return now }})
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Import(ctx, strings.NewReader(file), nil)
	require.NoError(t, err)
	e, err := db.Table("Things").Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, now, e.Timestamp)
	assert.Equal(t, tabula.Int32(1), e.Properties["A"])
}

// The four policies for an entity that exists, on a table that exists.
func TestImportExistingPolicies(t *testing.T) {
	ctx := context.Background()
	file := `{"@tabula":"export","version":1}
{"@tabula":"table","account":"","table":"Things"}
{"PartitionKey":"p","RowKey":"old","Timestamp":"2001-01-01T00:00:00Z","B":2}
{"PartitionKey":"p","RowKey":"new","Timestamp":"2001-01-01T00:00:00Z","B":2}
{"@tabula":"end","account":"","table":"Things","entities":2}
{"@tabula":"eof","tables":1,"entities":2}
`
	for _, c := range []struct {
		policy tabula.Existing
		old    tabula.Properties // the stored entity after the import; nil: the import fails
	}{
		{tabula.ExistingFail, nil},
		{tabula.ExistingReplace, tabula.Properties{"B": tabula.Int32(2)}},
		{tabula.ExistingMerge, tabula.Properties{"A": tabula.Int32(1), "B": tabula.Int32(2)}},
		{tabula.ExistingSkip, tabula.Properties{"A": tabula.Int32(1)}},
	} {
		t.Run(fmt.Sprint(c.policy), func(t *testing.T) {
			db, err := tabula.OpenInMemory(nil)
			require.NoError(t, err)
			defer db.Close()
			tb, err := db.CreateTable(ctx, "Things")
			require.NoError(t, err)
			_, err = tb.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "old", Properties: tabula.Properties{"A": tabula.Int32(1)}})
			require.NoError(t, err)
			before := export(t, db, nil)
			_, err = db.Import(ctx, strings.NewReader(file), &tabula.ImportOptions{Existing: c.policy})
			if c.old == nil {
				var ie *tabula.ImportError
				require.ErrorAs(t, err, &ie)
				assert.Equal(t, 3, ie.Line)
				assert.ErrorIs(t, err, tabula.ErrEntityAlreadyExists)
				assert.Equal(t, before, export(t, db, nil), "a failed import changes nothing")
				return
			}
			require.NoError(t, err)
			old, err := tb.Get(ctx, "p", "old")
			require.NoError(t, err)
			assert.Equal(t, c.old, old.Properties)
			_, err = tb.Get(ctx, "p", "new")
			assert.NoError(t, err)
		})
	}
}

// A file cut short anywhere, and a file with a bad line, each give a clear error naming the
// line and change nothing: not the tables the file would create, not the ones it would add
// to.
func TestImportBadFileChangesNothing(t *testing.T) {
	ctx := context.Background()
	src, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	seed(t, src)
	file := export(t, src, &tabula.ExportOptions{Namespaces: []string{"alpha"}})
	src.Close()

	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	defer db.Close()
	tb, err := db.Namespace("alpha").CreateTable(ctx, "Plain")
	require.NoError(t, err)
	_, err = tb.Insert(ctx, tabula.Entity{PartitionKey: "mine", RowKey: "1"})
	require.NoError(t, err)
	before := export(t, db, nil)

	lines := strings.SplitAfter(file, "\n")
	for _, cut := range []int{len(file) / 3, len(file) / 2, len(file) - 2, strings.LastIndex(file, `{"@tabula":"eof"`)} {
		_, err := db.Import(ctx, strings.NewReader(file[:cut]), &tabula.ImportOptions{Existing: tabula.ExistingReplace})
		var ie *tabula.ImportError
		require.ErrorAs(t, err, &ie, "cut at %d", cut)
		assert.True(t, ie.Truncated || cut == len(file)-2, "cut at %d: %v", cut, err)
		assert.Equal(t, before, export(t, db, nil), "cut at %d", cut)
	}
	// The last table's entity gets an Int64 that is not one.
	bad := append([]string{}, lines...)
	last := len(bad) - 4 // the last entity line: end, eof and "" follow
	require.Contains(t, bad[last], `"PartitionKey"`)
	bad[last] = strings.Replace(bad[last], `"N":`, `"N@odata.type":"Edm.Int64","N":"12x",`+`"M":`, 1)
	_, err = db.Import(ctx, strings.NewReader(strings.Join(bad, "")), nil)
	var ie *tabula.ImportError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, last+1, ie.Line)
	assert.Contains(t, err.Error(), fmt.Sprintf(`line %d: property "N"`, last+1))
	assert.ErrorIs(t, err, tabula.ErrInvalidInput)
	assert.Equal(t, before, export(t, db, nil))

	// A line the format allows but the service does not: a key with a '#'.
	bad[last] = `{"PartitionKey":"a#b","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z"}` + "\n"
	_, err = db.Import(ctx, strings.NewReader(strings.Join(bad, "")), nil)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, last+1, ie.Line)
	assert.Contains(t, err.Error(), "PartitionKey")
	assert.Equal(t, before, export(t, db, nil))
	require.NoError(t, db.Check(ctx), "what a failed import staged is not taken for data")

	// Best effort leaves the bad line out and imports the rest.
	p, err := db.Import(ctx, strings.NewReader(strings.Join(bad, "")), &tabula.ImportOptions{BestEffort: true, Existing: tabula.ExistingReplace})
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.Skipped)
	assert.NotEqual(t, before, export(t, db, nil))
}

// An export of chosen tables with a filter, and an export resumed from a Progress call,
// write what a whole export would.
func TestExportSelectAndResume(t *testing.T) {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	defer db.Close()
	seed(t, db)
	some := export(t, db, &tabula.ExportOptions{Namespaces: []string{"beta"}, Tables: []string{"plain"}, Filter: "N lt 5"})
	assert.Equal(t, 1, strings.Count(some, `"@tabula":"table"`))
	assert.Contains(t, some, `{"@tabula":"eof","tables":1,"entities":5}`)

	whole := export(t, db, nil)
	var (
		buf    bytes.Buffer
		marks  []tabula.Progress
		length []int
		stop   = errors.New("stop")
	)
	err = db.Export(ctx, &buf, &tabula.ExportOptions{ProgressEvery: 7, Progress: func(p tabula.Progress) error {
		marks, length = append(marks, p), append(length, buf.Len())
		return nil
	}})
	require.NoError(t, err)
	require.Greater(t, len(marks), 6)
	for i, m := range marks {
		// Stop after mark i, cut the file back to it, and resume.
		var part bytes.Buffer
		n := 0
		err := db.Export(ctx, &part, &tabula.ExportOptions{ProgressEvery: 7, Progress: func(tabula.Progress) error {
			if n == i {
				return stop
			}
			n++
			return nil
		}})
		require.ErrorIs(t, err, stop)
		part.Truncate(length[i])
		require.NoError(t, db.Export(ctx, &part, &tabula.ExportOptions{ProgressEvery: 7, Resume: &m}))
		require.Equal(t, whole, part.String(), "resumed after mark %d: %+v", i, m)
	}
}

// The same round trip through remote against a live tabula serve: down to a file from the
// server, and up from the file into another.
func TestExportImportRemote(t *testing.T) {
	ctx := context.Background()
	from := tabulatest.NewServer(t, nil)
	seedDB, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	defer seedDB.Close()
	seed(t, seedDB)
	file := export(t, seedDB, &tabula.ExportOptions{Namespaces: []string{""}})
	_, err = from.DB.Import(ctx, strings.NewReader(file), &tabula.ImportOptions{KeepTimestamps: true})
	require.NoError(t, err)

	c, err := remote.Dial(from.ConnectionString(), nil)
	require.NoError(t, err)
	// The service's properties, set through the service so that what it stores is its own
	// form of the document.
	require.NoError(t, c.SetServiceProperties(ctx, []byte(`<StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete>`+
		`<Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>`+
		`<Cors><CorsRule><AllowedOrigins>https://example.com</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods>`+
		`<MaxAgeInSeconds>60</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders>x-ms-*</AllowedHeaders></CorsRule></Cors>`+
		`</StorageServiceProperties>`)))
	var down bytes.Buffer
	require.NoError(t, tabula.ExportService(ctx, c, &down, &tabula.ExportOptions{Account: ""}))
	// Bit for bit the embedded export of the server's database: the entities, the access
	// policies, the service properties.
	want := export(t, from.DB, &tabula.ExportOptions{Namespaces: []string{""}})
	require.Contains(t, want, `{"@tabula":"account","account":"","serviceProperties":"<StorageServiceProperties>`)
	require.Contains(t, want, `"accessPolicies":[{"Id":"readers","Expiry":"2030-01-01T00:00:00Z","Permission":"r"},{"Id":"all","Start":"2024-01-01T00:00:00.0000012Z","Permission":"raud"}]`)
	assert.Equal(t, want, down.String())

	// Through a shared access signature, which may not read a table's ACL: the same file
	// without the access policies, rather than no file.
	cred, err := aztables.NewSharedKeyCredential(tabulatest.AccountName, tabulatest.AccountKey)
	require.NoError(t, err)
	sas, err := aztables.AccountSASSignatureValues{Protocol: aztables.SASProtocolHTTPSandHTTP,
		ExpiryTime: time.Now().UTC().Add(time.Hour), Services: "t",
		Permissions:   aztables.AccountSASPermissions{Read: true, List: true}.String(),
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
	}.Sign(cred)
	require.NoError(t, err)
	viaSAS, err := remote.DialSAS(from.URL+"?"+sas.Encode(), nil)
	require.NoError(t, err)
	var downSAS bytes.Buffer
	require.NoError(t, tabula.ExportService(ctx, viaSAS, &downSAS, &tabula.ExportOptions{Account: ""}))
	noACL := strings.Replace(want, `,"accessPolicies":[{"Id":"readers","Expiry":"2030-01-01T00:00:00Z","Permission":"r"},{"Id":"all","Start":"2024-01-01T00:00:00.0000012Z","Permission":"raud"}]`, "", 1)
	require.NotEqual(t, want, noACL)
	assert.Equal(t, noACL, downSAS.String())

	to := tabulatest.NewServer(t, nil)
	c2, err := remote.Dial(to.ConnectionString(), nil)
	require.NoError(t, err)
	p, err := tabula.ImportService(ctx, c2, strings.NewReader(down.String()), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(29), p.Entities)
	// The policies and the properties arrived: the other server's database exports them
	// as the first did (the Timestamps, which the service stamps anew, aside).
	for _, name := range []string{"Edges", "Plain"} {
		a, err := from.DB.Table(name).AccessPolicies(ctx)
		require.NoError(t, err)
		b, err := to.DB.Table(name).AccessPolicies(ctx)
		require.NoError(t, err)
		assert.Equal(t, a, b, name)
	}
	pa, err := from.DB.Namespace("").ServiceProperties(ctx)
	require.NoError(t, err)
	pb, err := to.DB.Namespace("").ServiceProperties(ctx)
	require.NoError(t, err)
	assert.Equal(t, string(pa), string(pb))
	for _, name := range []string{"Edges", "Plain"} {
		for e, err := range from.DB.Table(name).QueryAll(ctx, tabula.Query{}) {
			require.NoError(t, err)
			got, err := to.DB.Table(name).Get(ctx, e.PartitionKey, e.RowKey)
			require.NoError(t, err)
			assert.Equal(t, len(e.Properties), len(got.Properties))
			for n, v := range e.Properties {
				if d, ok := v.(tabula.Double); ok {
					assert.Equal(t, math.Float64bits(float64(d)), math.Float64bits(float64(got.Properties[n].(tabula.Double))), n)
					continue
				}
				assert.Equal(t, v, got.Properties[n], n)
			}
		}
	}
	// A bad line through remote: an error naming it, and the table it created is gone.
	bad := strings.Replace(down.String(), `"RowKey":"0"`, `"RowKey":"a/b"`, 1)
	bad = strings.ReplaceAll(bad, `"table":"Plain"`, `"table":"Other"`)
	bad = strings.ReplaceAll(bad, `"table":"Edges"`, `"table":"Fresh"`)
	_, err = tabula.ImportService(ctx, c2, strings.NewReader(bad), nil)
	var ie *tabula.ImportError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "RowKey")
	_, err = to.DB.Table("Other").Get(ctx, "0", "0")
	assert.ErrorIs(t, err, tabula.ErrTableNotFound)
}

// An entity twice in a table's section is an error naming the second line, whether the
// repeat follows at once or comes after other keys (out of key order).
func TestImportEntityTwice(t *testing.T) {
	ctx := context.Background()
	for _, rows := range [][]string{{"a", "a"}, {"b", "c", "a", "b"}} {
		var b strings.Builder
		b.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Things"}` + "\n")
		for _, rk := range rows {
			fmt.Fprintf(&b, `{"PartitionKey":"p","RowKey":%q,"Timestamp":"2024-01-01T00:00:00Z"}`+"\n", rk)
		}
		fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":"Things","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", len(rows), len(rows))
		db, err := tabula.OpenInMemory(nil)
		require.NoError(t, err)
		_, err = db.Import(ctx, strings.NewReader(b.String()), nil)
		var ie *tabula.ImportError
		require.ErrorAs(t, err, &ie, "%v", rows)
		assert.Equal(t, 2+len(rows), ie.Line)
		assert.Contains(t, err.Error(), "is in the table twice")
		_, err = db.Table("Things").Get(ctx, "p", "a")
		assert.ErrorIs(t, err, tabula.ErrTableNotFound)
		db.Close()
	}
}

// openOnDiskOrNot opens a database in a temporary directory, or in memory.
func openOnDiskOrNot(t *testing.T, onDisk bool) *tabula.DB {
	t.Helper()
	open := func() (*tabula.DB, error) { return tabula.OpenInMemory(nil) }
	if onDisk {
		open = func() (*tabula.DB, error) { return tabula.Open(t.TempDir(), nil) }
	}
	db, err := open()
	require.NoError(t, err)
	return db
}

// generic hides the embedded engine, so that ExportService reads it through its TableAPI
// (queries decoded into Entities) rather than through DB.Export's transcoder.
type generic struct{ tabula.ServiceAPI }

// DB.Export, which writes lines straight from the stored records, writes what the generic
// path, through queries and wire.Entity values, writes for the same tables, byte for byte:
// every EDM type and edge value, odd keys, 252 properties and a 1 MiB entity.
func TestExportMatchesGenericPath(t *testing.T) {
	ctx := context.Background()
	for _, onDisk := range []bool{false, true} {
		db := openOnDiskOrNot(t, onDisk)
		seed(t, db)
		fast := export(t, db, &tabula.ExportOptions{Namespaces: []string{""}})
		var slow bytes.Buffer
		require.NoError(t, tabula.ExportService(ctx, generic{tabula.Embedded(db)}, &slow, &tabula.ExportOptions{}))
		assert.Equal(t, slow.String(), fast, "on disk: %v", onDisk)
		assert.Contains(t, fast, `{"@tabula":"eof","tables":2,"entities":29}`)
		require.NoError(t, db.Close())
	}
}

// An export reads the whole database at one instant: what is written while it runs (here
// from its Progress callback, after its first table) is in no table of the file, however
// late that table is read.
func TestExportIsOneInstant(t *testing.T) {
	ctx := context.Background()
	for _, onDisk := range []bool{false, true} {
		db := openOnDiskOrNot(t, onDisk)
		seed(t, db)
		before := export(t, db, nil)
		var buf bytes.Buffer
		wrote := false
		err := db.Export(ctx, &buf, &tabula.ExportOptions{Progress: func(p tabula.Progress) error {
			if wrote {
				return nil
			}
			wrote = true
			// A table of a later namespace changes, and a new one appears.
			_, err := db.Namespace("beta").Table("Plain").Insert(ctx, tabula.Entity{PartitionKey: "late", RowKey: "x"})
			require.NoError(t, err)
			_, err = db.Namespace("gamma").CreateTable(ctx, "Late")
			require.NoError(t, err)
			return nil
		}})
		require.NoError(t, err)
		require.True(t, wrote)
		assert.Equal(t, before, buf.String(), "on disk: %v", onDisk)
		assert.NotEqual(t, before, export(t, db, nil), "the writes happened")
		require.NoError(t, db.Close())
	}
}
