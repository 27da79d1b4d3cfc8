package dashboard

import (
	"net/http"
	"strconv"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// outboxLimit bounds the messages the outbox page reads per state.
const outboxLimit = 200

// mayOutbox reports whether the viewer may see the outbox. Outbox rows and
// webhooks carry no tenant (a webhook sees every tenant's events), so the
// page is for admins of the default tenant only, like `stint outbox ls`.
func (v viewer) mayOutbox() bool {
	return v.role == store.RoleAdmin && v.tenant == server.DefaultTenant
}

// outbox serves the webhook deliveries by status: pending (never tried
// yet), failed (retrying, with the last error and the next attempt) and
// dead.
func (h *handler) outbox(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	if !v.mayOutbox() {
		writeError(w, http.StatusForbidden, "the outbox is shared by all tenants: use an admin token of the default tenant")
		return
	}
	pending, err := h.cfg.Store.OutboxList(r.Context(), &store.OutboxListParams{State: store.OutboxPending, Limit: outboxLimit})
	if err != nil {
		storeError(w, err)
		return
	}
	dead, err := h.cfg.Store.OutboxList(r.Context(), &store.OutboxListParams{State: store.OutboxDead, Limit: outboxLimit})
	if err != nil {
		storeError(w, err)
		return
	}
	out := map[string][]store.OutboxMessage{"pending": {}, "failed": {}, "dead": dead}
	for _, m := range pending {
		if m.LastError != "" {
			out["failed"] = append(out["failed"], m)
		} else {
			out["pending"] = append(out["pending"], m)
		}
	}
	if out["dead"] == nil {
		out["dead"] = []store.OutboxMessage{}
	}
	writeJSON(w, map[string]any{"pending": out["pending"], "failed": out["failed"], "dead": out["dead"],
		"limit": outboxLimit, "can_replay": !h.cfg.ReadOnly && v.mayOutbox()})
}

// outboxReplay makes a dead message pending again, due now.
func (h *handler) outboxReplay(w http.ResponseWriter, r *http.Request) {
	if !viewerOf(r.Context()).mayOutbox() {
		writeError(w, http.StatusForbidden, "the outbox is shared by all tenants: use an admin token of the default tenant")
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "outbox message id "+strconv.Quote(r.PathValue("id"))+" is not a number")
		return
	}
	m, err := h.cfg.Store.OutboxReplay(r.Context(), id)
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, m)
}
