package dashboard

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-conformance/ccm-conformance/labels"
)

// latencyTitles name the latencies the suites record and the harness's
// own timings of a run.
var latencyTitles = map[string]string{
	labels.EntryLoadBalancerReady: "Time to load-balancer ready",
	labels.EntryNodeInitialized:   "Time to node initialized",
	SetupTiming:                   "Setup time (the slowest world)",
	ObservationLagP99:             "Observation lag of watched waits, p99",
}

// Geometry of a chart, in SVG user units.
const (
	chartWidth   = 720
	chartHeight  = 260
	chartLeft    = 64
	chartRight   = 16
	chartTop     = 16
	chartBottom  = 44
	chartYTicks  = 4
	chartXTicks  = 4
	chartPalette = 8
)

// Chart is one latency (or harness timing) across runs: a line per
// provider, x the run's start, y the latency.
type Chart struct {
	Name   string
	Title  string
	Width  int
	Height int
	// Plot area.
	Left, Top, Right, Bottom, PlotWidth, PlotHeight int
	Series                                          []*Series
	YTicks, XTicks                                  []Tick
}

// Series is one provider's line.
type Series struct {
	Provider string
	// Color is one of chartPalette classes (c0..c7).
	Color  string
	Points []Point
	// Polyline is the SVG points attribute of the line.
	Polyline string
}

// Point is one run on a chart.
type Point struct {
	X, Y    float64
	Seconds float64
	Label   string
	Link    string
}

// Tick is an axis mark.
type Tick struct {
	Pos   float64
	Label string
	// Anchor is the label's text-anchor: the first and last time labels
	// stay inside the chart.
	Anchor string
}

func buildCharts(rows []*Row) []*Chart {
	type sample struct {
		provider string
		run      *RunPage
		seconds  float64
	}
	byName := map[string][]sample{}
	for _, row := range rows {
		for _, r := range row.Runs {
			for _, l := range r.Latencies {
				byName[l.Name] = append(byName[l.Name], sample{row.Provider, r, l.Seconds})
			}
			for _, l := range r.Timings {
				byName[l.Name] = append(byName[l.Name], sample{row.Provider, r, l.Seconds})
			}
		}
	}
	// The suites' latencies first, by name, then the harness's timings.
	var names, harness []string
	for n := range byName {
		if n == SetupTiming || n == ObservationLagP99 {
			harness = append(harness, n)
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	sort.Strings(harness)
	names = append(names, harness...)
	colors := map[string]string{}
	for i, row := range rows {
		colors[row.Provider] = "c" + strconv.Itoa(i%chartPalette)
	}

	var charts []*Chart
	for _, name := range names {
		samples := byName[name]
		c := &Chart{
			Name: name, Title: latencyTitles[name],
			Width: chartWidth, Height: chartHeight,
			Left: chartLeft, Top: chartTop,
			Right: chartWidth - chartRight, Bottom: chartHeight - chartBottom,
			PlotWidth: chartWidth - chartLeft - chartRight, PlotHeight: chartHeight - chartTop - chartBottom,
		}
		if c.Title == "" {
			c.Title = name
		}
		tmin, tmax := samples[0].run.Started, samples[0].run.Started
		vmax := 0.0
		for _, s := range samples {
			if s.run.Started.Before(tmin) {
				tmin = s.run.Started
			}
			if s.run.Started.After(tmax) {
				tmax = s.run.Started
			}
			vmax = math.Max(vmax, s.seconds)
		}
		top := niceCeil(vmax)
		span := tmax.Sub(tmin)
		x := func(t time.Time) float64 {
			if span <= 0 {
				return float64(c.Left) + float64(c.PlotWidth)/2
			}
			return float64(c.Left) + float64(c.PlotWidth)*float64(t.Sub(tmin))/float64(span)
		}
		y := func(v float64) float64 {
			return float64(c.Top) + float64(c.PlotHeight)*(1-v/top)
		}
		series := map[string]*Series{}
		for _, s := range samples {
			se := series[s.provider]
			if se == nil {
				se = &Series{Provider: s.provider, Color: colors[s.provider]}
				series[s.provider] = se
				c.Series = append(c.Series, se)
			}
			se.Points = append(se.Points, Point{
				X: round1(x(s.run.Started)), Y: round1(y(s.seconds)), Seconds: s.seconds,
				Label: fmt.Sprintf("%s, build %s (%s): %s", s.provider, s.run.ID, s.run.Started.UTC().Format("2006-01-02 15:04"), FormatSeconds(s.seconds)),
				Link:  s.run.Page,
			})
		}
		for _, se := range c.Series {
			sort.Slice(se.Points, func(i, j int) bool { return se.Points[i].X < se.Points[j].X })
			parts := make([]string, len(se.Points))
			for i, p := range se.Points {
				parts[i] = strconv.FormatFloat(p.X, 'f', -1, 64) + "," + strconv.FormatFloat(p.Y, 'f', -1, 64)
			}
			se.Polyline = strings.Join(parts, " ")
		}
		for i := 0; i <= chartYTicks; i++ {
			v := top * float64(i) / chartYTicks
			c.YTicks = append(c.YTicks, Tick{Pos: round1(y(v)), Label: FormatSeconds(v)})
		}
		if span <= 0 {
			c.XTicks = []Tick{{Pos: round1(x(tmin)), Label: tmin.UTC().Format("Jan 2 15:04"), Anchor: "middle"}}
		} else {
			for i := 0; i <= chartXTicks; i++ {
				t := tmin.Add(span * time.Duration(i) / chartXTicks)
				anchor := "middle"
				switch i {
				case 0:
					anchor = "start"
				case chartXTicks:
					anchor = "end"
				}
				c.XTicks = append(c.XTicks, Tick{Pos: round1(x(t)), Label: t.UTC().Format("Jan 2 15:04"), Anchor: anchor})
			}
		}
		charts = append(charts, c)
	}
	return charts
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so the y axis
// has round ticks.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// FormatSeconds writes a latency: milliseconds below a second (with one
// decimal below 10 ms, where observation lags are), seconds with one
// decimal above.
func FormatSeconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 0.01:
		return strconv.FormatFloat(math.Round(s*10000)/10, 'f', -1, 64) + "ms"
	case s < 1:
		return strconv.FormatFloat(math.Round(s*1000), 'f', -1, 64) + "ms"
	case s < 100:
		return strconv.FormatFloat(math.Round(s*10)/10, 'f', -1, 64) + "s"
	default:
		return (time.Duration(s) * time.Second).String()
	}
}
