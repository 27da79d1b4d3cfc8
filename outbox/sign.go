package outbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com), and the
// Idempotency-Key header for receivers that dedupe by it.
const (
	HeaderID             = "webhook-id"
	HeaderTimestamp      = "webhook-timestamp"
	HeaderSignature      = "webhook-signature"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Sign returns the webhook-signature value of a message: "v1," and the
// base64 HMAC-SHA256, keyed by the secret, of "<id>.<timestamp>.<body>". A
// secret written "whsec_<base64>" (the Standard Webhooks form) is keyed by
// its decoded bytes; any other secret by its bytes as written.
func Sign(secret, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key(secret))
	mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify reports whether header (a webhook-signature value, possibly several
// space-separated signatures) holds a valid signature of the message.
// Receivers also check that the timestamp is recent, to refuse replays.
func Verify(secret, id string, ts time.Time, body []byte, header string) bool {
	want := Sign(secret, id, ts, body)
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

func key(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return b
		}
	}
	return []byte(secret)
}
