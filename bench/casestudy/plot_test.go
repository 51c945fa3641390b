package main

import (
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNiceAxis(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   axis
		labels []string
	}{
		{1, 100, axis{0, 100, 20}, []string{"0", "20", "40", "60", "80", "100"}},
		{1, 32, axis{0, 35, 5}, nil},
		{10, 50, axis{10, 50, 5}, nil},
		{0, 1.25, axis{0, 1.4, 0.2}, []string{"0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4"}},
		{0, 0.03, axis{0, 0.03, 0.005}, nil},
		{0, 250_000, axis{0, 250_000, 50_000}, []string{"0", "50k", "100k", "150k", "200k", "250k"}},
		{0, 12_500, axis{0, 14_000, 2_000}, []string{"0", "2k", "4k", "6k", "8k", "10k", "12k", "14k"}},
		{0, 0, axis{0, 1, 0.2}, nil},                      // nothing measured: still an axis
		{5, 5, axis{5, 10, 1}, nil},                       // one point
		{math.Inf(1), math.Inf(-1), axis{0, 1, 0.2}, nil}, // no points at all
		{-3, 7, axis{-4, 8, 2}, []string{"-4", "-2", "0", "2", "4", "6", "8"}},
	} {
		got := niceAxis(tc.lo, tc.hi)
		assert.InDelta(t, tc.want.min, got.min, 1e-9, "niceAxis(%v, %v).min", tc.lo, tc.hi)
		assert.InDelta(t, tc.want.max, got.max, 1e-9, "niceAxis(%v, %v).max", tc.lo, tc.hi)
		assert.InDelta(t, tc.want.step, got.step, 1e-12, "niceAxis(%v, %v).step", tc.lo, tc.hi)
		ticks := got.ticks()
		assert.InDelta(t, got.min, ticks[0], 1e-9)
		assert.InDelta(t, got.max, ticks[len(ticks)-1], 1e-9)
		assert.LessOrEqual(t, len(ticks), 9, "niceAxis(%v, %v) has too many ticks", tc.lo, tc.hi)
		if tc.labels != nil {
			var labels []string
			for _, v := range ticks {
				labels = append(labels, got.label(v))
			}
			assert.Equal(t, tc.labels, labels, "niceAxis(%v, %v) labels", tc.lo, tc.hi)
		}
	}
}

// element is what the tests read back from a chart.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG reads the chart as XML, failing the test if it is not well formed.
func parseSVG(t *testing.T, svg string) []element {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var out []element
	open := -1 // the element whose text is being read
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err, "chart is not well-formed XML:\n%s", svg)
		switch tok := tok.(type) {
		case xml.StartElement:
			e := element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			open = len(out) - 1
		case xml.EndElement:
			open = -1
		case xml.CharData:
			if open >= 0 {
				out[open].text += string(tok)
			}
		}
	}
}

func byName(els []element, name string) []element {
	var out []element
	for _, e := range els {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

func withClass(els []element, class string) []element {
	var out []element
	for _, e := range els {
		if e.attrs["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

// polyline reads a line's points.
func polyline(t *testing.T, e element) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(e.attrs["points"]) {
		xs, ys, ok := strings.Cut(p, ",")
		require.True(t, ok, "point %q", p)
		x, err := strconv.ParseFloat(xs, 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(ys, 64)
		require.NoError(t, err)
		out = append(out, [2]float64{x, y})
	}
	return out
}

func TestWriteChart(t *testing.T) {
	up := series{name: "one <core> & more"}
	for _, p := range [][2]float64{{1, 10}, {10, 40}, {100, 80}} {
		up.add(p[0], p[1])
	}
	flat := series{name: "flat", x: []float64{1, 100}, y: []float64{20, 20}}
	var b strings.Builder
	require.NoError(t, writeChart(&b, `Figure 5: "latency" <ms>`, "batch size", []panel{{yLabel: "ms per batch", lines: []series{up, flat}}}))
	els := parseSVG(t, b.String())

	require.Equal(t, "svg", els[0].name)
	titles := withClass(els, "title")
	require.Len(t, titles, 1)
	assert.Equal(t, `Figure 5: "latency" <ms>`, titles[0].text)
	assert.Equal(t, "batch size", withClass(els, "xlabel")[0].text)
	assert.Equal(t, "ms per batch", withClass(els, "ylabel")[0].text)
	var legend []string
	for _, e := range withClass(els, "legend") {
		legend = append(legend, e.text)
	}
	assert.Equal(t, []string{"one <core> & more", "flat"}, legend)

	lines := withClass(els, "line")
	require.Len(t, lines, 2)
	assert.NotEqual(t, lines[0].attrs["stroke"], lines[1].attrs["stroke"], "two lines, one colour")
	assert.Len(t, byName(els, "circle"), 5, "one marker per point")

	// The plot area is the frame; every point lies in it, x grows to the right and y
	// upwards, and the highest point leaves head room for the legend.
	var frame element
	for _, r := range byName(els, "rect") {
		if r.attrs["stroke"] != "" {
			frame = r
		}
	}
	num := func(s string) float64 { v, err := strconv.ParseFloat(s, 64); require.NoError(t, err); return v }
	fx, fy, fw, fh := num(frame.attrs["x"]), num(frame.attrs["y"]), num(frame.attrs["width"]), num(frame.attrs["height"])
	pts := polyline(t, lines[0])
	require.Len(t, pts, 3)
	for _, p := range pts {
		assert.True(t, p[0] >= fx && p[0] <= fx+fw && p[1] >= fy && p[1] <= fy+fh, "point %v outside the frame", p)
	}
	assert.Less(t, pts[0][0], pts[1][0])
	assert.Less(t, pts[1][0], pts[2][0])
	assert.Greater(t, pts[0][1], pts[1][1])
	assert.Greater(t, pts[1][1], pts[2][1])
	assert.Greater(t, pts[2][1], fy+fh*0.1, "no head room above the highest point")
	assert.InDelta(t, fx, pts[0][0], fw*0.02, "x = 1 should sit near the left edge (axis from 0)")
	assert.InDelta(t, fx+fw, pts[2][0], 1e-6, "x = 100 is the axis' end")
	flatPts := polyline(t, lines[1])
	assert.Equal(t, flatPts[0][1], flatPts[1][1], "a flat series is drawn flat")
}

func TestWriteChartTwoPanels(t *testing.T) {
	ok := series{name: "successful entities/s", x: []float64{10, 20, 30}, y: []float64{1900, 2000, 1950}}
	pct := series{name: "throttled %", x: []float64{10, 20, 30}, y: []float64{0, 0, 0}} // nothing throttled
	var b strings.Builder
	require.NoError(t, writeChart(&b, "Figure 15", "goroutines", []panel{{yLabel: ok.name, lines: []series{ok}}, {yLabel: pct.name, lines: []series{pct}}}))
	els := parseSVG(t, b.String())
	assert.Len(t, withClass(els, "panel"), 2)
	assert.Len(t, withClass(els, "title"), 1)
	assert.Len(t, withClass(els, "xlabel"), 1, "the x label goes under the last panel only")
	lines := withClass(els, "line")
	require.Len(t, lines, 2)
	top, bottom := polyline(t, lines[0]), polyline(t, lines[1])
	for i := range top {
		assert.Equal(t, top[i][0], bottom[i][0], "the panels share their x axis")
		assert.Less(t, top[i][1], bottom[i][1], "the second panel is below the first")
	}
	assert.NotContains(t, b.String(), "NaN")
}

func TestWriteChartNoData(t *testing.T) {
	nan := series{name: "broken", x: []float64{1, math.NaN(), 3}, y: []float64{math.Inf(1), 2, 3}}
	var b strings.Builder
	require.NoError(t, writeChart(&b, "empty", "x", []panel{{yLabel: "y", lines: []series{{name: "none"}, nan}}}))
	els := parseSVG(t, b.String())
	lines := withClass(els, "line")
	require.Len(t, lines, 2)
	assert.Empty(t, polyline(t, lines[0]))
	assert.Equal(t, 1, len(polyline(t, lines[1])), "only the finite point is drawn")
	assert.NotContains(t, b.String(), "NaN")
	assert.NotContains(t, b.String(), "Inf")
}
