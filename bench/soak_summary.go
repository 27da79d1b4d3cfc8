package bench

// summarize compares the run's thirds, each interval counted in the third
// that holds its midpoint.
func summarize(rep SoakReport) SoakSummary {
	var s SoakSummary
	var first, held, after thirdRate
	for i, iv := range rep.Intervals {
		mid := (iv.Start + iv.End) / 2
		switch {
		case mid < rep.HeldFrom:
			first.add(iv)
		case mid < rep.HeldUntil:
			held.add(iv)
			s.HeldP99MS = max(s.HeldP99MS, iv.PickupP99MS)
		case mid <= rep.HeldUntil+soakAfterSpan:
			after.add(iv)
		}
		dead, bytes := iv.Storage.DeadTuples(), iv.Storage.Bytes()
		if i == 0 {
			s.DeadTuplesFirst, s.BytesFirst = dead, bytes
		}
		s.DeadTuplesMax, s.BytesMax = max(s.DeadTuplesMax, dead), max(s.BytesMax, bytes)
		s.Backlog += iv.Enqueued - iv.Done
	}
	s.FirstPerSec, s.HeldPerSec, s.AfterPerSec = first.perSec(), held.perSec(), after.perSec()
	if s.FirstPerSec > 0 {
		s.HeldRatio, s.AfterRatio = s.HeldPerSec/s.FirstPerSec, s.AfterPerSec/s.FirstPerSec
	}
	s.HeldMet = held.seconds > 0 && s.HeldRatio >= soakHeldRatio && s.HeldP99MS < soakHeldP99MS
	s.AfterMet = after.seconds > 0 && s.AfterRatio >= soakAfterRatio
	s.Backlog = max(0, s.Backlog)
	return s
}

// thirdRate accumulates the jobs done and the time of some intervals.
type thirdRate struct {
	done    int
	seconds float64
}

func (t *thirdRate) add(iv SoakInterval) {
	t.done += iv.Done
	t.seconds += iv.End - iv.Start
}

func (t thirdRate) perSec() float64 {
	if t.seconds == 0 {
		return 0
	}
	return float64(t.done) / t.seconds
}
