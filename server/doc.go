// Package server is stint's network API: the jobs, runs, worker and admin
// services of proto/stint/v1 served with ConnectRPC (gRPC, gRPC-Web, and JSON over
// HTTP POST from one schema) over a store.Store. It never reaches into a
// backend: every call is a Store method, scoped to the tenant of the
// caller's bearer token.
package server
