package server

import (
	"context"
	"encoding/json"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// ListSteps returns a job's recorded steps and the signals sent to it.
func (h *jobs) ListSteps(ctx context.Context, req *connect.Request[stintv1.ListStepsRequest]) (*connect.Response[stintv1.ListStepsResponse], error) {
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	j, err := h.get(ctx, principalOf(ctx).tenant, req.Msg.Id)
	if err != nil {
		return nil, err
	}
	recs, err := ss.JobSteps(ctx, j.ID)
	if err != nil {
		return nil, toConnect(err)
	}
	sigs, err := ss.JobSignals(ctx, j.ID)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &stintv1.ListStepsResponse{Steps: stepsToProto(recs)}
	for _, s := range sigs {
		out.Signals = append(out.Signals, signalToProto(s))
	}
	return connect.NewResponse(out), nil
}

// SignalJob sends a named signal to a live job of the caller's tenant.
func (h *jobs) SignalJob(ctx context.Context, req *connect.Request[stintv1.SignalJobRequest]) (*connect.Response[stintv1.SignalJobResponse], error) {
	m, p := req.Msg, principalOf(ctx)
	if err := checkName("name", m.Name); err != nil {
		return nil, err
	}
	var payload json.RawMessage
	if m.Payload != "" {
		if len(m.Payload) > store.MaxStepBytes {
			return nil, invalid("payload is %d bytes: the limit is %d; keep large data elsewhere and send a reference to it", len(m.Payload), store.MaxStepBytes)
		}
		if !json.Valid([]byte(m.Payload)) {
			return nil, invalid("payload is not JSON text: send the signal's payload encoded as JSON (for example \"true\" or \"{\\\"ok\\\":true}\")")
		}
		payload = json.RawMessage(m.Payload)
	}
	ss, err := h.steps()
	if err != nil {
		return nil, err
	}
	if _, err := h.get(ctx, p.tenant, m.Id); err != nil {
		return nil, err
	}
	sig, err := ss.JobSignal(ctx, &store.JobSignalParams{JobID: m.Id, Name: m.Name, Payload: payload, ActorID: p.name})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&stintv1.SignalJobResponse{Signal: signalToProto(sig)}), nil
}
