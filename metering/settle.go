package metering

// Settled is what metering needs to know of a charged call once it is
// answered, to say what of its price it gives back (Unspent).
type Settled struct {
	// Failed says the call failed through our fault or the node's, not
	// the caller's (no node, a dead or slow one, an answer withheld for a
	// bound of ours, an internal error). A node's JSON-RPC error is an
	// answer and stays charged; so does a call whose client went away.
	Failed bool
	// Kept is the part of the price a verification's node calls used: it
	// stays charged even when the call failed.
	Kept int64
	// Hit says the answer came from cache; HitDiscount is the share of
	// the price, in percent, a hit gives back (0 charges hits like
	// misses).
	Hit         bool
	HitDiscount int
	// Partial is what the network gave back of a log query priced by its
	// range that failed part way: the price of the part no node answered
	// (LogPrice.Unanswered).
	Partial int64
}

// Unspent is what of a call's price it gives back: a failed call all of
// it but what its verification kept, a cache hit its discount, a log
// query that failed part way the part no node answered.
func Unspent(price int64, s Settled) int64 {
	switch {
	case s.Failed:
		return max(price-s.Kept, 0)
	case s.Hit && s.HitDiscount > 0:
		return price * int64(s.HitDiscount) / 100
	case s.Partial > 0:
		return min(s.Partial, price)
	}
	return 0
}
