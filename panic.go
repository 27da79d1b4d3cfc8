package stint

import (
	"context"
	"fmt"
	"runtime/debug"
)

// maxStack bounds the stack recorded with a panic, so a deep recursion does
// not make a megabyte error message.
const maxStack = 16 << 10

// PanicError is the error of an attempt whose handler panicked: the value it
// panicked with and the goroutine's stack. The attempt fails (retried while
// attempts remain) with code "panic" and this error's text as the message.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns the panic value and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// callSafely runs h on j and turns a panic into a *PanicError.
func callSafely(ctx context.Context, h Handler, j *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			if len(stack) > maxStack {
				stack = append(stack[:maxStack:maxStack], "\n... (stack truncated)"...)
			}
			err = &PanicError{Value: r, Stack: stack}
		}
	}()
	return h.Work(ctx, j)
}
