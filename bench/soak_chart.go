package bench

import (
	"fmt"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartPanel is one panel of a chart: its axis label and its lines.
type chartPanel struct {
	ylabel string
	lines  []series
}

// series is one line of a chart panel.
type series struct {
	name  string
	value func(SoakInterval) float64
}

// WriteSoakChart draws rep as a column of panels sharing the time axis
// (throughput, pickup latency, dead tuples or WAL size, and size on disk),
// the held horizon shaded, and writes it to w as "png" or "svg".
func WriteSoakChart(w io.Writer, rep SoakReport, format, title string) error {
	format = strings.ToLower(format)
	if format != "png" && format != "svg" {
		return fmt.Errorf("bench: chart format %q: use png or svg", format)
	}
	const mib = 1 << 20
	panels := []chartPanel{
		{"jobs/s", []series{{"done", func(iv SoakInterval) float64 { return iv.PerSec }}}},
		{"pickup ms", []series{
			{"p50", func(iv SoakInterval) float64 { return iv.PickupP50MS }},
			{"p99", func(iv SoakInterval) float64 { return iv.PickupP99MS }}}},
	}
	if len(rep.Intervals) > 0 && len(rep.Intervals[0].Storage.Relations) > 0 {
		panels = append(panels,
			chartPanel{"dead tuples", tableSeries(rep, func(r Relation) float64 { return float64(r.DeadTuples) })},
			chartPanel{"MiB (with indexes)", tableSeries(rep, func(r Relation) float64 { return float64(r.TotalBytes) / mib })})
	} else {
		panels = append(panels, chartPanel{"MiB", []series{
			{"WAL", func(iv SoakInterval) float64 { return float64(iv.Storage.WALBytes) / mib }},
			{"database", func(iv SoakInterval) float64 { return float64(iv.Storage.DBBytes) / mib }}}})
	}

	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p, err := panel(rep, pn.ylabel, pn.lines)
		if err != nil {
			return err
		}
		if i == 0 {
			p.Title.Text = title
		}
		if i == len(panels)-1 {
			p.X.Label.Text = "seconds (shaded: horizon held)"
		}
		plots[i] = []*plot.Plot{p}
	}
	width, height := 22*vg.Centimeter, vg.Length(len(panels))*6*vg.Centimeter
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if format == "svg" {
		c = vgsvg.New(width, height)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Millimeter * 3, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := c.WriteTo(w)
	return err
}

// tableSeries makes one line per stint table of the last sample, each
// partitioned table's partitions summed under its name.
func tableSeries(rep SoakReport, value func(Relation) float64) []series {
	var out []series
	seen := map[string]bool{}
	for _, r := range rep.Intervals[len(rep.Intervals)-1].Storage.Relations {
		name := r.Table()
		if r.Kind != "table" || seen[name] || name == "schema_migrations" || name == "leaders" {
			continue
		}
		seen[name] = true
		out = append(out, series{name, func(iv SoakInterval) float64 {
			sum := 0.0
			for _, x := range iv.Storage.Relations {
				if x.Kind == "table" && x.Table() == name {
					sum += value(x)
				}
			}
			return sum
		}})
	}
	return out
}

var palette = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 148, G: 103, B: 189, A: 255}, color.RGBA{R: 140, G: 86, B: 75, A: 255},
}

// panel is one chart panel: lines against the intervals' ends, over a
// shaded band where the horizon was held.
func panel(rep SoakReport, ylabel string, lines []series) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.X.Min = 0
	ymax := 1.0
	for _, l := range lines {
		for _, iv := range rep.Intervals {
			ymax = max(ymax, l.value(iv))
		}
	}
	ymax *= 1.1
	p.Y.Max = ymax
	band, err := plotter.NewPolygon(plotter.XYs{{X: rep.HeldFrom, Y: 0}, {X: rep.HeldUntil, Y: 0}, {X: rep.HeldUntil, Y: ymax}, {X: rep.HeldFrom, Y: ymax}})
	if err != nil {
		return nil, err
	}
	band.Color = color.Gray{Y: 225}
	band.LineStyle.Width = 0
	p.Add(band)
	for i, l := range lines {
		xys := make(plotter.XYs, len(rep.Intervals))
		for j, iv := range rep.Intervals {
			xys[j] = plotter.XY{X: iv.End, Y: l.value(iv)}
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(l.name, line)
	}
	p.Add(plotter.NewGrid())
	return p, nil
}
