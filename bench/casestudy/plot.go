package main

import (
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one line of a chart.
type series struct {
	name string
	x, y []float64
}

func (s *series) add(x, y float64) { s.x, s.y = append(s.x, x), append(s.y, y) }

func (s series) xys() plotter.XYs {
	pts := make(plotter.XYs, len(s.x))
	for i := range pts {
		pts[i].X, pts[i].Y = s.x[i], s.y[i]
	}
	return pts
}

const chartWidth, chartHeight = 16 * vg.Centimeter, 10 * vg.Centimeter

func newPlot(title, xLabel, yLabel string, lines []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	var vs []any
	for _, l := range lines {
		vs = append(vs, l.name, l.xys())
	}
	if err := plotutil.AddLinePoints(p, vs...); err != nil {
		return nil, err
	}
	// Head room for the legend above the lines.
	p.Y.Max *= 1.25
	return p, nil
}

// chart writes one line chart to the output directory.
func (s *study) chart(file, title, xLabel, yLabel string, lines []series) error {
	p, err := newPlot(title, xLabel, yLabel, lines)
	if err != nil {
		return err
	}
	return p.Save(chartWidth, chartHeight, filepath.Join(s.cfg.out, file+"."+s.cfg.format))
}

// chart2 writes two charts sharing their x axis, one above the other: the seed's Figure 15
// has two y axes.
func (s *study) chart2(file, title, xLabel string, top, bottom series) error {
	upper, err := newPlot(title, "", top.name, []series{top})
	if err != nil {
		return err
	}
	lower, err := newPlot("", xLabel, bottom.name, []series{bottom})
	if err != nil {
		return err
	}
	lower.Y.Max = max(lower.Y.Max, 1)
	img, err := draw.NewFormattedCanvas(chartWidth, 1.6*chartHeight, s.cfg.format)
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{upper}, {lower}}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Millimeter}
	canvases := plot.Align(plots, tiles, draw.New(img))
	upper.Draw(canvases[0][0])
	lower.Draw(canvases[1][0])
	f, err := os.Create(filepath.Join(s.cfg.out, file+"."+s.cfg.format))
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
