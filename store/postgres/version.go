package postgres

// LatestVersion returns the version of the newest embedded migration: what
// a schema this binary migrated records last in schema_migrations. stint
// doctor compares it with a schema it opens without migrating.
func LatestVersion() (int, error) {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].version, nil
}
