package postgres

import (
	"fmt"
	"strings"
)

// column is a column of jobs with the SQL type of its parameter array.
type column struct{ name, typ string }

// immutableColumns are written once, at enqueue, and never by an UPDATE.
// depends_on travels as a JSON array text and becomes a text[] in SQL: an
// array of arrays cannot unnest into rows.
var immutableColumns = []column{
	{"id", "text"}, {"tenant", "text"}, {"kind", "text"}, {"queue", "text"}, {"topic", "text"}, {"priority", "int"},
	{"payload", "text"}, {"context_ptr", "text"}, {"adapter_id", "text"}, {"env", "text"}, {"dedupe_key", "text"},
	{"max_attempts", "int"}, {"on_exhausted", "text"}, {"timeout", "bigint"}, {"deadline", "timestamptz"},
	{"cancel_grace", "bigint"}, {"budget_max_runtime", "bigint"}, {"budget_max_steps", "bigint"},
	{"budget_max_cost", "bigint"}, {"correlation_id", "text"}, {"trace_id", "text"}, {"parent_job_id", "text"},
	{"run_id", "text"}, {"step_index", "int"}, {"replay_of", "text"}, {"depends_on", "text"}, {"created_at", "timestamptz"},
}

// mutableColumns are the columns a transition may change, in the order of
// mutableArgsOf.
var mutableColumns = []column{
	{"state", "text"}, {"attempt", "int"}, {"failures", "int"}, {"rev", "bigint"}, {"run_at", "timestamptz"},
	{"owner", "text"}, {"lease_id", "text"}, {"lease_expires_at", "timestamptz"}, {"timeout_at", "timestamptz"},
	{"cancel_deadline", "timestamptz"}, {"lease_ended_by", "text"}, {"last_owner", "text"}, {"last_lease_id", "text"},
	{"last_lease_expires_at", "timestamptz"}, {"checkpoint", "text"}, {"progress", "text"}, {"phase", "text"},
	{"usage_steps", "bigint"}, {"usage_cost", "bigint"}, {"usage_runtime_ms", "bigint"}, {"result", "text"},
	{"result_ptr", "text"}, {"result_digest", "text"}, {"error_code", "text"}, {"error_message", "text"},
	{"error_class", "text"}, {"error_attempt", "int"}, {"last_error_code", "text"}, {"last_error_message", "text"},
	{"last_error_class", "text"}, {"last_error_attempt", "int"}, {"reason_code", "text"}, {"reason", "text"},
	{"execution_ms", "bigint"}, {"updated_at", "timestamptz"}, {"started_at", "timestamptz"},
	{"attempt_started_at", "timestamptz"}, {"finished_at", "timestamptz"},
}

// qJobInsert inserts new jobs from one array per column; the updates'
// statements are built per set of changed columns (columns_changed.go).
var qJobInsert = jobInsertSQL()

// unnest returns "unnest($1::t1[], ...) AS u(c1, ...)" for cols, numbering
// parameters from 1.
func unnest(cols []column) string {
	params, names := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, c.typ)
		names[i] = c.name
	}
	return "unnest(" + strings.Join(params, ", ") + ") AS u(" + strings.Join(names, ", ") + ")"
}

func jobInsertSQL() string {
	cols := append(append([]column(nil), immutableColumns...), mutableColumns...)
	names, values := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		names[i], values[i] = c.name, "u."+c.name
		if c.name == "depends_on" {
			values[i] = "CASE WHEN u.depends_on IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(u.depends_on::json)) END"
		}
	}
	return "INSERT INTO jobs (" + strings.Join(names, ", ") + ")\nSELECT " + strings.Join(values, ", ") +
		"\nFROM " + unnest(cols)
}
