package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The charts are line charts drawn as SVG by hand, as partition draws its heat map: a few
// lines with points over a grid, with nice round ticks and a legend, need no plotting library.

// series is one line of a chart.
type series struct {
	name string
	x, y []float64
}

func (s *series) add(x, y float64) { s.x, s.y = append(s.x, x), append(s.y, y) }

// points returns the series' points whose coordinates are both finite.
func (s series) points() [][2]float64 {
	var pts [][2]float64
	for i := range min(len(s.x), len(s.y)) {
		if finite(s.x[i]) && finite(s.y[i]) {
			pts = append(pts, [2]float64{s.x[i], s.y[i]})
		}
	}
	return pts
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// panel is one plot area of a chart: its y axis starts at 0 and leaves a quarter of head
// room above the highest point for the legend.
type panel struct {
	yLabel string
	lines  []series
}

// The chart's geometry, in SVG user units.
const (
	chartWidth   = 640
	panelHeight  = 360
	titleHeight  = 28
	marginLeft   = 72
	marginRight  = 20
	marginTop    = 12
	marginBottom = 44
	legendLine   = 16
)

// palette colours the lines in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"}

// axis is a range with round ticks: its ends are ticks.
type axis struct {
	min, max, step float64
}

// niceAxis returns the smallest axis with a step of 1, 2 or 5 times a power of ten that
// covers [lo, hi] in at most eight steps. An empty or inverted range becomes [lo, lo+1].
func niceAxis(lo, hi float64) axis {
	if !finite(lo) || !finite(hi) {
		lo, hi = 0, 1
	}
	if !(hi > lo) {
		hi = lo + max(1, math.Abs(lo))
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag*(1+1e-9) {
			step = m * mag
			break
		}
	}
	// The small tolerance keeps a bound that is already a tick (up to rounding) from
	// growing by a whole step.
	return axis{min: math.Floor(lo/step+1e-9) * step, max: math.Ceil(hi/step-1e-9) * step, step: step}
}

// ticks returns the axis' ticks from min to max.
func (a axis) ticks() []float64 {
	n := int(math.Round((a.max - a.min) / a.step))
	out := make([]float64, n+1)
	for i := range out {
		out[i] = a.min + float64(i)*a.step
	}
	return out
}

// label prints a tick with as many decimals as the step needs, thousands as "k" once the
// axis reaches 10,000, and zero as 0.
func (a axis) label(v float64) string {
	if math.Abs(v) < a.step/2 {
		return "0"
	}
	step, suffix := a.step, ""
	if math.Max(math.Abs(a.min), math.Abs(a.max)) >= 10_000 {
		v, step, suffix = v/1000, step/1000, "k"
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(v, 'f', decimals, 64) + suffix
}

// writeChart draws the panels one above the other, sharing their x axis: the title above
// the first, the x label under the last.
func writeChart(w io.Writer, title, xLabel string, panels []panel) error {
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, p := range panels {
		for _, l := range p.lines {
			for _, pt := range l.points() {
				xlo, xhi = min(xlo, pt[0]), max(xhi, pt[0])
			}
		}
	}
	xa := niceAxis(xlo, xhi)
	height := titleHeight + len(panels)*panelHeight
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartWidth, height)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="20" text-anchor="middle" font-size="14">%s</text>`+"\n", chartWidth/2, html.EscapeString(title))
	for i, p := range panels {
		label := ""
		if i == len(panels)-1 {
			label = xLabel
		}
		p.draw(&b, titleHeight+i*panelHeight, xa, label)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// draw writes the panel whose top edge is at top.
func (p panel) draw(b *strings.Builder, top int, xa axis, xLabel string) {
	left, right := float64(marginLeft), float64(chartWidth-marginRight)
	y0, y1 := float64(top+marginTop), float64(top+panelHeight-marginBottom) // plot area, top and bottom
	yhi := 0.0
	for _, l := range p.lines {
		for _, pt := range l.points() {
			yhi = max(yhi, pt[1])
		}
	}
	ya := niceAxis(0, yhi*1.25)
	px := func(x float64) float64 { return left + (x-xa.min)/(xa.max-xa.min)*(right-left) }
	py := func(y float64) float64 { return y1 - (y-ya.min)/(ya.max-ya.min)*(y1-y0) }

	fmt.Fprintf(b, `<g class="panel">`+"\n")
	for _, x := range xa.ticks() {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", px(x), y0, px(x), y1)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), y1+16, xa.label(x))
	}
	for _, y := range ya.ticks() {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, py(y), right, py(y))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, ya.label(y))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#000"/>`+"\n", left, y0, right-left, y1-y0)
	if xLabel != "" {
		fmt.Fprintf(b, `<text class="xlabel" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+right)/2, y1+36, html.EscapeString(xLabel))
	}
	fmt.Fprintf(b, `<text class="ylabel" transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (y0+y1)/2, html.EscapeString(p.yLabel))

	for i, l := range p.lines {
		colour := palette[i%len(palette)]
		var pts []string
		for _, pt := range l.points() {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(pt[0]), py(pt[1])))
		}
		fmt.Fprintf(b, `<polyline class="line" points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), colour)
		for _, pt := range pts {
			x, y, _ := strings.Cut(pt, ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", x, y, colour)
		}
		// The legend, top left inside the plot area.
		ly := y0 + float64(legendLine*(i+1))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", left+8, ly-4, left+28, ly-4, colour)
		fmt.Fprintf(b, `<text class="legend" x="%.1f" y="%.1f">%s</text>`+"\n", left+34, ly, html.EscapeString(l.name))
	}
	b.WriteString("</g>\n")
}

// chart writes one line chart to the output directory.
func (s *study) chart(file, title, xLabel, yLabel string, lines []series) error {
	return s.save(file, title, xLabel, []panel{{yLabel: yLabel, lines: lines}})
}

// chart2 writes two charts sharing their x axis, one above the other: the study's Figure 15
// has two y axes.
func (s *study) chart2(file, title, xLabel string, top, bottom series) error {
	return s.save(file, title, xLabel, []panel{{yLabel: top.name, lines: []series{top}}, {yLabel: bottom.name, lines: []series{bottom}}})
}

func (s *study) save(file, title, xLabel string, panels []panel) error {
	f, err := os.Create(filepath.Join(s.cfg.out, file+".svg"))
	if err != nil {
		return err
	}
	if err := writeChart(f, title, xLabel, panels); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
