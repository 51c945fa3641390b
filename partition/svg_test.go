package partition

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/heatmap.svg")

// fixedReport is a report with one hot and throttled range, a key that must be escaped, a
// table without entities and throttling in the last minutes.
func fixedReport() Report {
	hist := func(vals map[int]int64) []int64 {
		s := make([]int64, HistoryLen)
		for i, v := range vals {
			s[i] = v
		}
		return s
	}
	return Report{
		At:   time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC),
		Mode: LimitEnforce, PartitionRate: 2000, AccountRate: 20000,
		Entities: 12000, Bytes: 12 << 20, Rate: 2450,
		Offered: 150000, ThrottledPartition: 4200, ThrottledAccount: 300,
		ThrottledPartitionHistory: hist(map[int]int64{26: 1200, 27: 1500, 28: 900, 29: 600}),
		ThrottledAccountHistory:   hist(map[int]int64{27: 300}),
		Tables: []TableReport{{
			Name: "orders", Entities: 12000, Bytes: 12 << 20, Rate: 2450, Offered: 150000, Throttled: 4200, Splits: 2,
			Ranges: []RangeInfo{
				{Low: "", High: "2024-01", Entities: 8000, Bytes: 8 << 20, Rate: 50, Offered: 9000},
				{Low: "2024-01", High: "<b>&\"x\"</b>", Entities: 3000, Bytes: 3 << 20, Rate: 2400, Offered: 140000, Throttled: 4200, Splits: 1,
					ThrottledHistory: hist(map[int]int64{26: 1200, 27: 1500, 28: 900, 29: 600})},
				{Low: "<b>&\"x\"</b>", Entities: 1000, Bytes: 1 << 20, Rate: 1000, Offered: 1000, Splits: 1},
			},
			HotKeys: []KeyInfo{{PartitionKey: "2024-01-07", Rate: 2400, Offered: 140000, Throttled: 4200}},
		}, {
			Name:   "empty",
			Ranges: []RangeInfo{{}},
		}},
	}
}

func TestWriteSVGGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, fixedReport().WriteSVG(&buf))
	golden := filepath.Join("testdata", "heatmap.svg")
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), buf.String(), "run go test ./partition -run TestWriteSVGGolden -update after a deliberate change, and look at the file")
}

func TestWriteSVGIsWellFormedAndEscaped(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, fixedReport().WriteSVG(&buf))
	out := buf.String()
	assert.NotContains(t, out, "<b>", "keys are escaped")

	// A strict XML parse: escaping mistakes and unbalanced tags fail here.
	dec := xml.NewDecoder(strings.NewReader(out))
	var ranges, hot, throttled int
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			for _, a := range se.Attr {
				if a.Name.Local != "class" || !strings.HasPrefix(a.Value, "range") {
					continue
				}
				ranges++
				if strings.Contains(a.Value, " hot") {
					hot++
				}
				if strings.Contains(a.Value, "throttled") {
					throttled++
				}
			}
		}
	}
	assert.Equal(t, 5, ranges, "four ranges and the legend's sample")
	assert.Equal(t, 1, hot, "only the range at 2,400/s against 2,000/s is hot")
	assert.Equal(t, 2, throttled, "the throttled range and the legend's sample")
}

func TestHeatColor(t *testing.T) {
	assert.Equal(t, "#e8eef2", HeatColor(0))
	assert.Equal(t, "#c8e6c9", HeatColor(1e-9))
	assert.Equal(t, "#fdd835", HeatColor(0.5))
	assert.Equal(t, "#e53935", HeatColor(1))
	assert.Equal(t, "#e53935", HeatColor(7))
}
