package bench

import (
	"runtime/metrics"
	"sync"
	"time"
)

// Memory is the process's peak memory during a run, the producer, the pool
// and (on SQLite) the database engine together.
type Memory struct {
	// PeakHeapBytes is the most memory live and unswept heap objects took,
	// sampled every 10ms.
	PeakHeapBytes uint64 `json:"peak_heap_bytes"`
	// PeakGoBytes is the most memory the Go runtime held from the OS
	// (heap, stacks, runtime structures), sampled every 10ms.
	PeakGoBytes uint64 `json:"peak_go_bytes"`
	// MaxRSSBytes is the process's peak resident set size, from the OS
	// (getrusage); 0 where unavailable. It includes what ran before the
	// benchmark in the same process.
	MaxRSSBytes uint64 `json:"max_rss_bytes"`
}

// memoryWatch samples the runtime's memory metrics until stopped.
type memoryWatch struct {
	quit chan struct{}
	wg   sync.WaitGroup
	peak Memory
}

var memorySamples = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes"}

func watchMemory() *memoryWatch {
	w := &memoryWatch{quit: make(chan struct{})}
	samples := make([]metrics.Sample, len(memorySamples))
	for i, name := range memorySamples {
		samples[i].Name = name
	}
	read := func() {
		metrics.Read(samples)
		w.peak.PeakHeapBytes = max(w.peak.PeakHeapBytes, samples[0].Value.Uint64())
		w.peak.PeakGoBytes = max(w.peak.PeakGoBytes, samples[1].Value.Uint64())
	}
	read()
	w.wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				read()
				return
			case <-tick.C:
				read()
			}
		}
	})
	return w
}

func (w *memoryWatch) stop() Memory {
	close(w.quit)
	w.wg.Wait()
	w.peak.MaxRSSBytes = maxRSS()
	return w.peak
}
