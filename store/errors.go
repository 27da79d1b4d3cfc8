package store

import (
	"errors"

	"github.com/stint-dev/stint/lifecycle"
)

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

// Errors of opening a store without migrating it (Options.NoMigrate in the
// backends): reads never create or upgrade a schema.
var (
	// ErrSchemaMissing: the database has no stint schema; run `stint migrate`.
	ErrSchemaMissing = errors.New("no stint schema in this database")
	// ErrSchemaOutdated: the schema is older than this binary; run `stint migrate`.
	ErrSchemaOutdated = errors.New("the stint schema is older than this binary")
)
