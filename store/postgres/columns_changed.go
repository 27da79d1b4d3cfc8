package postgres

import (
	"fmt"
	"strings"
	"sync"

	"github.com/stint-dev/stint/store"
)

// A compare-and-swap UPDATE sends only the columns its transitions change
// (store.Updates: the union of a batch's changes, every column when an
// update does not know the row it replaces).

func init() {
	for i, c := range mutableColumns {
		if i >= len(store.MutableColumns) || store.MutableColumns[i] != c.name || len(mutableColumns) != len(store.MutableColumns) {
			panic(fmt.Sprintf("postgres: mutable column %d is %s, store.MutableColumns says otherwise", i, c.name))
		}
	}
}

// jobUpdates caches jobUpdateSQL's text per mask.
var jobUpdates sync.Map

// jobUpdateSQL is the compare-and-swap UPDATE of the columns in mask (see
// queries.go): parameters are those columns' arrays in order,
// the ids, the revs the rows must still have, and how many rows.
func jobUpdateSQL(mask uint64) string {
	if q, ok := jobUpdates.Load(mask); ok {
		return q.(string)
	}
	var cols []column
	var set []string
	for i, c := range mutableColumns {
		if mask&(1<<i) != 0 {
			cols = append(cols, c)
			set = append(set, c.name+" = u."+c.name)
		}
	}
	cols = append(cols, column{"id", "text"}, column{"prev_rev", "bigint"})
	q := "WITH changed AS (\nUPDATE jobs SET " + strings.Join(set, ", ") + "\nFROM " + unnest(cols) +
		"\nWHERE jobs.id = u.id AND jobs.rev = u.prev_rev\nRETURNING 1)\n" +
		fmt.Sprintf("SELECT stint_check_rows((SELECT count(*) FROM changed), $%d)", len(cols)+1)
	v, _ := jobUpdates.LoadOrStore(mask, q)
	return v.(string)
}
