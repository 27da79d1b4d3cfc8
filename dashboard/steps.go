package dashboard

import (
	"errors"
	"net/http"
	"time"

	"github.com/stint-dev/stint/store"
)

// stepView is one recorded step of a job, placed in time: it ran for
// DurationMS up to the transaction that recorded it.
type stepView struct {
	store.StepRecord
	Started time.Time `json:"started"`
}

// steps reads the recorded steps of a job for its page's timeline, or none
// on a store that keeps no steps.
func (h *handler) steps(r *http.Request, jobID string) ([]stepView, error) {
	ss, err := store.Steps(h.cfg.Store)
	if errors.Is(err, store.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, err := ss.JobSteps(r.Context(), jobID)
	if err != nil {
		return nil, err
	}
	out := make([]stepView, len(recs))
	for i, rec := range recs {
		rec.LeaseID = "" // a lease is the worker's secret
		out[i] = stepView{StepRecord: rec, Started: rec.RecordedAt.Add(-time.Duration(rec.DurationMS) * time.Millisecond)}
	}
	return out, nil
}
