package sqlite

import (
	"database/sql/driver"
	"fmt"
	"time"

	"modernc.org/sqlite"
)

// The upgrade to the typed-column layout (migration 0003) reads the JSON
// documents of schema v2. SQL has no parser for two of their encodings, so
// the driver registers these helpers, which the migration calls:
//
//	stint_v2_micros(text)  an RFC 3339 time ("2030-01-02T03:04:05.123456789+02:00")
//	                       as Unix microseconds; NULL stays NULL
//	stint_v2_nanos(value)  a lifecycle.Duration as nanoseconds: a Go duration
//	                       string ("1m30s") or a number; NULL is 0
func init() {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(sqlite.RegisterDeterministicScalarFunction("stint_v2_micros", 1, v2Micros))
	must(sqlite.RegisterDeterministicScalarFunction("stint_v2_nanos", 1, v2Nanos))
}

func v2Micros(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	s, ok := textArg(args[0])
	if !ok {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("stint_v2_micros: %w", err)
	}
	return t.UnixMicro(), nil
}

func v2Nanos(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	switch v := args[0].(type) {
	case nil:
		return int64(0), nil
	case int64:
		return v, nil
	case float64:
		return int64(v), nil
	}
	s, _ := textArg(args[0])
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("stint_v2_nanos: %w", err)
	}
	return int64(d), nil
}

func textArg(v driver.Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}
