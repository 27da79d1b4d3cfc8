package stint

import (
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
)

// CheckKinds returns an error naming the first kind the store would refuse
// (lifecycle.CheckName), with the store's message: a program that takes
// kinds from its input (flags, a config file) checks them before it gives
// them to [Mux.Handle], which panics on them.
func CheckKinds(kinds ...string) error {
	for _, k := range kinds {
		if err := lifecycle.CheckName("kind", k); err != nil {
			return fmt.Errorf("stint: %w", err)
		}
	}
	return nil
}
