// Package stats counts the jobs of a store by queue and state in the
// background, so that metrics scrapes, the dashboard and autoscalers read a
// recent snapshot instead of counting rows on every request, and serves
// the snapshot as JSON for KEDA's metrics-api trigger (see [Handler]).
package stats
