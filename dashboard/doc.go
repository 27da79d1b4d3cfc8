// Package dashboard is stint's web dashboard as an http.Handler: queues
// with their flow control (paused, limits and their current use), the
// history of the last hour and day as charts (read from the job events,
// history.go), jobs, a search over every job field (search.go), runs and a
// run's DAG (runs.go), schedules (schedules.go), a job's timeline, the
// dead-letter queue, stalled jobs and workers, with cancel, replay, rerun
// and pause buttons, updated live by polling JSON endpoints. See
// docs/dashboard.md.
//
// Mount it on your own mux under a prefix, and wrap it with your own auth
// if you like:
//
//	h, _ := dashboard.New(dashboard.Config{Store: s, Counter: c})
//	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", h))
//
// Its assets are plain HTML and JavaScript embedded in the binary: nothing
// to build or install. Requests to its JSON API carry the same bearer
// tokens as stint's API: admin tokens may cancel, replay and pause or
// resume queues, client tokens
// may cancel, worker tokens are refused, and each token sees its tenant's
// jobs only. Config.ReadOnly refuses every change and hides the buttons.
package dashboard
