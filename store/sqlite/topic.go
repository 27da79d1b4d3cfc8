package sqlite

import (
	"database/sql/driver"

	"modernc.org/sqlite"

	"github.com/stint-dev/stint/lifecycle"
)

// SQLite has no regular expressions, so the claim query filters topics with
// lifecycle's own matcher, registered as
//
//	stint_topic_match(pattern, topic)  1 when topic matches the topic
//	                                   pattern (NATS-style: * one token,
//	                                   > the rest), else 0
func init() {
	if err := sqlite.RegisterDeterministicScalarFunction("stint_topic_match", 2, topicMatch); err != nil {
		panic(err)
	}
}

func topicMatch(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	p, _ := textArg(args[0])
	topic, _ := textArg(args[1])
	if lifecycle.MatchTopic(p, topic) {
		return int64(1), nil
	}
	return int64(0), nil
}
