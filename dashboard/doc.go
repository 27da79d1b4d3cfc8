// Package dashboard is stint's web dashboard as an http.Handler: queues
// with their flow control (paused, limits and their current use), jobs, a job's timeline, the dead-letter queue, stalled jobs and workers,
// with cancel and replay buttons, updated live by polling JSON endpoints.
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
