package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Input limits of the dashboard's endpoints: a field longer than maxField,
// a body larger than maxBody or a list longer than maxIDs is refused.
const (
	maxField = 200
	maxBody  = 64 << 10
	maxIDs   = 1000
)

// quoteShort quotes s for an error message, cut to a readable length.
func quoteShort(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// readBody decodes a JSON body of at most maxBody bytes into v, refusing
// unknown fields, and answers 400 when it cannot.
func readBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("expected a JSON body %s (at most %d KiB): %v", shape, maxBody>>10, err))
		return false
	}
	return true
}

// fieldsShort checks that no named field is longer than maxField, and
// answers 400 naming the first that is.
func fieldsShort(w http.ResponseWriter, fields map[string]string) bool {
	for name, v := range fields {
		if len(v) > maxField {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("%s is %d bytes long: at most %d", name, len(v), maxField))
			return false
		}
	}
	return true
}
