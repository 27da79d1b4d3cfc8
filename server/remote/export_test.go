package remote

// PendingBeats is how many heartbeats wait for the next batch.
func PendingBeats(s *Store) int {
	s.beats.mu.Lock()
	defer s.beats.mu.Unlock()
	return len(s.beats.pending)
}
