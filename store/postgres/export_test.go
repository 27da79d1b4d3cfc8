package postgres

import "context"

// OpenAt opens a driver whose schema is migrated up to version only, as a
// release that had no later migration left it; its Migrate brings it up to
// date.
func OpenAt(ctx context.Context, url string, opts Options, version int) (*Driver, error) {
	d, err := connect(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if err := d.migrateTo(ctx, version); err != nil {
		d.pool.Close()
		return nil, err
	}
	return d, nil
}
