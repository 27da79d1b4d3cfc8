package sqlite

import (
	"fmt"
	"strings"
	"sync"

	"github.com/stint-dev/stint/lifecycle"
)

// A transition writes only the columns it changes. The writer's
// transactions remember each job row they read (rows the engine is about to
// transition); JobUpdate compares the new job with it and sets only the
// mutable columns whose values differ. SQLite then skips every index none of
// whose columns is set, and binds a handful of values instead of all of
// them. A row not read in the transaction gets every mutable column.

// mutableNames are the columns of jobMutable, in order.
var mutableNames = func() []string {
	var out []string
	for _, c := range strings.Split(jobMutable, ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}()

// allColumns is the mask of every mutable column.
var allColumns = uint64(1)<<len(mutableNames) - 1

// updateSQL caches the UPDATE statement of each set of changed columns (a
// bit mask over mutableNames); transitions use a few dozen sets at most.
var updateSQL sync.Map

// changedColumns returns the mask of mutable columns whose values differ
// between old and new (mutableArgs of each), and the new values of those.
func changedColumns(old, new []any) (uint64, []any) {
	var mask uint64
	var args []any
	for i := range new {
		if old[i] != new[i] {
			mask |= 1 << i
			args = append(args, new[i])
		}
	}
	return mask, args
}

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

// remember records rows a writer's transaction read, as the base of later
// updates.
func (t *txn) remember(jobs []lifecycle.Job) {
	if t.readOnly || len(jobs) == 0 {
		return
	}
	if t.seen == nil {
		t.seen = make(map[string]lifecycle.Job, len(jobs))
	}
	for _, j := range jobs {
		t.seen[j.ID] = j
	}
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
