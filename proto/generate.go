// Package proto holds stint's API schema (stint/v1/*.proto) and the Go code
// generated from it. The generators are pinned as tool lines in go.mod, so
// `go generate ./proto` reproduces the committed code byte for byte.
package proto

//go:generate go tool buf generate
