package tabula_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// Every Go, JavaScript and Python snippet in README.md is a region of a file that runs as a
// test (Go here; JavaScript and Python by .ci/run, in the fresh projects the README's install
// lines make), so the README cannot drift from the API. A snippet is marked in README.md by
// the comment line "<!-- snippet: FILE#NAME -->" just above its ```go, ```js or ```python
// fence; in FILE the region is the lines between "// snippet: NAME" (or "# snippet: NAME")
// and "// end snippet" (or "# end snippet"), less their common indentation.
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	marker := regexp.MustCompile(`^<!-- snippet: (\S+)#(\S+) -->$`)
	lines := strings.Split(string(readme), "\n")
	checked := 0
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```go" && lines[i] != "```js" && lines[i] != "```python" {
			continue
		}
		require.True(t, i > 0 && marker.MatchString(lines[i-1]),
			"README.md line %d: a %s block needs a <!-- snippet: FILE#NAME --> line above it", i+1, lines[i])
		m := marker.FindStringSubmatch(lines[i-1])
		end := i + 1
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		// Blank lines at a region's end (gofmt keeps one before a marker after a func) do not count.
		got := strings.TrimRight(strings.Join(lines[i+1:end], "\n"), "\n")
		assert.Equal(t, strings.TrimRight(snippetRegion(t, m[1], m[2]), "\n"), got, "README.md line %d differs from %s#%s", i+1, m[1], m[2])
		checked++
		i = end
	}
	assert.GreaterOrEqual(t, checked, 4, "the snippets of the three kinds of user and the pitfalls")
}

// snippetRegion returns region name of file, dedented.
func snippetRegion(t *testing.T, file, name string) string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var region []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch strings.TrimSpace(line) {
		case "// snippet: " + name, "# snippet: " + name:
			in = true
			continue
		case "// end snippet", "# end snippet":
			if in {
				return dedent(region)
			}
		}
		if in {
			region = append(region, line)
		}
	}
	t.Fatalf("%s has no region %q", file, name)
	return ""
}

func dedent(lines []string) string {
	// The common indentation: tabs in Go, spaces in JavaScript and Python.
	indent := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first || len(lead) < len(indent) {
			indent, first = lead, false
		}
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "\n")
}

// The embedded engine, as README.md's first snippet shows it.
func TestREADMEEmbed(t *testing.T) {
	require.NoError(t, readmeEmbed(context.Background()))
}

func readmeEmbed(ctx context.Context) error {
	// snippet: embed
	db, err := tabula.OpenInMemory(nil) // or tabula.Open("data", nil) to keep it on disk
	if err != nil {
		return err
	}
	defer db.Close()

	movies, err := db.CreateTable(ctx, "Movies")
	if err != nil {
		return err
	}
	_, err = movies.Insert(ctx, tabula.Entity{
		PartitionKey: "Action",
		RowKey:       "Cop Out",
		Properties:   tabula.Properties{"Rating": tabula.Double(4.5), "ReleaseYear": tabula.Int32(2010)},
	})
	if err != nil {
		return err // a *tabula.Error: the service's code and status, matched with errors.Is
	}

	e, err := movies.Get(ctx, "Action", "Cop Out")
	if err != nil {
		return err
	}
	e.Properties["Favorite"] = tabula.Boolean(true)
	_, err = movies.Update(ctx, e, tabula.Merge, e.ETag)
	if errors.Is(err, tabula.ErrUpdateConditionNotSatisfied) {
		// 412: someone wrote in between; re-read and retry
	}
	// end snippet
	if err != nil {
		return err
	}
	got, err := movies.Get(ctx, "Action", "Cop Out")
	if err != nil {
		return err
	}
	if got.Properties["Favorite"] != tabula.Boolean(true) {
		return errors.New("the merge did not land")
	}
	return nil
}

// snippet: fake
func TestMovieRatings(t *testing.T) {
	srv := tabulatest.NewServer(t, nil) // in memory, on a loopback port, closed when the test ends
	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Or without a socket: the SDK hands its requests straight to the server.
	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}}
	inProcess, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), opts)
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	if _, err := svc.CreateTable(ctx, "Movies", nil); err != nil {
		t.Fatal(err)
	}
	e, _ := json.Marshal(map[string]any{"PartitionKey": "Action", "RowKey": "Cop Out", "Rating": 4.5})
	if _, err := inProcess.NewClient("Movies").AddEntity(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	got, err := srv.DB.Table("Movies").Get(ctx, "Action", "Cop Out") // the engine itself, to check
	if err != nil || got.Properties["Rating"] != tabula.Double(4.5) {
		t.Fatalf("stored %v, %v", got.Properties, err)
	}
}

// end snippet

// A Go program pointed at tabula serve through the connection string it prints.
func TestREADMEServe(t *testing.T) {
	srv := tabulatest.NewServer(t, nil)
	t.Setenv("TABLES_CONNECTION_STRING", srv.ConnectionString())
	ctx := context.Background()
	// snippet: serve
	// TABLES_CONNECTION_STRING holds what tabula serve printed (in production, the account's).
	svc, err := aztables.NewServiceClientFromConnectionString(os.Getenv("TABLES_CONNECTION_STRING"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.CreateTable(ctx, "Orders", nil)
	// end snippet
	require.NoError(t, err)
	_, err = srv.DB.Table("Orders").Get(ctx, "none", "none")
	assert.ErrorIs(t, err, tabula.ErrResourceNotFound, "the table exists")
}

// The Go SDK refuses the emulators' shortcut connection string.
func TestREADMEPitfallDevelopmentStorage(t *testing.T) {
	_, err := aztables.NewServiceClientFromConnectionString("UseDevelopmentStorage=true", nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "connection string is either blank or malformed")
}

// snippet: transaction-failure
// transactionFailure reads which action of a failed transaction failed, and why. aztables
// reports the failure as a *azcore.ResponseError with StatusCode 202 and no ErrorCode; the
// reason is in the response body, as "code" and a message that starts with the index.
func transactionFailure(err error) (index int, code string, ok bool) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
		return 0, "", false
	}
	body, _ := io.ReadAll(re.RawResponse.Body)
	m := regexp.MustCompile(`"code":"(\w+)".*?"value":"(\d+):`).FindSubmatch(body)
	if m == nil {
		return 0, "", false
	}
	index, _ = strconv.Atoi(string(m[2]))
	return index, string(m[1]), true
}

// end snippet

// A failed transaction is a 202 ResponseError without ErrorCode, and transactionFailure
// finds the action and the code in its body.
func TestREADMEPitfallTransactionFailure(t *testing.T) {
	srv := tabulatest.NewInProcess(t, nil)
	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}}
	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), opts)
	require.NoError(t, err)
	ctx := context.Background()
	c := svc.NewClient("Orders")
	_, err = c.CreateTable(ctx, nil)
	require.NoError(t, err)
	existing := []byte(`{"PartitionKey":"p","RowKey":"b"}`)
	_, err = c.AddEntity(ctx, existing, nil)
	require.NoError(t, err)

	_, err = c.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeAdd, Entity: []byte(`{"PartitionKey":"p","RowKey":"a"}`)},
		{ActionType: aztables.TransactionTypeAdd, Entity: existing},
	}, nil)
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusAccepted, re.StatusCode)
	assert.Empty(t, re.ErrorCode, "the pitfall: no code where a Go user looks for it")
	index, code, ok := transactionFailure(err)
	require.True(t, ok)
	assert.Equal(t, 1, index)
	assert.Equal(t, "EntityAlreadyExists", code)
	_, _, ok = transactionFailure(errors.New("other"))
	assert.False(t, ok)
}

// Every JSON fixture README.md shows loads: a hand-written fixture's rules are what the
// README teaches.
func TestREADMEFixtures(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Split(string(readme), "\n")
	loaded := 0
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```json" {
			continue
		}
		end := i + 1
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		fixture := strings.Join(lines[i+1:end], "\n")
		db, err := tabula.OpenInMemory(nil)
		require.NoError(t, err)
		p, err := db.Import(context.Background(), strings.NewReader(fixture), nil)
		require.NoError(t, err, "README.md line %d", i+1)
		assert.Positive(t, p.Entities, "README.md line %d", i+1)
		require.NoError(t, db.Close())
		loaded++
		i = end
	}
	assert.Positive(t, loaded, "README.md shows a fixture a person writes")
}
