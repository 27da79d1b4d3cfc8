package server_test

import (
	"slices"
	"testing"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestClaimByTopic: the claim RPC routes by topic pattern within the
// requested queues; topics without queues claim from the tenant's default
// queue, never another tenant's; bad patterns are InvalidArgument and
// nothing is claimed.
func TestClaimByTopic(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		other := e.token("globex", store.RoleClient)
		ctx := t.Context()
		enqueue := func(secret, queue, topic string) {
			t.Helper()
			if _, err := e.jobs(secret).Enqueue(ctx, connect.NewRequest(&stintv1.EnqueueRequest{
				Job: &stintv1.Spec{Kind: "k", Queue: queue, Topic: topic}})); err != nil {
				t.Fatal(err)
			}
		}
		for _, topic := range []string{"job.chat.simple", "job.chat.simple.x", "job.tool.simple", "job", ""} {
			enqueue(client, "", topic)
			enqueue(client, "bus", topic)
		}
		enqueue(other, "", "job.chat.simple")
		claim := func(queues, topics []string) ([]string, error) {
			t.Helper()
			res, err := e.worker(worker).Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: queues, Topics: topics, Limit: 100}))
			if err != nil {
				return nil, err
			}
			var got []string
			for _, j := range res.Msg.Jobs {
				got = append(got, j.Queue+":"+j.Topic)
			}
			slices.Sort(got)
			return got, nil
		}
		for _, bad := range [][]string{{"job.>.x"}, {"job..chat"}, {"job.ch*"}, {""}} {
			_, err := claim(nil, bad)
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("claim with topics %q: %v, want InvalidArgument", bad, err)
			}
		}
		if _, err := claim(nil, nil); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("claim without queues or topics: %v, want InvalidArgument", err)
		}
		got, err := claim(nil, []string{"job.chat.*"})
		if want := []string{"default:job.chat.simple"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("claim by topics alone got %q, %v; want %q (the tenant's default queue only)", got, err, want)
		}
		got, err = claim([]string{"bus"}, []string{"job.>"})
		if want := []string{"bus:job.chat.simple", "bus:job.chat.simple.x", "bus:job.tool.simple"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("claim of bus with job.> got %q, %v; want %q", got, err, want)
		}
		got, err = claim([]string{"default", "bus"}, []string{"*", "job.*.simple"})
		if want := []string{"bus:job", "default:job", "default:job.tool.simple"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("claim of default and bus with * and job.*.simple got %q, %v; want %q", got, err, want)
		}
		got, err = claim([]string{"default", "bus"}, nil)
		if want := []string{"bus:", "default:", "default:job.chat.simple.x"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("claim without topics got %q, %v; want the rest %q", got, err, want)
		}
	})
}
