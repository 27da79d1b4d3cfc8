package dashboard

import (
	"context"
	"net/http"

	"github.com/stint-dev/stint/bus"
)

// BusBridge is the bus bridge running in this process (*bus.Bridge), for
// the bus page: its consumers and their lag, its counters.
type BusBridge interface {
	Status(ctx context.Context) bus.BridgeStatus
}

// mayBus reports whether the viewer may see the bus page: the bridge
// serves every tenant's bridged queue, so, like the outbox, admins of the
// default tenant only.
func (v viewer) mayBus() bool { return v.mayOutbox() }

// busPage serves the bridge's state, or enabled false when this process
// runs no bridge.
func (h *handler) busPage(w http.ResponseWriter, r *http.Request) {
	if !viewerOf(r.Context()).mayBus() {
		writeError(w, http.StatusForbidden, "the bus bridge serves all tenants: use an admin token of the default tenant")
		return
	}
	if h.cfg.Bus == nil {
		writeJSON(w, map[string]any{"enabled": false})
		return
	}
	writeJSON(w, map[string]any{"enabled": true, "status": h.cfg.Bus.Status(r.Context())})
}
