package store

import "github.com/stint-dev/stint/lifecycle"

// The sentinel errors a store returns, re-exported from lifecycle so callers
// of the store need not import it.
var (
	ErrValidation        = lifecycle.ErrValidation
	ErrNotFound          = lifecycle.ErrNotFound
	ErrInvalidTransition = lifecycle.ErrInvalidTransition
	ErrStaleLease        = lifecycle.ErrStaleLease
	ErrRevisionConflict  = lifecycle.ErrRevisionConflict
	ErrRequestConflict   = lifecycle.ErrRequestConflict
)
