package cli

import (
	"github.com/spf13/cobra"
)

// needsDatabase names the commands that work on a database itself, never
// through a server's API, and why: with --server (or STINT_SERVER) they
// refuse in one line instead of quietly opening ./stint.db. Every other
// command works against a server with the same output as on a database.
var needsDatabase = map[string]string{
	"stint migrate":       "it changes the database's schema, which the API does not expose",
	"stint doctor":        "it reads the database's own catalogs and files (transactions, WAL, vacuum), which the API does not expose",
	"stint verify":        "it checks every job against its event log inside the database (the server's maintenance services also do)",
	"stint dev":           "it runs a database, a pool and the services in one process",
	"stint server":        "it serves a database: --server names a server to talk to",
	"stint bench":         "it measures a database of its own",
	"stint bench history": "it measures a database of its own",
	"stint bench soak":    "it measures a database of its own",
	"stint bench bus":     "it measures a database of its own",
	"stint bench steps":   "it measures a database of its own",
	"stint bench remote":  "it starts a server on a database of its own (its own --url measures a running server)",
}

// refuseServer is the root's PersistentPreRunE: a command of needsDatabase
// given --server is a usage error saying why it needs --db or
// --database-url.
func (a *app) refuseServer(cmd *cobra.Command, _ []string) error {
	if a.server == "" {
		return nil
	}
	if why, ok := needsDatabase[cmd.CommandPath()]; ok {
		return usageErrorf("%s needs direct database access (--db or --database-url), not --server: %s", cmd.CommandPath(), why)
	}
	return nil
}
