package dashboard_test

import (
	"testing"
)

// TestUnserved: the queues page's panel lists the queued jobs of kinds no
// worker handles (the fixture's "later" job; the pool that ran the poison
// jobs served only its own kind), within the viewer's tenant, and the page
// loads the panel's script.
func TestUnserved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	type reply struct {
		Kinds []struct {
			Queue string `json:"queue"`
			Kind  string `json:"kind"`
			Jobs  int    `json:"jobs"`
		} `json:"kinds"`
	}
	var mine reply
	if code := f.call(t, "GET", "api/unserved", f.tokens["client"], "", &mine); code != 200 {
		t.Fatalf("GET api/unserved: %d", code)
	}
	if len(mine.Kinds) != 1 || mine.Kinds[0].Queue != "other" || mine.Kinds[0].Kind != "later" || mine.Kinds[0].Jobs != 1 {
		t.Errorf("unserved kinds %+v, want the later job in queue other", mine.Kinds)
	}
	var theirs reply
	if code := f.call(t, "GET", "api/unserved", f.tokens["acme"], "", &theirs); code != 200 || len(theirs.Kinds) != 0 {
		t.Errorf("another tenant got %d and %+v, want none of the default tenant's kinds", code, theirs.Kinds)
	}
	if code := f.call(t, "GET", "unserved.js", "", "", nil); code != 200 {
		t.Errorf("GET unserved.js: %d", code)
	}
}
