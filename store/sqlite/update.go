package sqlite

import (
	"fmt"
	"strings"
	"sync"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// A transition writes only the columns it changes (store.Updates, see
// store/changed.go). SQLite then skips every index none of whose columns is
// set, and binds a handful of values instead of all of them.

// mutableNames are the columns of jobMutable, in order.
var mutableNames = func() []string {
	var out []string
	for _, c := range strings.Split(jobMutable, ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}()

func init() {
	if len(mutableNames) != len(store.MutableColumns) {
		panic(fmt.Sprintf("sqlite: %d mutable columns, store.MutableColumns has %d", len(mutableNames), len(store.MutableColumns)))
	}
	for i, c := range mutableNames {
		if store.MutableColumns[i] != c {
			panic(fmt.Sprintf("sqlite: mutable column %d is %s, store.MutableColumns says %s", i, c, store.MutableColumns[i]))
		}
	}
}

// maskedArgs returns the values of the mutable columns of j in mask.
func maskedArgs(j *lifecycle.Job, mask uint64) []any {
	all := mutableArgs(j)
	if mask == store.AllMutable {
		return all
	}
	out := all[:0]
	for i, v := range all {
		if mask&(1<<i) != 0 {
			out = append(out, v)
		}
	}
	return out
}

// updateSQL caches the UPDATE statement of each set of changed columns (a
// bit mask over mutableNames); transitions use a few dozen sets at most.
var updateSQL sync.Map

// updateQuery returns the UPDATE of the columns in mask, with the id and
// the expected rev as the last two parameters.
func updateQuery(mask uint64) string {
	if q, ok := updateSQL.Load(mask); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString("UPDATE jobs SET ")
	first := true
	for i, c := range mutableNames {
		if mask&(1<<i) == 0 {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(c)
		b.WriteString(" = ?")
	}
	b.WriteString(" WHERE id = ? AND rev = ?")
	q, _ := updateSQL.LoadOrStore(mask, b.String())
	return q.(string)
}

// updateManyQuery returns the UPDATE of the columns in mask for rows jobs at
// once: parameters are, per row, the id, the expected rev and the values.
func updateManyQuery(mask uint64, rows int) string {
	k := insertKey{head: fmt.Sprint("update ", mask), rows: rows}
	if q, ok := insertSQL.Load(k); ok {
		return q.(string)
	}
	var set []string
	n := 2
	for i, c := range mutableNames {
		if mask&(1<<i) != 0 {
			n++
			set = append(set, fmt.Sprintf("%s = v.column%d", c, n))
		}
	}
	group := "(" + strings.Repeat("?, ", n-1) + "?)"
	q := "UPDATE jobs SET " + strings.Join(set, ", ") + " FROM (VALUES " + strings.Repeat(group+", ", rows-1) + group +
		") AS v WHERE jobs.id = v.column1 AND jobs.rev = v.column2"
	v, _ := insertSQL.LoadOrStore(k, q)
	return v.(string)
}

// insertChunk is how many rows one multi-row INSERT carries: one statement
// (and one trip through database/sql) per chunk instead of per row.
const insertChunk = 32

// insertSQL caches the text of multi-row INSERTs by head and row count.
var insertSQL sync.Map

type insertKey struct {
	head string
	rows int
}

// insertQuery returns head followed by VALUES with rows groups of cols
// parameters.
func insertQuery(head string, cols, rows int) string {
	k := insertKey{head, rows}
	if q, ok := insertSQL.Load(k); ok {
		return q.(string)
	}
	group := "(" + strings.Repeat("?, ", cols-1) + "?)"
	q := head + " VALUES " + strings.Repeat(group+", ", rows-1) + group
	v, _ := insertSQL.LoadOrStore(k, q)
	return v.(string)
}
