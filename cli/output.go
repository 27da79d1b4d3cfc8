package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeJSON writes v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes tab-separated rows as aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

// row writes one row; empty cells print as "-" so columns stay readable.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	io.WriteString(t.tw, strings.Join(cells, "\t")+"\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// fmtTime formats a time for people: UTC, to the second.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// fmtTimeMS formats a time to the millisecond, for logs of events that
// follow each other closely.
func fmtTimeMS(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// fmtTimePtr formats an optional time.
func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return fmtTime(*t)
}

// plural returns "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// writeList writes items as a JSON array ([] when there are none) when
// asJSON is set, otherwise as writeTable writes them.
func writeList[T any](w io.Writer, items []T, asJSON bool, writeTable func(io.Writer, []T) error) error {
	if !asJSON {
		return writeTable(w, items)
	}
	if items == nil {
		items = []T{}
	}
	return writeJSON(w, items)
}
