package dashboard

import (
	"net/http"
	"time"

	"github.com/stint-dev/stint/store"
)

// unservedReply is what GET /api/unserved answers: the queued jobs of each
// kind no live worker handles (DESIGN §7), from the counter's last count.
type unservedReply struct {
	At    time.Time         `json:"at"`
	Kinds []store.KindCount `json:"kinds"`
}

// unserved serves the viewer's tenant's unserved kinds; the queues page
// shows them in a panel (assets/unserved.js).
func (h *handler) unserved(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	snap := h.cfg.Counter.Snapshot()
	out := unservedReply{At: snap.At, Kinds: []store.KindCount{}}
	for _, k := range snap.Unserved {
		if v.ownsQueue(k.Queue) {
			out.Kinds = append(out.Kinds, k)
		}
	}
	writeJSON(w, out)
}
