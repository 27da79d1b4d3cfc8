package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxJSONDepth is how deeply a JSON input (payload, result, checkpoint,
// progress) may nest arrays and objects.
const MaxJSONDepth = 64

// Times a job accepts: both stores and JSON keep years 1 to 9999.
var (
	minTime = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, time.December, 31, 23, 59, 59, 999999000, time.UTC)
)

// CheckText refuses a string input that no store can keep alike: one with a
// NUL byte (PostgreSQL text refuses it) or that is not valid UTF-8. field
// names the input in the error.
func CheckText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return Validationf("%s contains a NUL byte: text inputs must be NUL-free UTF-8", field)
	}
	if !utf8.ValidString(s) {
		return Validationf("%s is not valid UTF-8: text inputs must be NUL-free UTF-8", field)
	}
	return nil
}

// CheckJSON refuses a JSON input that is not valid UTF-8 JSON of at most
// MaxPayloadBytes, nested at most MaxJSONDepth deep. Empty input is absent
// and accepted.
func CheckJSON(field string, b []byte) error {
	switch {
	case len(b) == 0:
		return nil
	case len(b) > MaxPayloadBytes:
		return Validationf("%s is %d bytes: the limit is %d; store large data elsewhere and pass a pointer", field, len(b), MaxPayloadBytes)
	case bytes.IndexByte(b, 0) >= 0:
		return Validationf("%s contains a NUL byte: JSON inputs must be UTF-8 text", field)
	case !utf8.Valid(b):
		return Validationf("%s is not valid UTF-8: JSON inputs must be UTF-8 text", field)
	}
	if d := jsonDepth(b); d > MaxJSONDepth {
		return Validationf("%s nests arrays and objects %d levels deep: the limit is %d levels", field, d, MaxJSONDepth)
	}
	if !json.Valid(b) {
		return Validationf("%s is not valid JSON", field)
	}
	return nil
}

// jsonDepth returns the deepest nesting of arrays and objects in b, reading
// it as JSON text (strings skipped); it stops counting past MaxJSONDepth.
func jsonDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > MaxJSONDepth {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// CheckTime refuses a time outside years 1 to 9999, which JSON and the
// stores cannot keep.
func CheckTime(field string, t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return Validationf("%s %s is out of range: expected a time between years 1 and 9999", field, t.UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckName refuses a kind or queue name that could never be claimed as
// meant: names are letters, digits and the punctuation . _ - : / (so
// "email.send", "billing/eu-1", "v2:resize"), never blank, never with a
// space or a control character. field is "kind" or "queue".
func CheckName(field, name string) error {
	if err := CheckText(field, name); err != nil {
		return err
	}
	if strings.TrimSpace(name) == "" {
		return Validationf("%s %q is blank: name it with letters, digits and . _ - : /", field, name)
	}
	for _, r := range name {
		if !nameRune(r) {
			return Validationf("%s %q contains %q: a %s is letters, digits and . _ - : / (no spaces or control characters)", field, name, r, field)
		}
	}
	return nil
}

func nameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-:/", r)
}

// firstErr returns the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckTexts checks named string inputs given as name, value pairs, in
// order, with [CheckText].
func CheckTexts(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if err := CheckText(fields[i], fields[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// cleanText makes free text (a reason, an error message) storable: invalid
// UTF-8 and NUL bytes become U+FFFD. A handler's failure is recorded rather
// than refused for the bytes of its message.
func cleanText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// inputProblem is the message of an input check's error, for a rejection
// that adds the job and operation.
func inputProblem(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Msg
	}
	return err.Error()
}

// describe names the i-th element of a list input, as "depends_on[2]".
func describe(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }
