package sqlite

import (
	"math/rand/v2"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/storetest"
)

// TestChangedColumnsMatchArgs: for random pairs of jobs, store.ChangedColumns
// marks a column exactly when the values mutableArgs binds for it differ,
// and maskedArgs binds the values of the marked columns in order.
func TestChangedColumnsMatchArgs(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 18))
	for range 2000 {
		a, b := storetest.RandomMutable(rnd), storetest.RandomMutable(rnd)
		argsA, argsB := mutableArgs(&a), mutableArgs(&b)
		mask := store.ChangedColumns(&a, &b, 0)
		var want []any
		for i, name := range mutableNames {
			if changed := mask&(1<<i) != 0; changed == (argsA[i] == argsB[i]) {
				t.Fatalf("column %s: changed %v, the values bound are %#v and %#v", name, changed, argsA[i], argsB[i])
			}
			if mask&(1<<i) != 0 {
				want = append(want, argsB[i])
			}
		}
		got := maskedArgs(&b, mask)
		if len(got) != len(want) {
			t.Fatalf("maskedArgs bound %d values, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("maskedArgs value %d is %#v, want %#v", i, got[i], want[i])
			}
		}
	}
	var none lifecycle.Job
	if len(maskedArgs(&none, store.AllMutable)) != len(mutableNames) {
		t.Fatal("maskedArgs of every column binds fewer values")
	}
}
