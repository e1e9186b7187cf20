package dashboard

import (
	"github.com/ccm-conformance/ccm-conformance/reports/lkg"
)

// BadgeLabel is the left half of every badge.
const BadgeLabel = "ccm conformance"

// Badge is a provider's README badge: its standing for the newest
// Kubernetes version it was judged on, as `lkg check` gives it.
type Badge struct {
	Label   string
	Message string
	Status  lkg.Status
	// Path is the badge's path, relative to the dashboard's root.
	Path string
	// Color is the message's background.
	Color string
	// Geometry, in pixels: the halves' widths and their texts' centres.
	LabelWidth, MessageWidth, Width int
	LabelX, MessageX                int
}

// statusColors are the badge colours of each status.
var statusColors = map[lkg.Status]string{
	lkg.StatusGreen:    "#2da44e",
	lkg.StatusRed:      "#cf222e",
	lkg.StatusFlaky:    "#bc4c00",
	lkg.StatusPending:  "#bf8700",
	lkg.StatusPartial:  "#8250df",
	lkg.StatusStale:    "#6e7781",
	lkg.StatusUntested: "#9f9f9f",
}

// statusWords are the badge messages of each status.
var statusWords = map[lkg.Status]string{
	lkg.StatusGreen:    "passing",
	lkg.StatusRed:      "failing",
	lkg.StatusFlaky:    "flaky",
	lkg.StatusPending:  "pending",
	lkg.StatusPartial:  "partial",
	lkg.StatusStale:    "stale",
	lkg.StatusUntested: "untested",
}

// providerBadge is the badge of a provider: the status of its newest pair's
// Kubernetes version (stale wins, as in `lkg check`), or untested.
func providerBadge(rep *lkg.Report, ps *lkg.ProviderStatus) Badge {
	b := Badge{Label: BadgeLabel, Status: lkg.StatusUntested, Path: "badges/" + safeName(ps.Provider) + ".svg"}
	var versions []string
	for _, p := range ps.Pairs {
		versions = append(versions, p.KubernetesVersion)
	}
	sortVersions(versions)
	version := ""
	if len(versions) > 0 {
		version = versions[0]
		b.Status = rep.Check(version, []string{ps.Provider}).Providers[0].Status
	} else if ps.Stale {
		b.Status = lkg.StatusStale
	}
	b.Message = statusWords[b.Status]
	if version != "" {
		b.Message = version + " " + b.Message
	}
	b.LabelWidth = textWidth(b.Label) + 10
	b.MessageWidth = textWidth(b.Message) + 10
	b.Width = b.LabelWidth + b.MessageWidth
	b.LabelX = b.LabelWidth / 2
	b.MessageX = b.LabelWidth + b.MessageWidth/2
	b.Color = statusColors[b.Status]
	return b
}

// textWidth estimates the width of s in 11px Verdana, the badges' font:
// narrow, wide and average glyphs.
func textWidth(s string) int {
	w := 0.0
	for _, r := range s {
		switch {
		case r == ' ' || r == '.' || r == ':' || r == 'i' || r == 'l' || r == 'j' || r == 't' || r == 'f' || r == 'r' || r == '1':
			w += 4.2
		case r == 'm' || r == 'w' || r == 'M' || r == 'W':
			w += 10.5
		case r >= 'A' && r <= 'Z':
			w += 7.8
		default:
			w += 6.9
		}
	}
	return int(w + 0.5)
}
