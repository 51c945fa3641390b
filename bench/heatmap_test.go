package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula"
)

// saveHeatMap writes db's heat report as an SVG heat map named after the benchmark into
// $TABULA_BENCH_HEATMAPS, when that is set, so a run's numbers come with a picture of which
// range partitions were hot and what was throttled:
//
//	TABULA_BENCH_HEATMAPS=/tmp/heat go test ./bench -run '^$' -bench Partitions -benchtime 2s
func saveHeatMap(b *testing.B, db *tabula.DB) {
	dir := os.Getenv("TABULA_BENCH_HEATMAPS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(b.Name()) + ".svg"
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		b.Fatal(err)
	}
	if err := db.HeatReport().WriteSVG(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
