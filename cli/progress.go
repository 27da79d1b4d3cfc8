package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/stint-dev/stint/bench"
)

// progressLine redraws one line on a terminal: the phase, a bar, the count
// and the rate so far. A nil *progressLine does nothing.
type progressLine struct {
	w     io.Writer
	width int // of the last line drawn, to blank it out
}

const barWidth = 30

func (p *progressLine) show(pr bench.Progress) {
	if p == nil {
		return
	}
	frac := 0.0
	if pr.Total > 0 {
		frac = min(1, float64(pr.Done)/float64(pr.Total))
	}
	filled := int(frac * barWidth)
	line := fmt.Sprintf("%-7s [%s%s] %s/%s", pr.Phase, strings.Repeat("=", filled), strings.Repeat(" ", barWidth-filled),
		groupDigits(pr.Done), groupDigits(pr.Total))
	if s := pr.Elapsed.Seconds(); s > 0 && pr.Done > 0 {
		line += fmt.Sprintf("  %s/s", groupDigits(int(float64(pr.Done)/s)))
	}
	pad := max(0, p.width-len(line))
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	p.width = len(line)
}

// clear blanks the line, so the report starts on a clean one.
func (p *progressLine) clear() {
	if p == nil || p.width == 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	p.width = 0
}

// isTerminal reports whether w is a terminal (not a file or a pipe).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
