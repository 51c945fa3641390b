package tabula_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// README.md's typed-entities snippets (TestREADMESnippets checks the text; these run it).

// snippet: typed-struct
type Film struct {
	Genre  string `tabula:"PartitionKey"`
	Title  string `tabula:"RowKey"`
	ETag   tabula.ETag
	Rating float64
	Year   int32             `tabula:"ReleaseYear"`
	Rest   tabula.Properties // what the struct does not name, kept through a Replace
}

// end snippet

func TestREADMETyped(t *testing.T) {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	defer db.Close()
	movies, err := db.CreateTable(ctx, "Movies")
	require.NoError(t, err)
	require.NoError(t, readmeTyped(ctx, movies))
	e, err := movies.Get(ctx, "Action", "Heat")
	require.NoError(t, err)
	require.Equal(t, tabula.Double(5), e.Properties["Rating"])
}

func readmeTyped(ctx context.Context, movies tabula.TableAPI) error {
	// snippet: typed
	_, err := tabula.InsertAs(ctx, movies, Film{Genre: "Action", Title: "Heat", Rating: 4.5, Year: 1995})
	if err != nil {
		return err
	}
	f, err := tabula.GetAs[Film](ctx, movies, "Action", "Heat")
	if err != nil {
		return err
	}
	f.Rating = 5
	_, err = tabula.UpdateAs(ctx, movies, f, tabula.Replace, f.ETag)
	if err != nil {
		return err
	}
	for f, err := range tabula.QueryAs[Film](ctx, movies, tabula.Query{Filter: "Rating ge 4.0"}) {
		if err != nil {
			return err
		}
		_ = f.Title
	}
	// end snippet
	return nil
}

// snippet: typed-fake
func TestFilmArranged(t *testing.T) {
	srv := tabulatest.NewServer(t, nil)
	ctx := context.Background()
	films, err := srv.DB.CreateTable(ctx, "Films")
	if err != nil {
		t.Fatal(err)
	}
	// Arrange the data the code under test reads, and check what it wrote, as structs.
	if _, err := tabula.InsertAs(ctx, films, Film{Genre: "Drama", Title: "Amour", Year: 2012}); err != nil {
		t.Fatal(err)
	}
	// ... run the code under test against srv.ConnectionString() ...
	f, err := tabula.GetAs[Film](ctx, films, "Drama", "Amour")
	if err != nil || f.Year != 2012 {
		t.Fatalf("stored %+v, %v", f, err)
	}
}

// end snippet
