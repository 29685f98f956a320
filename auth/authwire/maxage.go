package authwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// MaxAge is extraLoginOptions.max_age, in seconds. The JavaScript SDK's
// type is `string | number` and the Swift SDK sends a string: both decode;
// it encodes as a string.
type MaxAge string

// UnmarshalJSON accepts a string, a non-negative integer or null.
func (m *MaxAge) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*m = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*m = MaxAge(s)
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 63)
	if err != nil {
		return errors.New("max_age: not a string or a whole number of seconds")
	}
	*m = MaxAge(strconv.FormatUint(n, 10))
	return nil
}
