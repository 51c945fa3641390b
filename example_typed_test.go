package tabula_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/tabuladb/tabula"
)

// Movie is an entity as a Go struct: the keys and the version by tag and by name, the
// properties by field, and a catch-all for the properties the struct does not name.
type Movie struct {
	Genre  string `tabula:"PartitionKey"`
	Title  string `tabula:"RowKey"`
	ETag   tabula.ETag
	Rating float64
	Year   int32      `tabula:"ReleaseYear"`
	Seen   *time.Time // nil: not written, and absent on reads
	Rest   tabula.Properties
}

// Structs in and out of an embedded table: the read decodes the stored record straight into
// the struct, and the update is conditional on the ETag it read.
func ExampleGetAs() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")
	if _, err := tabula.InsertAs(ctx, movies, Movie{Genre: "Action", Title: "Heat", Rating: 4.5, Year: 1995}); err != nil {
		log.Fatal(err)
	}
	// Another program adds a property this one does not know.
	_, err := movies.Update(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Heat",
		Properties: tabula.Properties{"Director": tabula.String("Michael Mann")}}, tabula.Merge, tabula.AnyETag)
	if err != nil {
		log.Fatal(err)
	}

	m, err := tabula.GetAs[Movie](ctx, movies, "Action", "Heat")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Title, m.Year, m.Rating, m.Seen, m.Rest)
	m.Rating = 5
	if _, err := tabula.UpdateAs(ctx, movies, m, tabula.Replace, m.ETag); err != nil {
		log.Fatal(err)
	}
	_, err = tabula.UpdateAs(ctx, movies, m, tabula.Replace, m.ETag) // m.ETag is stale now
	fmt.Println(errors.Is(err, tabula.ErrUpdateConditionNotSatisfied))
	e, _ := movies.Get(ctx, "Action", "Heat") // the Replace kept what the catch-all held
	fmt.Println(e.Properties["Rating"], e.Properties["Director"])
	// Output:
	// Heat 1995 4.5 <nil> map[Director:Michael Mann]
	// true
	// 5 Michael Mann
}

// A query's entities as structs, page after page.
func ExampleQueryAs() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")
	for i, title := range []string{"Alien", "Heat", "Ronin"} {
		if _, err := tabula.InsertAs(ctx, movies, Movie{Genre: "Action", Title: title, Rating: 3.5 + float64(i)/2}); err != nil {
			log.Fatal(err)
		}
	}
	for m, err := range tabula.QueryAs[Movie](ctx, movies, tabula.Query{Filter: "Rating ge 4.0"}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(m.Title, m.Rating)
	}
	// Output:
	// Heat 4
	// Ronin 4.5
}

// Structs in an entity group transaction, and a Retrieve's entity as a struct.
func ExampleInsertActionOf() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")
	var actions []tabula.Action
	for _, m := range []Movie{{Genre: "Drama", Title: "Amour"}, {Genre: "Drama", Title: "Babel"}} {
		a, err := tabula.InsertActionOf(m)
		if err != nil {
			log.Fatal(err)
		}
		actions = append(actions, a)
	}
	if _, err := movies.SubmitTransaction(ctx, actions); err != nil {
		log.Fatal(err)
	}
	res, err := movies.SubmitTransaction(ctx, []tabula.Action{tabula.RetrieveAction("Drama", "Babel")})
	if err != nil {
		log.Fatal(err)
	}
	m, err := tabula.EntityAs[Movie](*res[0].Entity)
	fmt.Println(m.Title, m.ETag == res[0].ETag, err)
	// Output:
	// Babel true <nil>
}
