package lifecycle

// Op is a lifecycle operation: the verb of a [Command].
type Op string

// The operations of the transition table.
const (
	OpEnqueue     Op = "enqueue"
	OpPromote     Op = "promote"
	OpUnblock     Op = "unblock"
	OpClaim       Op = "claim"
	OpStart       Op = "start"
	OpHeartbeat   Op = "heartbeat"
	OpCheckpoint  Op = "checkpoint"
	OpComplete    Op = "complete"
	OpFail        Op = "fail"
	OpHalt        Op = "halt"
	OpStall       Op = "stall"
	OpRequeue     Op = "requeue"
	OpDeadLetter  Op = "dead_letter"
	OpCancel      Op = "cancel"
	OpCancelHard  Op = "cancel_hard"
	OpAckCancel   Op = "ack_cancel"
	OpForceCancel Op = "force_cancel"
	OpTimeOut     Op = "time_out"
	// OpStep records a completed step of a running job (steps.go).
	OpStep Op = "step"
	// OpSuspend hands the lease back until a wake time: a durable sleep or
	// wait that spends no attempt (steps.go).
	OpSuspend Op = "suspend"
	// OpWake makes a suspended job claimable before its wake time: the
	// signal it waits for came, or the child job it awaits ended.
	OpWake Op = "wake"
)

// Actor is who performs an operation.
type Actor string

// The actors of the transition table.
const (
	// ActorClient is a producer or an operator (enqueue, cancel).
	ActorClient Actor = "client"
	// ActorOwner is the worker that holds the job's lease.
	ActorOwner Actor = "owner"
	// ActorSystem is a maintenance service (scheduler, reaper, timeouts).
	ActorSystem Actor = "system"
)

// EventType is the canonical type of an audit event.
type EventType string

// The canonical event types.
const (
	EventEnqueued        EventType = "enqueued"
	EventDenied          EventType = "denied"
	EventPromoted        EventType = "promoted"
	EventUnblocked       EventType = "unblocked"
	EventClaimed         EventType = "claimed"
	EventStarted         EventType = "started"
	EventHeartbeat       EventType = "heartbeat"
	EventCheckpointed    EventType = "checkpointed"
	EventSucceeded       EventType = "succeeded"
	EventFailed          EventType = "failed"
	EventRetryScheduled  EventType = "retry_scheduled"
	EventStalled         EventType = "stalled"
	EventRequeued        EventType = "requeued"
	EventDeadLettered    EventType = "dead_lettered"
	EventCancelRequested EventType = "cancel_requested"
	EventCancelled       EventType = "cancelled"
	EventTimedOut        EventType = "timed_out"
	EventHalted          EventType = "halted"
	EventStepRecorded    EventType = "step_recorded"
	EventSuspended       EventType = "suspended"
	EventWoken           EventType = "woken"
)
