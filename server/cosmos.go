package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// The rules of the Cosmos DB for Table flavour that only the wire can apply (`tabula serve
// --flavor cosmos`); the root package's flavor.go lists them with the recordings they come
// from, beside the rules the engine applies.

// cosmos says whether the server speaks for a DB of the Cosmos DB for Table flavour.
func (c *call) cosmos() bool { return c.s.db.Flavor() == tabula.FlavorCosmos }

// Cosmos DB's 501s, as recorded.
var (
	errCosmosNotSupported = tabula.NewError("NotImplemented", http.StatusNotImplemented,
		"The requested operation is not supported.")
	errCosmosKeyRangeSAS = tabula.NewError("NotImplemented", http.StatusNotImplemented,
		"Shared access signature with PartitionKey or RowKey are not supported")
)

// cosmosSASError refuses, on Cosmos DB, a table SAS limited to a key range, whatever the
// request: Cosmos DB does not serve them.
func (c *call) cosmosSASError(g *grant) *tabula.Error {
	if g == nil || g.account || !c.cosmos() || g.startPK+g.startRK+g.endPK+g.endRK == "" {
		return nil
	}
	return withDetail(errCosmosKeyRangeSAS, "the SAS has spk, srk, epk or erk (tabula serve --flavor cosmos)")
}

// foldCaseDuplicates drops each property of a request body, in its order, whose name
// differs only in letter case from an earlier one's: Cosmos DB keeps the first.
func foldCaseDuplicates(props []wire.Property) []wire.Property {
	if len(props) < 2 {
		return props
	}
	kept := make([]wire.Property, 0, len(props))
	for _, p := range props {
		if !slices.ContainsFunc(kept, func(q wire.Property) bool { return strings.EqualFold(p.Name, q.Name) }) {
			kept = append(kept, p)
		}
	}
	return kept
}
