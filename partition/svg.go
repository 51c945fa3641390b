package partition

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The heat map's geometry, in SVG user units (pixels at 100%).
const (
	svgWidth    = 960
	svgMargin   = 16
	svgBarWidth = svgWidth - 2*svgMargin
	svgMinRange = 4 // the narrowest a range is drawn, however few entities it holds
	svgLabelMin = 70
)

// HeatColor is the colour of a load against its target, as the heat map draws it: ratio is
// entities/s divided by the per-PartitionKey target (2,000/s by default). Cool green at
// rest, yellow at half the target, red at the target and beyond. The console uses the same
// scale.
func HeatColor(ratio float64) string {
	if !(ratio > 0) {
		return "#e8eef2"
	}
	type stop struct {
		at      float64
		r, g, b float64
	}
	stops := []stop{{0, 0xc8, 0xe6, 0xc9}, {0.5, 0xfd, 0xd8, 0x35}, {1, 0xe5, 0x39, 0x35}}
	ratio = min(ratio, 1)
	for i := 1; i < len(stops); i++ {
		lo, hi := stops[i-1], stops[i]
		if ratio <= hi.at {
			f := (ratio - lo.at) / (hi.at - lo.at)
			mix := func(a, b float64) int { return int(math.Round(a + (b-a)*f)) }
			return fmt.Sprintf("#%02x%02x%02x", mix(lo.r, hi.r), mix(lo.g, hi.g), mix(lo.b, hi.b))
		}
	}
	return "#e53935"
}

// Hot reports whether a range or key's recent rate is at its target or above, the load the
// service's guidance says a partition can take.
func (r Report) Hot(rate float64) bool {
	return r.PartitionRate > 0 && rate >= r.PartitionRate
}

// WriteSVG draws the report as an SVG heat map: the service's throttling over the last
// minutes, then for each table its range partitions in key order, each as wide as its share
// of the table's entities and coloured by its recent entities/s against the per-PartitionKey
// target (see HeatColor), with its hottest PartitionKeys. Hot ranges carry the class "hot"
// and throttled ones "throttled". Every key is escaped; the output depends only on r.
func (r Report) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	y := svgMargin
	var body strings.Builder
	text := func(x, y int, class, s string) {
		fmt.Fprintf(&body, `<text x="%d" y="%d" class="%s">%s</text>`+"\n", x, y, class, xmlEscape(s))
	}

	y += 14
	text(svgMargin, y, "title", fmt.Sprintf("Tabula heat report at %s", r.At.UTC().Format(time.RFC3339)))
	y += 18
	text(svgMargin, y, "note", fmt.Sprintf("limits %s: %s entities/s per PartitionKey, %s entities/s per account · %s, %s, %s/s offered",
		r.Mode, num(r.PartitionRate), num(r.AccountRate), counted(len(r.Tables), "table"), counted(r.Entities, "entity"), rateText(r.Rate)))
	y += 12
	y = r.svgThrottling(&body, y)

	for _, t := range r.Tables {
		y += 26
		text(svgMargin, y, "table", fmt.Sprintf("table %s: %s, %s, %s/s, %d throttled, %s, %s",
			t.Name, counted(len(t.Ranges), "range partition"), counted(t.Entities, "entity"), rateText(t.Rate), t.Throttled,
			counted(t.Splits, "split"), counted(t.Merges, "merge")))
		y += 8
		y = r.svgRanges(&body, t, y)
		if len(t.HotKeys) > 0 {
			y += 16
			var parts []string
			for _, k := range t.HotKeys {
				p := fmt.Sprintf("%s %s/s", strconv.QuoteToASCII(k.PartitionKey), rateText(k.Rate))
				if k.Throttled > 0 {
					p += fmt.Sprintf(" (%d throttled)", k.Throttled)
				}
				parts = append(parts, p)
			}
			text(svgMargin, y, "note", "hottest PartitionKeys: "+strings.Join(parts, ", "))
		}
	}
	y += 24
	y = svgLegend(&body, y)
	height := y + svgMargin

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n",
		svgWidth, height, svgWidth, height)
	bw.WriteString(`<style>.title{font-size:16px;font-weight:bold}.table{font-size:13px;font-weight:bold}.note{font-size:11px;fill:#333}` +
		`.label{font-size:10px;fill:#111}.range{stroke:#fff;stroke-width:1}.range.throttled{stroke:#7b1fa2;stroke-width:2}` +
		`.bar-p{fill:#e53935}.bar-a{fill:#7b1fa2}.axis{stroke:#999;stroke-width:1}</style>` + "\n")
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", svgWidth, height)
	bw.WriteString(body.String())
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// svgThrottling draws the service's throttled entities per interval, stacked by limit.
func (r Report) svgThrottling(b *strings.Builder, y int) int {
	const h = 48
	var peak int64
	for i := range HistoryLen {
		peak = max(peak, at(r.ThrottledPartitionHistory, i)+at(r.ThrottledAccountHistory, i))
	}
	y += 14
	fmt.Fprintf(b, `<text x="%d" y="%d" class="note">throttled entities per %d s over the last %d minutes (peak %d): %d by PartitionKey limits (red), %d by the account limit (purple)</text>`+"\n",
		svgMargin, y, int(HistoryInterval/time.Second), int(HistoryInterval*HistoryLen/time.Minute), peak, r.ThrottledPartition, r.ThrottledAccount)
	y += 6
	base := y + h
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`+"\n", svgMargin, base, svgMargin+svgBarWidth, base)
	step := float64(svgBarWidth) / HistoryLen
	for i := range HistoryLen {
		p, a := at(r.ThrottledPartitionHistory, i), at(r.ThrottledAccountHistory, i)
		if p+a == 0 {
			continue
		}
		x := float64(svgMargin) + float64(i)*step + 1
		ago := time.Duration(HistoryLen-1-i) * HistoryInterval
		hp := float64(h) * float64(p) / float64(peak)
		ha := float64(h) * float64(a) / float64(peak)
		fmt.Fprintf(b, `<g><title>%s ago: %d by PartitionKey limits, %d by the account limit</title>`, ago, p, a)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="bar-p"/>`, x, float64(base)-hp, step-2, hp)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="bar-a"/></g>`+"\n", x, float64(base)-hp-ha, step-2, ha)
	}
	if peak == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" class="note">none</text>`+"\n", svgMargin+4, base-4)
	}
	return base
}

// svgRanges draws one table's range partitions as a bar in key order.
func (r Report) svgRanges(b *strings.Builder, t TableReport, y int) int {
	const h = 44
	widths := rangeWidths(t.Ranges, svgBarWidth)
	x := float64(svgMargin)
	for i, rg := range t.Ranges {
		class := "range"
		if r.Hot(rg.Rate) {
			class += " hot"
		}
		if rg.Throttled > 0 {
			class += " throttled"
		}
		ratio := 0.0
		if r.PartitionRate > 0 {
			ratio = rg.Rate / r.PartitionRate
		}
		wd := widths[i]
		fmt.Fprintf(b, `<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" class="%s"/>`,
			xmlEscape(rangeTitle(rg)), x, y, wd, h, HeatColor(ratio), class)
		if wd >= svgLabelMin {
			low := "(start)"
			if rg.Low != "" {
				low = strconv.QuoteToASCII(rg.Low)
			}
			low = cut(low, int(wd/6))
			fmt.Fprintf(b, `<text x="%.1f" y="%d" class="label">%s</text>`, x+4, y+16, xmlEscape(low))
			fmt.Fprintf(b, `<text x="%.1f" y="%d" class="label">%s/s</text>`, x+4, y+32, rateText(rg.Rate))
		}
		b.WriteString("</g>\n")
		x += wd
	}
	return y + h
}

// rangeWidths shares width among ranges by entities, each at least svgMinRange wide; ranges
// of a table without entities share it equally.
func rangeWidths(rs []RangeInfo, width float64) []float64 {
	out := make([]float64, len(rs))
	if len(rs) == 0 {
		return out
	}
	var total int64
	for _, r := range rs {
		total += max(r.Entities, 0)
	}
	free := width - float64(len(rs))*svgMinRange
	if free < 0 {
		free = 0
	}
	for i, r := range rs {
		share := 1 / float64(len(rs))
		if total > 0 {
			share = float64(max(r.Entities, 0)) / float64(total)
		}
		out[i] = svgMinRange + free*share
	}
	return out
}

func rangeTitle(rg RangeInfo) string {
	low, high := "(start)", "(end)"
	if rg.Low != "" {
		low = strconv.QuoteToASCII(rg.Low)
	}
	if rg.High != "" {
		high = strconv.QuoteToASCII(rg.High)
	}
	s := fmt.Sprintf("[%s, %s): %s, %s, %s/s, %d offered, %d throttled, %s",
		low, high, counted(rg.Entities, "entity"), size(rg.Bytes), rateText(rg.Rate), rg.Offered, rg.Throttled, counted(rg.Splits, "split"))
	if rg.Offline {
		s += ", offline"
	}
	return s
}

func svgLegend(b *strings.Builder, y int) int {
	x := svgMargin
	fmt.Fprintf(b, `<text x="%d" y="%d" class="note">entities/s against the per-PartitionKey target:</text>`+"\n", x, y)
	x += 270
	for _, s := range []struct {
		ratio float64
		label string
	}{{0, "idle"}, {0.25, "25%"}, {0.5, "50%"}, {0.75, "75%"}, {1, "100% (hot)"}} {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" class="note">%s</text>`+"\n",
			x, y-10, HeatColor(s.ratio), x+16, y, s.label)
		x += 30 + 7*len(s.label)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="#fff" class="range throttled"/><text x="%d" y="%d" class="note">throttled</text>`+"\n",
		x, y-10, x+16, y)
	return y
}

func at(s []int64, i int) int64 {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func rateText(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// cut shortens s to n characters (at least 4), marking the cut with an ellipsis.
func cut(s string, n int) string {
	n = max(n, 4)
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// xmlEscape escapes text for SVG. Keys reach it quoted (strconv.QuoteToASCII), so they
// hold no control characters XML forbids.
func xmlEscape(s string) string { return xmlEscaper.Replace(s) }
