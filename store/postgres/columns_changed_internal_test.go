package postgres

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/storetest"
)

// TestChangedColumnsMatchArgs: for random pairs of jobs whose fields take
// a few values each (so that they often agree), store.ChangedColumns marks
// every column whose values mutableArgsOf sends differ (it may mark more:
// the columns of an error the other job lacks, which this driver writes as
// empty strings); and an UPDATE of the changed columns names exactly those.
func TestChangedColumnsMatchArgs(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 18))
	for range 2000 {
		a, b := storetest.RandomMutable(rnd), storetest.RandomMutable(rnd)
		argsA, argsB := mutableArgsOf([]lifecycle.Job{a}), mutableArgsOf([]lifecycle.Job{b})
		mask := store.ChangedColumns(&a, &b, 0)
		for i := range mutableColumns {
			va := reflect.ValueOf(argsA[i]).Index(0).Interface()
			vb := reflect.ValueOf(argsB[i]).Index(0).Interface()
			if changed := mask&(1<<i) != 0; !changed && !reflect.DeepEqual(va, vb) {
				t.Fatalf("column %s: changed %v, the values sent are %#v and %#v", mutableColumns[i].name, changed, va, vb)
			}
		}
		q := jobUpdateSQL(mask)
		for i, c := range mutableColumns {
			if set := strings.Contains(q, " "+c.name+" = u."+c.name); set != (mask&(1<<i) != 0) {
				t.Fatalf("column %s: set %v in %s", c.name, set, q)
			}
		}
	}
}
