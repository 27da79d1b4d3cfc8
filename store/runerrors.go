package store

import (
	"errors"

	"github.com/stint-dev/stint/lifecycle"
)

// errNoRuns: the driver's transactions do not implement RunTx.
var errNoRuns = errors.New("store: this driver does not keep runs or the outbox")

func runNotFound(id string) error {
	return &lifecycle.Error{Kind: ErrNotFound, Msg: "run " + id + ": no run has this id; check it with `stint runs ls`"}
}

// checkRunID refuses a run id that is missing or that no store could hold.
func checkRunID(id string) error {
	if id == "" {
		return lifecycle.Validationf("run id is required")
	}
	return lifecycle.CheckText("run id", id)
}
