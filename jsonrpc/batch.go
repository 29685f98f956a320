package jsonrpc

import "github.com/porticohq/portico"

// DecodeBody parses a request body into its calls, as Decode does, and
// holds a batch to maxBatch calls: what every server checks of a body
// before it runs any of it. The error is the body's answer (ErrorFor maps
// it).
func DecodeBody(body []byte, maxBatch int) (calls []Call, batch bool, err error) {
	calls, batch, derr := Decode(body)
	if derr != nil {
		return nil, false, derr
	}
	if batch && len(calls) > maxBatch {
		return nil, false, &portico.LimitError{Limit: portico.LimitBatch, Max: int64(maxBatch), Got: int64(len(calls))}
	}
	return calls, batch, nil
}

// AppendAnswers appends the response to a body's calls, once each call
// has its outcome: a single call's answer, or a batch's answers in the
// order of its calls, without those of its notifications (a call that
// failed to decode is answered even without an id: its id is unknown).
// answer appends call i's response. answered is false when nothing is to
// be sent (the body was notifications only: HTTP 204); out is then dst.
func AppendAnswers(dst []byte, calls []Call, batch bool, answer func(dst []byte, i int) []byte) (out []byte, answered bool) {
	if !batch {
		if c := &calls[0]; c.Err == nil && c.IsNotification() {
			return dst, false
		}
		return answer(dst, 0), true
	}
	start := len(dst)
	dst = append(dst, '[')
	for i := range calls {
		if c := &calls[i]; c.Err == nil && c.IsNotification() {
			continue
		}
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst = answer(dst, i)
	}
	if len(dst) == start+1 {
		return dst[:start], false
	}
	return append(dst, ']'), true
}
